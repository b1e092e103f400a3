"""The layers contract (pyproject.toml, checked by lint-imports in scripts/test.sh) holds for
the code and fails on a planted upward or sideways import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import memlab

ROOT = Path(memlab.__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(
    not LINT_IMPORTS.exists(), reason="import-linter is in the dev extra"
)


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports over the memlab package under ``tree``, with the repository's contract."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package and its contract, to plant imports in."""
    copy = tmp_path_factory.mktemp("layers")
    shutil.copytree(ROOT / "memlab", copy / "memlab", ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def test_the_code_keeps_the_contract(tree: Path) -> None:
    done = _lint(tree)
    assert done.returncode == 0, done.stdout
    assert "Contracts: 8 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        # Upward: the pipeline importing the run directory code.
        (
            "core/pipeline/config.py",
            "import memlab.runs.run",
            "memlab.core is not allowed to import memlab.runs",
        ),
        # Sideways: a backend reading datasets (the simulated model lives above both).
        (
            "backends/caching/cache.py",
            "from memlab.datasets import models",
            "memlab.backends is not allowed to import memlab.datasets",
        ),
        # Upward inside a package split by job: a base helper importing the updater.
        (
            "core/base/files.py",
            "import memlab.core.pipeline.updater",
            "memlab.core.base is not allowed to import memlab.core.pipeline",
        ),
        # Sideways inside one: the local backend reaching for the remote one's retries.
        (
            "backends/local/llama_local.py",
            "from memlab.backends.remote import retry",
            "memlab.backends.local is not allowed to import memlab.backends.remote",
        ),
        # A cycle between two modules of one package.
        ("sweeps/plan.py", "from memlab.sweeps import driver", "No cycles are allowed in "
         "memlab.sweeps"),
    ],
)  # fmt: skip
def test_a_planted_import_breaks_the_contract(
    tree: Path, module: str, planted: str, broken: str
) -> None:
    path = tree / "memlab" / module
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(f"{original}\n{planted}  # planted\n", encoding="utf-8")
        done = _lint(tree)
    finally:
        path.write_text(original, encoding="utf-8")
    assert done.returncode == 1
    assert broken in " ".join(done.stdout.split()), done.stdout
