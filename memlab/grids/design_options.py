"""A memory design's own options as lane settings: ``tiered: {...}``, ``raw_turns: {...}``.

A design declares the lane key of its options and their pydantic model
(:attr:`memlab.memory.design.MemoryDesign.options`, ``options_model``). The tiered design's
key is a lane field of its own (``LaneConfig.tiered``, kept as it was so that its lanes keep
their ids); any other design's options are gathered from their key into
``LaneConfig.design_options`` when a lane is built and written back under that key, only
the options that differ from the defaults, so a lane at the defaults is written as if the
design had no options. One rule for both: a lane may set the options of its own design only.

A lane naming a design that is not registered (its plugin uninstalled) keeps the mappings
under keys memlab does not know as that design's options, unchecked, so that a run replayed
with the plugin stays readable; a grid is checked when it is resolved
(:func:`memlab.sweeps.grid_check.check_grid` refuses the unknown design).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter

from memlab.memory.designs import DEFAULT_DESIGN, MEMORY_DESIGNS, options_owner

__all__ = [
    "DESIGN_OPTIONS_FIELD",
    "gather_design_options",
    "misplaced_options",
    "options_check",
    "options_keys",
    "options_model",
    "valid_design_options",
]

DESIGN_OPTIONS_FIELD = "design_options"
"""The lane field that holds the options of designs other than the built-in tiered one."""


def options_model(key: str) -> type[BaseModel] | None:
    """The options model of the registered design whose options key is ``key``."""
    owner = options_owner(key)
    return None if owner is None else MEMORY_DESIGNS[owner].options_model


def options_keys() -> tuple[str, ...]:
    """The options keys of the registered designs that declare an options model."""
    keys = (d.options for d in MEMORY_DESIGNS.values() if d.options_model is not None)
    return tuple(k for k in keys if k is not None)


def options_check(
    key: str, memories: Iterable[str]
) -> tuple[TypeAdapter[Any] | None, tuple[str, ...]] | None:
    """How a grid checks the value of ``key``, a key that is no lane field, given the
    designs its lanes name (``memories``): a registered design's options model (and its
    keys); ``(None, ())`` when a lane names a design that is not registered (its options
    cannot be checked; the design is refused when the grid is resolved); ``None``: an
    unknown key."""
    model = options_model(key)
    if model is not None:
        return _adapter(model), tuple(model.model_fields)
    if any(name not in MEMORY_DESIGNS for name in memories):
        return None, ()
    return None


@functools.cache
def _adapter(model: type[BaseModel]) -> TypeAdapter[Any]:
    return TypeAdapter(model)


def gather_design_options(data: Any, fields: Collection[str]) -> Any:
    """A lane's raw settings with each design's options moved under
    :data:`DESIGN_OPTIONS_FIELD` (``fields``: the lane's own fields, never moved)."""
    if not isinstance(data, Mapping):
        return data
    unknown_design = str(data.get("memory", DEFAULT_DESIGN)) not in MEMORY_DESIGNS
    found = {
        key: value
        for key, value in data.items()
        if key not in fields
        and (options_owner(str(key)) is not None or (unknown_design and isinstance(value, Mapping)))
    }
    if not found:
        return data
    given = data.get(DESIGN_OPTIONS_FIELD)
    kept = {k: v for k, v in data.items() if k not in found}
    return {
        **kept,
        DESIGN_OPTIONS_FIELD: {**(given if isinstance(given, Mapping) else {}), **found},
    }


def valid_design_options(options: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each design's options validated by its model, as the values that differ from the
    defaults (options of an unregistered design are kept as given)."""
    valid: dict[str, dict[str, Any]] = {}
    for key, value in options.items():
        owner = options_owner(key)
        if owner is not None:
            valid[key] = MEMORY_DESIGNS[owner].changed_options(value)
        elif isinstance(value, Mapping):
            valid[key] = dict(value)
        else:
            raise ValueError(f"{key}: a design's options are a mapping of keys")
    return valid


def misplaced_options(memory: str, options: Mapping[str, Mapping[str, Any]]) -> tuple[str, str]:
    """``(key, problem)`` for options a lane of ``memory`` sets that are another design's
    (``("", "")`` when there are none; a design that is not registered is not judged)."""
    design = MEMORY_DESIGNS.get(memory)
    if design is None:
        return "", ""
    for key, changed in options.items():
        if changed and design.options != key:
            owner = options_owner(key) or key
            return key, (
                f"{key} options apply to memory: {owner} only (this lane replays {memory}); "
                f"set memory: {owner}, or remove the {key} key"
            )
    return "", ""
