"""Grid and lane settings: a boolean is never a number, and every size that scales a replay's
work or memory has an upper bound. The numeric settings are found by walking the models, so
a number added later is checked too."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from memlab.core.jsondoc.contract import SchemaBounds
from memlab.grids.grid import ForkSpec, Grid, GridError
from memlab.grids.lane import LaneConfig
from memlab.grids.qa_spec import QASpec
from memlab.memory.tiers.options import TieredOptions


def _numbers(model: type[BaseModel], path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The path of every int or float field of ``model`` and of the models it nests."""
    for name, info in model.model_fields.items():
        kinds = (
            typing.get_args(info.annotation)
            if isinstance(info.annotation, types.UnionType)
            else (info.annotation,)
        )
        for kind in kinds:
            if kind in (int, float):
                yield (*path, name)
            elif isinstance(kind, type) and issubclass(kind, BaseModel):
                yield from _numbers(kind, (*path, name))


def _grid(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A grid mapping that sets ``path`` (as the grid nests it) to ``value``."""
    leaf: Any = value
    for key in reversed(path):
        leaf = {key: leaf}
    head = path[0]
    if head in LaneConfig.model_fields:
        base = {"memory": "tiered"} if head == "tiered" else {}
        if head == "schema_bounds":
            base = {"output_mode": "json_schema"}
        return {"name": "g", "base": {**base, **leaf}}
    if head == "qa":
        return {"name": "g", "qa": {"answer_backend": "sim:qa", **leaf["qa"]}}
    if head == "fork":
        return {"name": "g", "fork": {"run": "r", "lane": "l", **leaf["fork"]}}
    return {"name": "g", **leaf}


SETTINGS = sorted(
    {*_numbers(LaneConfig), *_numbers(Grid), *(("qa", *p) for p in _numbers(QASpec)),
     *(("fork", *p) for p in _numbers(ForkSpec))}
)  # fmt: skip


def test_the_walk_finds_the_nested_settings() -> None:
    found = set(SETTINGS)
    assert ("schema_bounds", "fact_chars") in found
    assert ("tiered", "working_tokens") in found
    assert ("qa", "seed") in found and ("fork", "at_session") in found
    assert ("fact_confidence_threshold",) in found and ("samples",) in found
    assert len(found) >= len(SchemaBounds.model_fields) + len(TieredOptions.model_fields) + 10


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize("path", SETTINGS, ids=".".join)
def test_a_boolean_is_never_a_number(path: tuple[str, ...], value: bool) -> None:
    with pytest.raises(GridError) as info:
        Grid.from_mapping(_grid(path, value))
    message = str(info.value)
    key = ".".join(("base", *path) if path[0] in LaneConfig.model_fields else path)
    assert f": {key}: " in message and f"(got {value})" in message, message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("key", "limit"),
    [
        ("working_tokens", 1_000_000),
        ("summary_tokens", 100_000),
        ("recall_k", 100),
        ("compress_min", 10_000),
        ("compress_after_days", 36_500),
    ],
)
def test_tiered_sizes_have_an_upper_bound(key: str, limit: int) -> None:
    Grid.from_mapping(_grid(("tiered", key), limit))  # the bound itself is a setting
    for value in (limit + 1, 10**30):
        with pytest.raises(GridError, match=f"base.tiered.{key}: .*less than or equal to"):
            Grid.from_mapping(_grid(("tiered", key), value))
