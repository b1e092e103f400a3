"""Every notebook runs with the demo's install plus the dev tools, without ``memlab[embeddings]``.

nbval checks the notebooks' outputs with every extra installed. Here they run again, outputs not
compared, with ``wordllama`` made unimportable (``tests/without_extras`` first on the kernel's
``PYTHONPATH``): no cell may fail, and the optional section says once that it skips.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SKIP_NOTE = "skipped: near-duplicates by embeddings need the optional extra"


@pytest.fixture(scope="module", autouse=True)
def kernel_environment() -> object:
    saved = {key: os.environ.get(key) for key in ("PYTHONPATH", "MEMLAB_CACHE_MODE")}
    shim = str(Path(__file__).parent / "without_extras")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [shim, saved["PYTHONPATH"]]))
    os.environ["MEMLAB_CACHE_MODE"] = "read_only"  # the committed replies, never the model
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_notebook_runs_without_the_embeddings_extra(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": path.parent}}
    )
    client.execute()  # raises CellExecutionError naming the cell that failed
    printed = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    uses_embeddings = "WordLlamaEmbedder" in path.read_text(encoding="utf-8")
    assert printed.count(SKIP_NOTE) == (1 if uses_embeddings else 0)
