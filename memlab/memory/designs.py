"""The memory designs a lane can replay, by name: the registry of the ``memory`` setting.

Built-ins: ``deerflow`` (DeerFlow's one document, one LLM update per queued update; the
default), ``tiered`` (:mod:`memlab.memory.tiers.tiered`) and ``procedural``
(:mod:`memlab.memory.procedural`: DeerFlow's facts and a graph of procedures). A plugin
adds a design with ``MEMORY_DESIGNS.register("name", MemoryDesign(...))``
(:mod:`memlab.plugins`); grids then name it in ``memory:``. What a design declares:
:mod:`memlab.memory.design`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memlab import plugins
from memlab.core.pipeline.storage import InMemoryStorage
from memlab.memory.design import DesignContext, MemoryDesign
from memlab.memory.procedural import PROCEDURAL
from memlab.memory.strategy import DeerFlowStrategy, MemoryStrategy
from memlab.memory.tiers.tiered import TIERED

__all__ = [
    "DEERFLOW",
    "DEFAULT_DESIGN",
    "MEMORY_DESIGNS",
    "UnknownDesignError",
    "memory_design",
    "options_owner",
    "scratch_files",
]

DEFAULT_DESIGN = "deerflow"
"""The design of a lane that names none (left out of every dump, so older lanes keep ids)."""


class UnknownDesignError(plugins.PluginError, ValueError):
    """A ``memory`` setting names no registered design."""


def _unknown(name: str, known: Sequence[str]) -> UnknownDesignError:
    return UnknownDesignError(
        f"unknown memory design {name!r}; known designs: {', '.join(known)} (or register one "
        "with MEMORY_DESIGNS.register in a memlab.plugins entry point)" + plugins.failure_hint()
    )


def _open_deerflow(context: DesignContext) -> MemoryStrategy:
    storage = InMemoryStorage(context.start, clock=context.clock)
    return DeerFlowStrategy(context.updater(storage), storage)


DEERFLOW = MemoryDesign(
    "DeerFlow's memory: one document, one LLM update per queued conversation",
    _open_deerflow,
    forks=True,
)
"""DeerFlow's design: the pipeline as it always ran (:class:`DeerFlowStrategy`)."""

MEMORY_DESIGNS: plugins.Registry[MemoryDesign] = plugins.declare(
    "memory_design",
    "memory design",
    unknown=_unknown,
    entry_type=MemoryDesign,
    builtins={DEFAULT_DESIGN: DEERFLOW, "tiered": TIERED, "procedural": PROCEDURAL},
)
"""Every memory design by the name a lane's ``memory`` setting gives."""


def memory_design(name: str) -> MemoryDesign:
    """The design called ``name``.

    Raises:
        UnknownDesignError: No design has that name (the message lists the known ones).
    """
    return MEMORY_DESIGNS.lookup(name)


def scratch_files(store_path: Path) -> tuple[Path, ...]:
    """Every file a replay of any design may write beside ``store_path`` (the store first)."""
    found = [store_path]
    for name in MEMORY_DESIGNS:
        found.extend(p for p in MEMORY_DESIGNS[name].scratch(store_path) if p not in found)
    return tuple(found)


def options_owner(key: str) -> str | None:
    """The registered design whose options a lane sets under ``key`` (``tiered`` ->
    ``tiered``), or ``None``."""
    for name in MEMORY_DESIGNS:
        design = MEMORY_DESIGNS[name]
        if design.options == key and design.options_model is not None:
            return name
    return None
