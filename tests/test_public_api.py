"""The public surface: a narrow top level, a curated core, and light imports."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import memlab
import memlab.compat
import memlab.core

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
    assert len(memlab.__all__) <= 40
    assert sorted(memlab.__all__) == sorted(memlab._EXPORTS)
    result = _run(
        """
        import sys
        import memlab
        assert "pandas" not in sys.modules
        for name in memlab.__all__:
            getattr(memlab, name)
        assert "pandas" in sys.modules  # sweep, Run, ... were imported on first use
        assert memlab.reporting.charts.tokens_chart  # subpackages as attributes
        """
    )
    assert result.returncode == 0, result.stderr


def test_unknown_top_level_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        memlab.nothing_here  # noqa: B018


FACES = ["memlab.core", "memlab.compat", "memlab.backends", "memlab.datasets", "memlab.matching",
         "memlab.memory", "memlab.scoring", "memlab.sweeps", "memlab.reporting", "memlab.grids",
         "memlab.runs", "memlab.postrun", "memlab.qa", "memlab.memory_qa"]  # fmt: skip


@pytest.mark.parametrize("name", FACES)
def test_every_listed_name_exists(name: str) -> None:
    module = importlib.import_module(name)
    names = module.__all__
    assert len(names) == len(set(names))
    assert [n for n in names if not hasattr(module, n)] == []
    lazy = getattr(module, "_EXPORTS", None)  # a face that imports its names on first use
    assert lazy is None or sorted(lazy) == sorted(names)


def test_the_old_eval_face_still_resolves_with_a_deprecation_warning() -> None:
    import memlab.eval

    with pytest.warns(DeprecationWarning, match=r"memlab\.eval\.rescore moved to memlab\.sweeps"):
        rescore = memlab.eval.rescore
    assert rescore is memlab.rescore


def test_core_is_curated_and_keeps_the_seed_names() -> None:
    assert len(memlab.core.__all__) <= 70
    assert set(SEED_CORE_NAMES) <= set(memlab.core.__all__)
    assert set(SEED_COMPAT_NAMES) == set(memlab.compat.__all__)
    assert not set(SEED_COMPAT_NAMES) & set(memlab.core.__all__)  # not pipeline names
