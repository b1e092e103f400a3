"""memlab.qa sits on the core, the backends and the datasets (and the registries of
memlab.plugins, below them all), never on the evaluation code."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

QA = Path(__file__).resolve().parents[1] / "memlab" / "qa"
ALLOWED = ("memlab.core", "memlab.backends", "memlab.datasets", "memlab.errors", "memlab.qa",
           "memlab._lazy", "memlab.plugins")  # fmt: skip


def _memlab_imports(path: Path) -> list[str]:
    modules: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules.append(node.module)
        elif isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
    return [m for m in modules if m == "memlab" or m.startswith("memlab.")]


def test_qa_modules_import_only_core_backends_and_datasets() -> None:
    files = sorted(QA.rglob("*.py"))
    assert files
    for path in files:
        for module in _memlab_imports(path):
            assert module.startswith(ALLOWED), f"{path.name} imports {module}"


def test_importing_qa_loads_no_evaluation_or_reporting_module() -> None:
    code = (
        "import sys, memlab.qa; "
        "print(sorted(m for m in sys.modules if m.startswith(('memlab.eval', 'memlab.reporting'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
