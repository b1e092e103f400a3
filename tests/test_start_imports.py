"""What starting memlab imports: `import memlab` and commands that do not need them load no
pandas, matplotlib, jsonschema or Dask (the CLI imports what a command needs when it runs).

Each case is a whole process run with ``python -X importtime``, whose report lists every module
the process imported; start times themselves are measured by benchmarks/start_bench.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import memlab
from memlab.core.jsondoc.contract import MINIMAL_VALID_UPDATE

SRC = Path(memlab.__file__).resolve().parents[1]
HEAVY = ("pandas", "matplotlib", "jsonschema", "distributed", "dask")


def _imported(args: list[str], cwd: Path) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The top-level packages a ``python -X importtime ARGS`` process imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )
    packages = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            packages.add(name.split(".")[0])
    return packages, done


def test_the_import_report_is_read() -> None:
    """The check below can fail: a process that imports pandas is seen doing so."""
    packages, done = _imported(["-c", "import pandas"], SRC)
    assert done.returncode == 0, done.stderr
    assert "pandas" in packages and "numpy" in packages


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["-c", "import memlab"], 0),
        (["-m", "memlab", "--help"], 0),
        (["-m", "memlab"], 2),  # no command: the help, exit 2
        (["-m", "memlab", "nope"], 2),  # an unknown command
        (["-m", "memlab", "run", "smoke", "--workers", "0"], 2),  # a bad argument
        (["-m", "memlab", "compare"], 2),  # a missing argument
        (["-m", "memlab", "validate", "reply.txt"], 0),
        (["-m", "memlab", "datasets", "stats", "smoke"], 0),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else str(value),
)
def test_starting_imports_nothing_heavy(args: list[str], code: int, tmp_path: Path) -> None:
    (tmp_path / "reply.txt").write_text(json.dumps(MINIMAL_VALID_UPDATE), encoding="utf-8")
    packages, done = _imported(args, tmp_path)
    assert done.returncode == code, done.stderr
    assert "memlab" in packages
    assert sorted(packages & set(HEAVY)) == []


@pytest.mark.parametrize("args", [["-c", "import memlab"], ["-m", "memlab", "--help"]], ids=str)
def test_help_reads_no_models(args: list[str], tmp_path: Path) -> None:
    """`--help` builds no data models: pydantic (a third of a second to import) stays out."""
    packages, done = _imported(args, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "memlab" in packages
    assert "pydantic" not in packages


def test_listing_violations_loads_jsonschema(tmp_path: Path) -> None:
    """A broken reply's violations are listed by jsonschema, imported then and only then."""
    broken = '{"user": {}, "history": {}, "newFacts": [{}], "factsToRemove": [1]}'
    (tmp_path / "broken.txt").write_text(broken, encoding="utf-8")
    packages, done = _imported(["-m", "memlab", "validate", "broken.txt"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "jsonschema" in packages
    assert sorted(packages & set(HEAVY) - {"jsonschema"}) == []
    assert "/factsToRemove/0 [type]: 1 is not of type 'string'" in done.stdout
