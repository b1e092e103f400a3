"""Memory QA is findable from one place: the face names the feature, the map lists its modules."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import memlab
import memlab.memory_qa
from memlab._lazy import face_exports

SRC = Path(memlab.__file__).resolve().parent
ARCHITECTURE = SRC.parent / "docs" / "architecture.md"
SECTION = "## Memory QA as one feature"


def _map_modules() -> list[str]:
    """The modules the table of docs/architecture.md names (paths under memlab/)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    table = section.split("| part |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|") for line in table.splitlines()[2:]]
    return [re.sub(r"`", "", row[2]).strip() for row in rows]


def _qa_modules() -> list[str]:
    """The feature's modules found by name: the package memlab.qa, every module named qa.py,
    qa_*.py, *_qa.py or judge_audit*.py, and the face."""
    found = [p for p in (SRC / "qa").glob("*.py") if p.name != "__init__.py"]
    found += [
        p
        for p in SRC.rglob("*.py")
        if p.name == "qa.py" or p.name.startswith(("qa_", "judge_audit")) or p.stem.endswith("_qa")
    ]
    found.append(SRC / "memory_qa" / "__init__.py")
    return sorted({p.relative_to(SRC).as_posix() for p in found})


def test_the_map_lists_every_qa_module_and_only_modules_that_exist() -> None:
    listed = _map_modules()
    assert len(listed) == len(set(listed))
    assert [m for m in _qa_modules() if m not in listed] == []
    assert [m for m in listed if not (SRC / m).is_file()] == []


def _exports() -> dict[str, str]:
    init = SRC / "memory_qa" / "__init__.py"
    return face_exports("memlab.memory_qa", init.read_text(encoding="utf-8"))


def test_the_map_lists_every_module_the_face_names() -> None:
    listed = {m.removesuffix(".py").removesuffix("/__init__").replace("/", ".") for m in
              _map_modules()}  # fmt: skip
    faced = {m.removeprefix("memlab.") for m in _exports().values()}
    assert faced - listed == set()


def test_every_name_of_the_face_comes_from_the_module_it_names() -> None:
    face = memlab.memory_qa
    exports = _exports()
    assert sorted(face.__all__) == sorted(exports)
    assert len(face.__all__) == len(set(face.__all__))
    for name, module in exports.items():
        value = getattr(face, name)
        assert value is getattr(importlib.import_module(module), name), name
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__ == module, f"{name} is defined in {value.__module__}"


def test_no_qa_module_name_repeats_in_another_package() -> None:
    # cli's modules are named after their commands (`memlab qa`, `memlab judge`).
    names = Counter(p.name for p in SRC.rglob("*.py") if p.name != "__init__.py")
    qa = [m for m in _qa_modules() if not m.startswith("cli/")]
    assert [m for m in qa if names[Path(m).name] > 1] == []


def test_importing_the_face_loads_no_part_of_the_feature() -> None:
    code = (
        "import sys, memlab.memory_qa; "
        "print(sorted(m for m in sys.modules if m.startswith('memlab.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = "['memlab._lazy', 'memlab._version', 'memlab.errors', 'memlab.memory_qa']"
    assert done.stdout.strip() == loaded
