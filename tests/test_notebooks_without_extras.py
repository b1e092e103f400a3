"""Every notebook passes nbval with the demo's install plus the dev tools, without
``memlab[embeddings]``.

``scripts/test.sh`` runs nbval with every extra installed. Here nbval runs again, in strict mode,
with ``wordllama`` made unimportable (``tests/without_extras`` first on the kernel's
``PYTHONPATH``), on copies of the notebooks whose optional section expects what that install
prints: the cell that builds the embedder says once that it skips, the cells after it print
nothing. Every other output is compared as committed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbval")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
SKIP_NOTE = "skipped: near-duplicates by embeddings need the optional extra"
SHIM = Path(__file__).parent / "without_extras"


def expect_without_embeddings(notebook: nbformat.NotebookNode) -> int:
    """Give the optional section the outputs of an install without the extra; return how many
    cells say that they skip."""
    notes = 0
    for cell in notebook.cells:
        if cell.cell_type != "code" or "duplicates is not None" not in cell.source:
            continue
        cell.outputs = []
        if "except EmbeddingsUnavailableError" in cell.source:
            note = {"name": "stdout", "output_type": "stream", "text": f"{SKIP_NOTE}\n"}
            cell.outputs = [nbformat.from_dict(note)]
            notes += 1
    return notes


def checkout_view(root: Path) -> Path:
    """``root`` made to look like the checkout to ``nbsetup.setup()`` (its ``pyproject.toml``
    marks the root): links to what the notebooks read, real directories for what they write
    (``runs/``, ``reports/``)."""
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    for name in ("pyproject.toml", "datasets", "memlab"):
        (root / name).symlink_to(ROOT / name)
    for name in ("nbsetup.py", "cache", "prompts"):
        (root / "notebooks" / name).symlink_to(ROOT / "notebooks" / name)
    return root


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_notebook_passes_nbval_without_the_embeddings_extra(path: Path, tmp_path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    uses_embeddings = "WordLlamaEmbedder" in path.read_text(encoding="utf-8")
    assert expect_without_embeddings(notebook) == (1 if uses_embeddings else 0)
    # The note's tail names how to install the extra: compared up to the common prefix.
    sanitize = tmp_path / "sanitize.cfg"
    sanitize.write_text(
        (ROOT / "notebooks" / "nbval_sanitize.cfg").read_text(encoding="utf-8")
        + f"\n[embeddings-note]\nregex: {SKIP_NOTE}.*\nreplace: <SKIPPED WITHOUT EMBEDDINGS>\n",
        encoding="utf-8",
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(SHIM), os.environ.get("PYTHONPATH")])),
        "MEMLAB_CACHE_MODE": "read_only",  # the committed replies, never the model
    }
    # In a view of the checkout of its own: its run and report directories stay apart from
    # the notebook's own run under nbval, which may run at the same time (pytest -n 2). A
    # short one: notebooks print lines that hold absolute paths, wrapped at 120 columns.
    with tempfile.TemporaryDirectory(prefix="memlab-nb-") as view:
        copy = checkout_view(Path(view)) / "notebooks" / f"_without_extras_{path.name}"
        nbformat.write(notebook, copy)
        command = [sys.executable, "-m", "pytest", str(copy), "--nbval", "--nbval-current-env"]
        command += ["--nbval-sanitize-with", str(sanitize), "-q", "-p", "no:cacheprovider"]
        result = subprocess.run(
            command, cwd=copy.parent, env=env, capture_output=True, text=True, timeout=900
        )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
