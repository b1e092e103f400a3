"""Fast JSON copies and indented text must equal what the json module gives, byte for byte."""

from __future__ import annotations

import enum
import json
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.core.base import jsontext
from memlab.core.base.jsontext import copy_json, dumps_indented, scan_json


class Level(enum.IntEnum):
    HIGH = 3


class Colour(enum.StrEnum):
    RED = "red"


FACT = {
    "id": "fact_0001",
    "content": 'Prefers tea — «Earl Grey» 😀\n\t"quoted" \\ \u2028 \x7f \x00',
    "category": "preference",
    "confidence": 0.85,
    "createdAt": "2025-03-03T09:00:00Z",
    "source": None,
}

CASES: list[tuple[str, Any]] = [
    ("empty dict", {}),
    ("empty list", []),
    ("scalar str", "text"),
    ("scalar int", 7),
    ("scalar float", 1e-07),
    ("scalar bool", True),
    ("scalar none", None),
    ("flat fact", FACT),
    (
        "memory-like",
        {"version": "1.0", "user": {"a": {"summary": "", "updatedAt": ""}}, "facts": [FACT, FACT]},
    ),
    ("nested empties", {"a": [], "b": {}, "c": [[], {}, [[]]], "d": [{"e": {}}]}),
    ("flat list", [1, 2.5, "x", None, True, False]),
    ("mixed list", [1, [2, [3, {"k": [4]}]], {"z": None}]),
    ("special floats", {"nan": float("nan"), "inf": float("inf"), "ninf": -float("inf")}),
    ("zeros", [{"z": 0.0}, {"z": -0.0}, {"z": 0}, {"z": False}, [0.0], [-0.0]]),
    ("one equals true", [{"v": 1}, {"v": True}, {"v": 1.0}]),
    ("big int", {"n": 2**80, "m": -(2**70)}),
    ("tuple", {"t": (1, 2, (3, {"x": 1}))}),
    ("int enum", {"level": Level.HIGH, "levels": [Level.HIGH]}),
    ("str enum", {"colour": Colour.RED}),
    ("ordered dict", OrderedDict([("b", 1), ("a", {"c": 2})])),
    ("non-string keys", {1: "one", 2.5: "x", False: "f", None: "n", "s": {3: []}}),
]


@pytest.mark.parametrize("indent", [2, 4])
@pytest.mark.parametrize(("name", "value"), CASES, ids=[name for name, _ in CASES])
def test_dumps_indented_matches_json(name: str, value: Any, indent: int) -> None:
    expected = json.dumps(value, indent=indent, ensure_ascii=False)
    # Twice: the second call is served from the memo of flat containers.
    assert dumps_indented(value, indent) == expected
    assert dumps_indented(value, indent) == expected


@pytest.mark.parametrize(("name", "value"), CASES, ids=[name for name, _ in CASES])
def test_copy_json_matches_round_trip(name: str, value: Any) -> None:
    copied = copy_json(value)
    expected = json.loads(json.dumps(value))
    # NaN != NaN, so compare the text of both.
    assert json.dumps(copied, sort_keys=False) == json.dumps(expected, sort_keys=False)
    assert type(copied) is type(expected)


def test_negative_zero_is_not_served_from_the_memo() -> None:
    assert dumps_indented({"x": 0.0, "y": "a"}) == json.dumps({"x": 0.0, "y": "a"}, indent=2)
    assert dumps_indented({"x": -0.0, "y": "a"}) == json.dumps({"x": -0.0, "y": "a"}, indent=2)


def test_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsontext, "_FLAT_TEXTS_MAX", 10)
    jsontext._flat_texts.clear()
    for i in range(25):
        assert dumps_indented({"i": i}) == json.dumps({"i": i}, indent=2)
    assert len(jsontext._flat_texts) <= 10


def test_copy_shares_no_containers() -> None:
    original = {"facts": [dict(FACT)], "user": {"s": {"summary": "x"}}}
    copied = copy_json(original)
    copied["facts"][0]["content"] = "changed"
    copied["facts"].append({})
    copied["user"]["s"]["summary"] = "changed"
    assert original == {"facts": [dict(FACT)], "user": {"s": {"summary": "x"}}}


@pytest.mark.parametrize("bad", [{"when": object()}, [1, {2, 3}], {"b": b"bytes"}])
def test_not_json_raises_type_error_like_json(bad: Any) -> None:
    with pytest.raises(TypeError):
        json.dumps(bad)
    with pytest.raises(TypeError):
        dumps_indented(bad)
    with pytest.raises(TypeError):
        copy_json(bad)


def test_circular_value_raises() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = [loop]
    with pytest.raises(ValueError, match="Circular"):
        dumps_indented(loop)
    with pytest.raises(RecursionError):
        copy_json(loop)


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=6), children, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_dumps_indented_matches_json_for_any_value(value: Any) -> None:
    assert dumps_indented(value) == json.dumps(value, indent=2, ensure_ascii=False)
    assert dumps_indented(value) == json.dumps(value, indent=2, ensure_ascii=False)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_copy_json_matches_round_trip_for_any_value(value: Any) -> None:
    assert json.dumps(copy_json(value)) == json.dumps(json.loads(json.dumps(value)))


@pytest.mark.parametrize("indent", ["\t", "", None, 0, -1])
def test_other_indent_forms_match_json(indent: Any) -> None:
    value = {"facts": [{"a": 1}, []], "s": "x"}
    assert dumps_indented(value, indent) == json.dumps(value, indent=indent, ensure_ascii=False)


def test_scan_json_tells_plain_trees_and_non_finite_numbers() -> None:
    shared: dict[str, Any] = {"a": 1}
    loop: list[Any] = []
    loop.append(loop)
    assert scan_json({"facts": [{"c": 0.5}], "s": None}) == (True, None)
    assert scan_json(7) == (True, None)
    assert scan_json({"x": [1.0, float("inf")]}) == (True, float("inf"))
    assert scan_json({"t": (1, 2)})[0] is False
    assert scan_json({"a": shared, "b": shared})[0] is False
    assert scan_json(loop)[0] is False
    assert scan_json({1: "non-string key"})[0] is False
    assert scan_json(Level.HIGH)[0] is False
