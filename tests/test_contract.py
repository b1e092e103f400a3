"""The memory-update contract: JSON Schema file, pydantic models and violation reports."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from builders import json_values, mutated_json
from hypothesis import given, settings
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from memlab.core.base.jsontext import scan_json
from memlab.core.jsondoc import contract as contract_module
from memlab.core.jsondoc.contract import (
    FACT_CATEGORIES,
    HISTORY_SECTIONS,
    MINIMAL_VALID_UPDATE,
    USER_SECTIONS,
    MemoryUpdate,
    NewFact,
    Violation,
    contract_schema,
    minimal_update,
    validate_update,
)


def _with_fact(**fields: Any) -> dict[str, Any]:
    doc = minimal_update()
    fact = {"content": "Prefers tea", "category": "preference", "confidence": 0.9}
    fact.update(fields)
    doc["newFacts"] = [fact]
    return doc


def _edit(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    doc = minimal_update()
    change(doc)
    return doc


def test_schema_is_valid_draft_2020_12() -> None:
    schema = contract_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("memory_update.schema.json")


def test_schema_lists_match_constants() -> None:
    schema = contract_schema()
    assert tuple(schema["required"]) == ("user", "history", "newFacts", "factsToRemove")
    assert tuple(schema["properties"]["user"]["required"]) == USER_SECTIONS
    assert tuple(schema["properties"]["history"]["required"]) == HISTORY_SECTIONS
    category = schema["$defs"]["newFact"]["properties"]["category"]
    assert tuple(category["enum"]) == FACT_CATEGORIES


def test_contract_schema_returns_independent_copies() -> None:
    first = contract_schema()
    first["required"].append("bogus")
    assert "bogus" not in contract_schema()["required"]


def test_minimal_valid_update_passes_both_validators() -> None:
    assert validate_update(MINIMAL_VALID_UPDATE) == []
    model = MemoryUpdate.model_validate(MINIMAL_VALID_UPDATE)
    assert model.to_json_dict() == MINIMAL_VALID_UPDATE
    assert minimal_update() == MINIMAL_VALID_UPDATE
    assert minimal_update() is not MINIMAL_VALID_UPDATE


def test_model_round_trip_keeps_optional_source_error() -> None:
    doc = _with_fact(category="correction", sourceError="Said Java instead of Kotlin")
    model = MemoryUpdate.model_validate(doc)
    assert model.to_json_dict() == doc
    plain = _with_fact()
    assert "sourceError" not in MemoryUpdate.model_validate(plain).to_json_dict()["newFacts"][0]


GOOD_DOCS: list[dict[str, Any]] = [
    minimal_update(),
    _with_fact(),
    _with_fact(confidence=0),
    _with_fact(confidence=1),
    _with_fact(confidence=0.5, category="goal"),
    _with_fact(content="喜欢绿茶"),
    _with_fact(content="  padded  "),
    _with_fact(category="correction", sourceError=""),
    _edit(lambda d: d["factsToRemove"].extend(["fact_0123abcd", "x"])),
    _edit(lambda d: d["user"]["topOfMind"].update(summary="Moving to Berlin", shouldUpdate=True)),
]

# (document, pointer, keyword) — each document has exactly this one violation.
BAD_DOCS: list[tuple[dict[str, Any], str, str]] = [
    (_edit(lambda d: d.pop("user")), "", "required"),
    (_edit(lambda d: d.update(extra=1)), "", "additionalProperties"),
    (_edit(lambda d: d["user"].pop("topOfMind")), "/user", "required"),
    (_edit(lambda d: d["history"].update(recent={})), "/history", "additionalProperties"),
    (_edit(lambda d: d["history"].update(recentMonths="x")), "/history/recentMonths", "type"),
    (_edit(lambda d: d["user"]["workContext"].pop("summary")), "/user/workContext", "required"),
    (
        _edit(lambda d: d["user"]["workContext"].update(shouldUpdate="true")),
        "/user/workContext/shouldUpdate",
        "type",
    ),
    (
        _edit(lambda d: d["user"]["workContext"].update(shouldUpdate=1)),
        "/user/workContext/shouldUpdate",
        "type",
    ),
    (
        _edit(lambda d: d["user"]["workContext"].update(summary=None)),
        "/user/workContext/summary",
        "type",
    ),
    (
        _edit(lambda d: d["history"]["earlierContext"].update(note="x")),
        "/history/earlierContext",
        "additionalProperties",
    ),
    (_edit(lambda d: d.update(newFacts={})), "/newFacts", "type"),
    (_edit(lambda d: d.update(factsToRemove="fact_1")), "/factsToRemove", "type"),
    (_edit(lambda d: d.update(factsToRemove=[1])), "/factsToRemove/0", "type"),
    (_with_fact(content=" \n\t"), "/newFacts/0/content", "pattern"),
    (_with_fact(content=7), "/newFacts/0/content", "type"),
    (_with_fact(category="hobby"), "/newFacts/0/category", "enum"),
    (_with_fact(confidence=1.5), "/newFacts/0/confidence", "maximum"),
    (_with_fact(confidence=-0.1), "/newFacts/0/confidence", "minimum"),
    (_with_fact(confidence="0.9"), "/newFacts/0/confidence", "type"),
    (_with_fact(confidence=True), "/newFacts/0/confidence", "type"),
    (_with_fact(confidence=float("nan")), "/newFacts/0/confidence", "finite"),
    (_with_fact(sourceError=None), "/newFacts/0/sourceError", "type"),
    (_with_fact(source="thread-1"), "/newFacts/0", "additionalProperties"),
    (
        _edit(lambda d: d["newFacts"].append({"content": "x", "category": "goal"})),
        "/newFacts/0",
        "required",
    ),
]


@pytest.mark.parametrize("doc", GOOD_DOCS)
def test_good_documents_pass_schema_and_model(doc: dict[str, Any]) -> None:
    assert validate_update(doc) == []
    MemoryUpdate.model_validate(doc)


@pytest.mark.parametrize(("doc", "pointer", "keyword"), BAD_DOCS)
def test_bad_document_reports_pointer_and_keyword(
    doc: dict[str, Any], pointer: str, keyword: str
) -> None:
    violations = validate_update(doc)
    assert [(v.pointer, v.keyword) for v in violations] == [(pointer, keyword)]
    assert violations[0].message


@pytest.mark.parametrize(("doc", "pointer", "keyword"), BAD_DOCS)
def test_pydantic_agrees_with_schema_on_bad_documents(
    doc: dict[str, Any], pointer: str, keyword: str
) -> None:
    with pytest.raises(ValidationError):
        MemoryUpdate.model_validate(doc)


@pytest.mark.parametrize("value", ["nope", None, [], 3, [MINIMAL_VALID_UPDATE]])
def test_non_object_documents(value: Any) -> None:
    violations = validate_update(value)
    assert [(v.pointer, v.keyword) for v in violations] == [("", "type")]
    with pytest.raises(ValidationError):
        MemoryUpdate.model_validate(value)


def test_empty_content_breaks_min_length_and_pattern() -> None:
    violations = validate_update(_with_fact(content=""))
    assert [(v.pointer, v.keyword) for v in violations] == [
        ("/newFacts/0/content", "minLength"),
        ("/newFacts/0/content", "pattern"),
    ]
    with pytest.raises(ValidationError):
        MemoryUpdate.model_validate(_with_fact(content=""))


def test_infinite_confidence_reports_range_and_finiteness() -> None:
    violations = validate_update(_with_fact(confidence=float("inf")))
    assert [(v.pointer, v.keyword) for v in violations] == [
        ("/newFacts/0/confidence", "finite"),
        ("/newFacts/0/confidence", "maximum"),
    ]
    negative = validate_update(_with_fact(confidence=float("-inf")))
    assert {v.keyword for v in negative} == {"finite", "minimum"}


def test_every_violation_is_listed_and_sorted() -> None:
    doc = copy.deepcopy(MINIMAL_VALID_UPDATE)
    del doc["factsToRemove"]
    doc["history"]["recentMonths"]["shouldUpdate"] = "yes"
    facts = [{"content": "ok", "category": "goal", "confidence": 0.5} for _ in range(12)]
    facts[10]["confidence"] = 2
    facts[2]["category"] = "mood"
    doc["newFacts"] = facts
    violations = validate_update(doc)
    assert [(v.pointer, v.keyword) for v in violations] == [
        ("", "required"),
        ("/history/recentMonths/shouldUpdate", "type"),
        ("/newFacts/2/category", "enum"),
        ("/newFacts/10/confidence", "maximum"),
    ]


def test_pointer_escapes_special_characters() -> None:
    doc = minimal_update()
    doc["user"]["a/b~c"] = {}
    (violation,) = validate_update(doc)
    assert violation.pointer == "/user"  # additionalProperties points at the object
    doc = minimal_update()
    doc["newFacts"] = [{"content": "x", "category": "goal", "confidence": float("nan")}]
    doc["newFacts"][0]["a/b~c"] = float("nan")
    pointers = {v.pointer for v in validate_update(doc) if v.keyword == "finite"}
    assert pointers == {"/newFacts/0/confidence", "/newFacts/0/a~1b~0c"}


def test_violation_is_frozen_and_serialisable() -> None:
    violation = Violation("/newFacts/0/confidence", "maximum", "1.5 is greater than 1")
    assert violation.to_dict() == {
        "pointer": "/newFacts/0/confidence",
        "keyword": "maximum",
        "message": "1.5 is greater than 1",
    }
    assert "maximum" in str(violation)
    with pytest.raises(AttributeError):
        violation.pointer = "/x"  # type: ignore[misc]


def test_new_fact_model_rejects_blank_content_with_unicode_whitespace() -> None:
    # U+3000 is whitespace to both Python's str.strip and the schema's "\S" under `re`.
    with pytest.raises(ValidationError):
        NewFact.model_validate({"content": "\u3000", "category": "goal", "confidence": 0.5})
    assert [v.keyword for v in validate_update(_with_fact(content="\u3000"))] == ["pattern"]


# --- the fast validity check must agree with the full validation ----------------------------

_MUTATED_UPDATES = mutated_json(
    {
        **minimal_update(),
        "newFacts": [
            {"content": "Prefers tea", "category": "preference", "confidence": 0.9},
            {"content": "Works in Lisbon", "category": "context", "confidence": 0.7},
        ],
        "factsToRemove": ["fact_1"],
    },
    json_values(
        ["summary", "shouldUpdate", "content", "x"],
        ["x", "preference", "knowledge", "fact_1", "Prefers tea"],
    ),
    ["extra", "summary", "content", "category"],
)


def _full_violations(doc: Any) -> list[Any]:
    return contract_module._validator().errors(doc, fast=False)


@settings(max_examples=600, deadline=None)
@given(_MUTATED_UPDATES)
def test_fast_check_agrees_with_full_validation(doc: Any) -> None:
    """The compiled check and jsonschema give the same verdict, in both directions.

    validate_update trusts the compiled check's "valid" and asks jsonschema otherwise; a
    compiled check that rejected valid documents would go unnoticed there (only slower), so it
    is compared directly. NaN and Infinity are never left to the compiled check.
    """
    plain, non_finite = scan_json(doc)
    assert plain  # the strategy builds fresh JSON trees
    full_valid = _full_violations(doc) == [] and non_finite is None
    assert (validate_update(doc) == []) == full_valid
    if non_finite is None:
        assert contract_module._validator().compiled_check(doc) == full_valid


def test_fast_check_verdicts_on_known_documents() -> None:
    """Both verdicts occur: the agreement test above is not only fed invalid documents."""
    valid = [minimal_update(), _with_fact(), _with_fact(sourceError="was wrong")]
    invalid = [
        {},
        _with_fact(category="hobby"),
        _with_fact(confidence=1.5),
        {**minimal_update(), "x": 1},
    ]
    compiled = contract_module._validator()
    for doc in valid:
        assert compiled.compiled_check(doc), doc
        assert _full_violations(doc) == []
    for doc in invalid:
        assert not compiled.compiled_check(doc), doc
        assert _full_violations(doc) != []


def test_validation_leaves_the_schema_untouched() -> None:
    """Requests carry the schema and cache keys hash it: validating must not change it."""
    contract_module._loaded_schema.cache_clear()
    contract_module._validator.cache_clear()
    before = contract_schema()
    validate_update(minimal_update())
    validate_update({"user": 1})
    assert contract_schema() == before
    assert contract_module._loaded_schema() == before


@pytest.mark.parametrize("field", ["newFacts", "factsToRemove"])
def test_tuples_are_not_arrays(field: str) -> None:
    doc: dict[str, Any] = minimal_update()
    doc[field] = ()
    assert [(v.pointer, v.keyword) for v in validate_update(doc)] == [(f"/{field}", "type")]
