"""The public surface: a narrow top level, a curated core, and light imports."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import memlab
import memlab.compat
import memlab.core
import memlab.postrun
from memlab._lazy import FaceError, face_exports

SRC = Path(memlab.__file__).resolve().parents[1]

# The seed's public names (SPEC §1) and where they live now.
SEED_CORE_NAMES = [
    "MemoryConfig",
    "ConversationContext",
    "MemoryUpdateQueue",
    "get_memory_queue",
    "reset_memory_queue",
    "MemoryUpdater",
    "update_memory_from_conversation",
    "MemoryMiddleware",
    "format_conversation_for_update",
    "format_memory_for_injection",
    "apply_updates",
    "filter_messages_for_memory",
]
SEED_COMPAT_NAMES = [
    "ThreadState",
    "SandboxState",
    "ThreadDataState",
    "ViewedImageData",
    "merge_artifacts",
    "merge_viewed_images",
]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )


def test_importing_the_core_loads_neither_pandas_nor_matplotlib() -> None:
    result = _run(
        """
        import sys
        import memlab.core
        # jsonschema too: its import alone takes most of a second; it loads when a reply
        # fails the fast contract check.
        heavy = [m for m in ("pandas", "matplotlib", "memlab.sweeps", "memlab.scoring",
                             "memlab.matching", "memlab.reporting", "jsonschema")
                 if m in sys.modules]
        assert not heavy, heavy
        """
    )
    assert result.returncode == 0, result.stderr


def test_top_level_names_are_few_and_resolve_lazily() -> None:
    assert len(memlab.__all__) <= 16  # the workflow verbs and the README's example
    result = _run(
        """
        import sys
        import memlab
        assert "pandas" not in sys.modules
        for name in memlab.__all__:
            getattr(memlab, name)
        assert "pandas" in sys.modules  # sweep, load_run, ... were imported on first use
        assert memlab.reporting.figures.charts.tokens_chart  # subpackages as attributes
        """
    )
    assert result.returncode == 0, result.stderr


def test_unknown_top_level_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        memlab.nothing_here  # noqa: B018


def _faces() -> list[str]:
    """Every package whose ``__init__`` is a lazy face, found in the source."""
    inits = sorted(SRC.joinpath("memlab").rglob("__init__.py"))
    return [
        ".".join(init.relative_to(SRC).parent.parts)
        for init in inits
        if "lazy_face(__name__)" in init.read_text()
    ]


FACES = _faces()


def test_the_faces_are_found() -> None:
    assert {"memlab", "memlab.core", "memlab.compat", "memlab.scoring", "memlab.sweeps"} <= set(
        FACES
    )


def _source(face: str) -> str:
    return SRC.joinpath(*face.split("."), "__init__.py").read_text()


@pytest.mark.parametrize("face", FACES)
def test_a_face_declares_each_name_once_and_every_name_resolves(face: str) -> None:
    declared = face_exports(face, _source(face))  # raises on a name declared twice
    assert declared, "a face with nothing to export is a plain package"
    module = importlib.import_module(face)
    assert module.__all__ == list(declared)
    for name, where in declared.items():
        assert getattr(module, name) is getattr(importlib.import_module(where), name), name
        # A submodule of that name would replace the name on the package once imported.
        assert importlib.util.find_spec(f"{face}.{name}") is None, name
    # The declaration is the only list: no literal __all__ or name table beside it, and the
    # lazy lookup runs only at run time (type checkers see the declared names and no more).
    body = ast.parse(_source(face)).body
    assigned = {
        target.id
        for node in body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    assert not assigned & {"__all__", "_EXPORTS", "__getattr__"}
    (block,) = [n for n in body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]
    assert "lazy_face(__name__)" in ast.unparse(block.orelse)


@pytest.mark.parametrize("face", FACES)
def test_importing_a_face_imports_none_of_its_modules(face: str) -> None:
    declared = set(face_exports(face, _source(face)).values()) - {"memlab.errors"}
    result = _run(
        f"""
        import sys
        import {face}
        loaded = sorted(set({sorted(declared)!r}) & set(sys.modules))
        assert not loaded, loaded
        """
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("declaration", "problem"),
    [
        (
            "from memlab.core.pipeline.config import MemoryConfig",
            "'MemoryConfig' is not re-exported",
        ),
        (
            "from memlab.core.pipeline.config import MemoryConfig as Config",
            "'MemoryConfig' is not re",
        ),
        (
            "from memlab.core.pipeline.config import MemoryConfig as MemoryConfig\n"
            "    from memlab.core.pipeline.storage import MemoryConfig as MemoryConfig",
            "'MemoryConfig' is declared twice",
        ),
        ("import memlab.core.pipeline.config", "only 'from ... import' lines belong here"),
    ],
)
def test_a_face_declared_otherwise_is_refused_naming_the_line(
    declaration: str, problem: str
) -> None:
    source = f"from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    {declaration}\n"
    with pytest.raises(FaceError, match=r"memlab\.example \(__init__\.py line [45]\): ") as err:
        face_exports("memlab.example", source)
    assert problem in str(err.value)
    assert "from MODULE import NAME as NAME" in str(err.value)  # how to write it


def test_relative_declarations_name_the_package_module() -> None:
    source = (
        "import typing\nif typing.TYPE_CHECKING:\n    from .metrics import summarize as summarize\n"
    )
    assert face_exports("memlab.scoring", source) == {"summarize": "memlab.scoring.metrics"}


def test_star_import_and_dir_follow_the_declaration() -> None:
    result = _run(
        """
        from memlab.scoring import *
        import memlab.scoring
        assert callable(summarize) and StatOptions
        assert set(memlab.scoring.__all__) <= set(dir(memlab.scoring))
        """
    )
    assert result.returncode == 0, result.stderr


def test_the_old_eval_face_still_resolves_with_a_deprecation_warning() -> None:
    import memlab.eval

    with pytest.warns(DeprecationWarning, match=r"memlab\.eval\.rescore moved to memlab\.postrun"):
        rescore = memlab.eval.rescore
    assert rescore is memlab.postrun.rescore


@pytest.mark.parametrize("name", sorted(importlib.import_module("memlab.eval")._MOVED))
def test_every_old_eval_name_resolves(name: str) -> None:
    import memlab.eval

    with pytest.warns(DeprecationWarning, match=f"memlab\\.eval\\.{name} moved to "):
        assert getattr(memlab.eval, name) is not None


def test_core_is_curated_and_keeps_the_seed_names() -> None:
    assert len(memlab.core.__all__) <= 70
    assert set(SEED_CORE_NAMES) <= set(memlab.core.__all__)
    assert set(SEED_COMPAT_NAMES) == set(memlab.compat.__all__)
    assert not set(SEED_COMPAT_NAMES) & set(memlab.core.__all__)  # not pipeline names
