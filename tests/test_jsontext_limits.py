"""JSON depth limits and their reports: ``loads_json``, ``nesting_path``, ``JsonDepthError``,
``scan_json`` and ``canonical_hash``, each at and one past its bound.

Fast, so that ``scripts/mutation.py`` runs it for every mutant of ``memlab.core.base.jsontext``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict
from typing import Any

import pytest

from memlab.core.base.jsontext import (
    MAX_JSON_DEPTH,
    JsonDepthError,
    canonical_hash,
    copy_json,
    loads_json,
    nesting_path,
    scan_json,
)


def nested(levels: int, key: str | None = "a") -> Any:
    """``levels`` objects (or arrays when ``key`` is None) inside each other."""
    value: Any = {} if key is not None else []
    for _ in range(levels - 1):
        value = {key: value} if key is not None else [value]
    return value


class Tree(dict[str, Any]):
    """A dict subclass: depth checks take their general walk for it."""


class Row(list[Any]):
    """A list subclass."""


# ---------------------------------------------------------------------- depth errors


def test_a_too_deep_value_is_refused_with_its_path_in_one_sentence() -> None:
    text = json.dumps(nested(4))
    assert loads_json(text, max_depth=4) == nested(4)
    with pytest.raises(JsonDepthError) as info:
        loads_json(text, max_depth=3)
    error = info.value
    assert (error.path, error.limit, error.where) == (["a", "a", "a"], 3, "a.a.a")
    assert str(error) == (
        "JSON nested more than 3 levels deep; flatten the data (memlab accepts at most 3 "
        "levels of objects and arrays)"
    )
    assert isinstance(error, ValueError)
    assert loads_json(json.dumps(nested(MAX_JSON_DEPTH)).encode()) == nested(MAX_JSON_DEPTH)
    with pytest.raises(JsonDepthError, match="more than 100 levels"):
        loads_json(json.dumps(nested(MAX_JSON_DEPTH + 1)))


def test_text_too_deep_to_decode_is_a_depth_error_without_a_path() -> None:
    with pytest.raises(JsonDepthError) as info:
        loads_json("[" * 100_000 + "]" * 100_000, max_depth=7)
    assert (info.value.path, info.value.limit, info.value.where) == (None, 7, "")
    assert "more than 7 levels deep" in str(info.value)


def test_paths_show_keys_and_indexes_and_stay_short() -> None:
    value = {"sessions": [{"messages": [[{"x": 1}]]}]}
    assert nesting_path(value, 4) == ["sessions", 0, "messages", 0]
    assert JsonDepthError(["sessions", 0, "messages", 0], 4).where == "sessions[0].messages[0]"
    assert JsonDepthError([0, 1, "k"], 3).where == "[0][1].k"
    assert JsonDepthError(list("abcdef"), 6).where == "a.b.c.d.e.f"
    assert JsonDepthError(list("abcdefg"), 7).where == "a.b.c.d.e.f..."
    assert JsonDepthError(["k" * 120], 1).where == "k" * 120
    assert JsonDepthError(["k" * 121], 1).where == "k" * 117 + "..."
    assert JsonDepthError(["k" * 121, "b", "c", "d", "e", "f", "g"], 7).where == (
        "k" * 117 + "......"
    )


@pytest.mark.parametrize("limit", [1, 2, 3, 5])
def test_nesting_path_at_and_one_past_the_limit(limit: int) -> None:
    for key in ("a", None):
        assert nesting_path(nested(limit, key), limit) is None
        path = nesting_path(nested(limit + 1, key), limit)
        assert path == (["a"] * limit if key else [0] * limit)
    # Wide trees: one deep branch among flat ones.
    wide = [[1], [2, nested(limit - 1, None) if limit > 1 else 3], {"k": "v"}]
    assert nesting_path(wide, limit + 1) is None
    if limit > 1:
        assert nesting_path(wide, limit) == [1, 1, *[0] * (limit - 2)]


def test_a_zero_limit_refuses_any_container() -> None:
    assert nesting_path("text", 0) is None and nesting_path(7, 0) is None
    assert nesting_path([], 0) == [] and nesting_path({}, 0) == []
    with pytest.raises(JsonDepthError):
        loads_json("[]", max_depth=0)
    assert loads_json("1", max_depth=0) == 1


@pytest.mark.parametrize("limit", [1, 2, 4])
def test_subclasses_of_dict_and_list_count_as_containers(limit: int) -> None:
    def build(levels: int) -> Any:
        value: Any = Tree()
        for i in range(levels - 1):
            value = Row([value]) if i % 2 else Tree(k=value)
        return value

    assert nesting_path(build(limit), limit) is None
    assert nesting_path({"top": build(limit)}, limit + 1) is None
    path = nesting_path({"top": build(limit)}, limit)
    assert path is not None and len(path) == limit and path[0] == "top"
    assert nesting_path([1, "x", build(limit)], limit + 1) is None
    path = nesting_path([1, "x", build(limit)], limit)
    assert path is not None and len(path) == limit and path[0] == 2


# ---------------------------------------------------------------------- scan_json


def test_scan_json_bounds_the_depth_it_calls_plain() -> None:
    # The root is step 0: containers down to step 100 below it are plain.
    assert scan_json(nested(101)) == (True, None)
    assert scan_json(nested(102)) == (False, None)
    assert scan_json(nested(101, None)) == (True, None)
    assert scan_json(nested(102, None)) == (False, None)


def test_scan_json_finds_the_first_non_finite_number_anywhere() -> None:
    plain, found = scan_json({"a": [1, {"b": [0.5, float("nan")]}]})
    assert plain is True and found is not None and math.isnan(found)
    assert scan_json([[[-math.inf]]]) == (True, -math.inf)
    assert scan_json({"x": {"y": math.inf}}) == (True, math.inf)
    assert scan_json(math.inf) == (True, math.inf)
    assert scan_json(1.5) == (True, None)
    assert scan_json("s") == (True, None)
    assert scan_json(None) == (True, None)
    assert scan_json({"a": [1.5, 2.5], "b": {"c": [True, None, "x"]}}) == (True, None)


def test_scan_json_refuses_what_is_not_a_plain_tree_at_any_depth() -> None:
    assert scan_json((1, 2)) == (False, None)
    assert scan_json({"a": [{"b": (1,)}]}) == (False, None)
    assert scan_json({"a": [{"b": Tree()}]}) == (False, None)
    assert scan_json({"a": [Row()]}) == (False, None)
    assert scan_json({"a": {2: "x"}}) == (False, None)
    assert scan_json({"a": [object()]}) == (False, None)
    shared: list[Any] = [1]
    assert scan_json({"a": [shared], "b": [[shared]]}) == (False, None)
    assert scan_json([[], [], {}]) == (True, None)  # distinct empty containers


# ---------------------------------------------------------------------- hashes and copies


def test_canonical_hash_is_the_sha256_of_sorted_compact_utf8_json() -> None:
    text = '{"a":["é",1.5,null],"b":{"c":true}}'
    expected = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert canonical_hash({"b": {"c": True}, "a": ["é", 1.5, None]}) == expected


def test_copy_json_turns_what_json_would_into_json() -> None:
    assert copy_json({"a": {1: [("x", 2)]}, "b": (1,)}) == {"a": {"1": [["x", 2]]}, "b": [1]}
    original = {"a": [{"b": [1]}], "c": {"d": {}}}
    copied = copy_json(original)
    assert copied == original
    copied["a"][0]["b"].append(2)
    copied["c"]["d"]["e"] = 1
    assert original == {"a": [{"b": [1]}], "c": {"d": {}}}
    assert copy_json(OrderedDict(b=1, a=2)) == {"b": 1, "a": 2}
    with pytest.raises(TypeError):
        copy_json({"a": {1, 2}})
