"""``core.jsontext`` against references that share no code with it.

``dumps_indented`` must write exactly what ``json.dumps(value, indent=..., ensure_ascii=False)``
writes, and the depth checks (``nesting_path``, ``loads_json``) must agree with a plain
recursive count of nesting levels, on generated values: the fast paths (flat containers,
remembered texts, the bracket count of a text) must never change an answer.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlab.core.base.jsontext import JsonDepthError, dumps_indented, loads_json, nesting_path


class Tree(dict):  # type: ignore[type-arg]
    """A dict subclass: counted as a container, written by the json module's own path."""


class Row(list):  # type: ignore[type-arg]
    """A list subclass."""


def depth(value: Any) -> int:
    """Nesting levels of objects and arrays: 0 for a scalar, 1 for ``[]`` or ``{}``."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


_TEXT = st.text(alphabet=st.sampled_from('aZ é中"\\\n\t€😀'), max_size=6)
_FLOAT = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1e300])
_SCALAR = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | _FLOAT | _TEXT
_KEY = _TEXT | st.integers(-5, 5) | st.booleans() | st.none() | st.floats(-2, 2)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.lists(children, max_size=4)
        | st.dictionaries(_KEY, children, max_size=4)
        | st.dictionaries(_TEXT, children, max_size=4)
        | st.lists(children, max_size=3).map(Row)
        | st.dictionaries(_TEXT, children, max_size=3).map(Tree)
    )


VALUES = st.recursive(_SCALAR, _containers, max_leaves=25)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES, indent=st.sampled_from([0, 1, 2, 4, "\t", None]))
def test_dumps_indented_writes_what_json_dumps_writes(value: Any, indent: Any) -> None:
    expected = json.dumps(value, indent=indent, ensure_ascii=False)
    assert dumps_indented(value, indent) == expected
    # The second time, flat containers' texts come from the writer's memory.
    assert dumps_indented(value, indent) == expected


@pytest.mark.parametrize(
    "value",
    [
        {"a": float("nan"), "b": float("inf"), "c": float("-inf"), "d": -0.0, "e": 0.0},
        [float("inf"), [float("-inf")], {"x": [float("nan"), 2.5]}],
        {"1": True, "2": False, "3": None, "4": [True, False, None]},
        {"naïve": "日本語 €", "nested": {"ключ": ["ü", {"k": "é"}]}},
        {1: "int key", False: "bool key", None: "none key", 2.5: "float key"},
        [[0.0], [-0.0], [0.0, -0.0], {"z": -0.0}, {"z": 0.0}],
        [[], {}, [[]], [{}], {"a": {}}, {"a": []}],
    ],
)
@pytest.mark.parametrize("indent", [0, 2, 3])
def test_dumps_indented_edges_match_json_dumps(value: Any, indent: int) -> None:
    expected = json.dumps(value, indent=indent, ensure_ascii=False)
    for _ in range(2):
        assert dumps_indented(value, indent) == expected


def test_dumps_indented_spells_non_finite_floats_as_json_does() -> None:
    for number, text in [(math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity")]:
        assert dumps_indented([number], 2) == f"[\n  {text}\n]"
        assert dumps_indented({"k": [1, {"v": number}]}, 1) == json.dumps(
            {"k": [1, {"v": number}]}, indent=1
        )
    assert dumps_indented([0.5, 1.0, 1e-7], 2) == "[\n  0.5,\n  1.0,\n  1e-07\n]"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES, limit=st.integers(0, 6))
def test_nesting_path_agrees_with_a_recursive_count(value: Any, limit: int) -> None:
    path = nesting_path(value, limit)
    assert (path is None) == (depth(value) <= limit)
    if path is not None:
        # The path leads to a container at level limit + 1.
        node = value
        for step in path:
            node = node[step]
        assert len(path) == limit and isinstance(node, dict | list) and depth(node) >= 1


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("limit", [1, 2, 5, 100])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_loads_json_at_and_past_the_limit(limit: int, as_bytes: bool) -> None:
    def text(s: str) -> str | bytes:
        return s.encode() if as_bytes else s

    assert depth(loads_json(text(_nested(limit)), max_depth=limit)) == limit
    with pytest.raises(JsonDepthError) as caught:
        loads_json(text(_nested(limit + 1)), max_depth=limit)
    assert caught.value.limit == limit and caught.value.path == [0] * limit
    # More brackets than the limit, none nested past it: the bracket count alone cannot refuse.
    if limit >= 2:
        shallow = "[" + ",".join(["{}", "[]"] * limit) + "]"
        assert loads_json(text(shallow), max_depth=limit) == json.loads(shallow)
    wide = '{"a": [' + ",".join(["[1]"] * limit) + "]}"
    if depth(json.loads(wide)) <= limit:
        assert loads_json(text(wide), max_depth=limit) == json.loads(wide)
    else:
        with pytest.raises(JsonDepthError):
            loads_json(text(wide), max_depth=limit)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES, limit=st.integers(1, 6))
def test_loads_json_refuses_exactly_what_is_too_deep(value: Any, limit: int) -> None:
    text = json.dumps(value)
    decoded = json.loads(text)
    if depth(decoded) <= limit:
        assert json.dumps(loads_json(text, max_depth=limit)) == text
    else:
        with pytest.raises(JsonDepthError):
            loads_json(text, max_depth=limit)


def test_depth_error_paths_keep_keys_that_start_like_the_separator() -> None:
    error = JsonDepthError(["Xkey", 0, ".dot"], 3)
    assert error.where == "Xkey[0]..dot"
    assert JsonDepthError(["XX.XX", 1], 2).where == "XX.XX[1]"


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf, -0.0, 1e-7, 2.5])
def test_floats_outside_flat_containers_match_json_dumps(number: float) -> None:
    # A scalar on its own, or beside a container, is written one value at a time (not by the
    # C encoder that writes flat containers).
    for value in (number, [number, [1]], {"a": number, "b": {"c": 1}}, [[{}], number]):
        assert dumps_indented(value, 2) == json.dumps(value, indent=2, ensure_ascii=False)
