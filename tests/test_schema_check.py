"""CompiledSchema's fast check never hides a violation jsonschema reports.

jsonschema's draft 2020-12 validator is the validator of record; CompiledSchema answers
"valid?" first with code fastjsonschema generates. Broken contract replies and broken dataset
lines go through both: every violation jsonschema reports must come out of CompiledSchema, with
its instance path, keyword, keyword value, subschema and message, in the same order, whether
or not the fast check runs first.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from builders import json_values, mutated_json
from hypothesis import HealthCheck, given, settings
from jsonschema import Draft202012Validator

from memlab.core.jsondoc import contract as contract_module
from memlab.core.jsondoc.contract import contract_schema, minimal_update
from memlab.core.jsondoc.schema_check import CompiledSchema
from memlab.datasets.loader import dataset_schema, validate_dataset

CONTRACT = CompiledSchema(contract_schema())
DATASET = CompiledSchema(dataset_schema())


def _reference(schema: Mapping[str, Any], doc: Any) -> list[tuple[Any, ...]]:
    errors = Draft202012Validator(schema).iter_errors(doc)
    return [
        (
            tuple(e.absolute_path),
            e.validator,
            e.validator_value,
            e.schema,
            repr(e.instance),
            e.message,
        )
        for e in errors
    ]


def _ours(compiled: CompiledSchema, doc: Any, *, fast: bool = False) -> list[tuple[Any, ...]]:
    return [
        (e.path, e.keyword, e.value, e.schema, repr(e.instance), e.message)
        for e in compiled.errors(doc, fast=fast)
    ]


def _agree(compiled: CompiledSchema, doc: Any) -> list[tuple[Any, ...]]:
    """Assert both validators agree on ``doc``; return the violations."""
    expected = _reference(compiled.schema, doc)
    assert _ours(compiled, doc) == expected
    assert _ours(compiled, doc, fast=True) == expected  # the fast check never hides one
    return expected


# --- the reply contract ------------------------------------------------------------------

_UPDATE_SEED = {
    **minimal_update(),
    "newFacts": [
        {"content": "Prefers tea", "category": "preference", "confidence": 0.9},
        {"content": "Works in Lisbon", "category": "context", "confidence": 1, "sourceError": ""},
    ],
    "factsToRemove": ["fact_1"],
}
_UPDATE_KEYS = ["summary", "shouldUpdate", "content", "category", "confidence", "x", "user"]


@settings(max_examples=400, deadline=None)
@given(
    mutated_json(
        _UPDATE_SEED,
        json_values(_UPDATE_KEYS, ["x", "preference", "fact_1", "\u3000"]),
        _UPDATE_KEYS,
    )
)
def test_contract_violations_match_jsonschema(doc: Any) -> None:
    _agree(CONTRACT, doc)


def test_contract_corpus_covers_every_keyword() -> None:
    """Known broken replies: each contract keyword fails at least once, as jsonschema says."""
    fact = _UPDATE_SEED["newFacts"][0]
    corpus = [
        [],
        {"user": 1},
        {**_UPDATE_SEED, "extra": 1, "another": 2},
        {**_UPDATE_SEED, "newFacts": [{**fact, "category": "hobby", "confidence": 1.5}]},
        {**_UPDATE_SEED, "newFacts": [{**fact, "content": "", "confidence": -0.5}]},
        {**_UPDATE_SEED, "newFacts": [{**fact, "content": " \n", "confidence": True}]},
        {**_UPDATE_SEED, "newFacts": [{"content": "x"}], "factsToRemove": [1, None]},
        {**_UPDATE_SEED, "user": {"workContext": {"summary": 3, "shouldUpdate": "yes"}}},
    ]
    keywords = {error[1] for doc in corpus for error in _agree(CONTRACT, doc)}
    assert keywords == {
        "type",
        "required",
        "additionalProperties",
        "enum",
        "minimum",
        "maximum",
        "minLength",
        "pattern",
    }


def test_errors_agree_on_values_the_compiled_check_misreads() -> None:
    """Tuples, NaN, True against 1 and 1.0 as an integer: jsonschema has the last word."""
    compiled = CompiledSchema(
        {
            "type": "object",
            "properties": {
                "list": {"type": "array"},
                "n": {"type": "integer", "minimum": 0},
                "flag": {"enum": [1, "a"]},
                "one": {"const": 1},
                "tag": {"type": "string", "pattern": "^[a-z]+$"},
            },
        }
    )
    docs = [
        {"list": (1, 2)},
        {"n": 1.0},
        {"n": float("nan")},
        {"flag": True, "one": True},
        {"flag": 1, "one": 1.0},
        {"tag": "en\n"},  # `$` lets a final newline through in Python's re, as in jsonschema
    ]
    for doc in docs:
        assert _ours(compiled, doc) == _reference(compiled.schema, doc)
    assert [not _ours(compiled, doc) for doc in docs] == [False, True, False, False, True, True]
    # Where the compiled check errs: a tuple passes it (callers send plain JSON trees only),
    # and "en\n" fails it but then jsonschema, which has the last word, finds nothing.
    assert compiled.compiled_check({"list": (1, 2)})
    assert not compiled.compiled_check({"tag": "en\n"})
    assert compiled.errors({"tag": "en\n"}) == []


# --- the dataset format ------------------------------------------------------------------

_OWNER_SEED: dict[str, Any] = {
    "user_id": "u1",
    "language": "en",
    "sessions": [
        {
            "thread_id": "t1",
            "started_at": "2025-01-01T10:00:00Z",
            "messages": [
                {
                    "role": "human",
                    "content": [
                        {"type": "text", "text": "look"},
                        {"type": "image_url", "image_url": {"url": "u"}, "caption": "a cat"},
                    ],
                    "timestamp": "2025-01-01T10:00:00Z",
                },
                {
                    "role": "ai",
                    "content": "",
                    "timestamp": "2025-01-01T10:00:05Z",
                    "tool_calls": [{"id": "c1", "name": "weather", "args": {}}],
                },
                {
                    "role": "tool",
                    "content": "-3 C",
                    "timestamp": "2025-01-01T10:00:06Z",
                    "tool_call_id": "c1",
                    "name": "weather",
                },
            ],
            "labels": {
                "facts": [{"id": "g1", "content": "Lives in Oslo", "category": "context"}],
                "retracts": [],
                "sections": ["topOfMind"],
                "noise": False,
                "tags": ["tool_calls", "multimodal"],
            },
        }
    ],
    "questions": [
        {
            "id": "q1",
            "question": "Where?",
            "category": "place",
            "kind": "answerable",
            "answer": "Oslo",
            "after_session": 0,
            "evidence": {"facts": ["g1"], "turns": [{"session": "t1", "message": 0}]},
        },
        {"id": "q2", "question": "Pet?", "category": "pet", "kind": "abstain", "after_session": 0},
    ],
}
_OWNER_KEYS = [
    "role", "content", "type", "text", "answer", "tool_calls", "tool_call_id", "name",
    "kind", "session", "x",
]  # fmt: skip
_OWNER_VALUES = json_values(
    _OWNER_KEYS,
    ["x", "ai", "tool", "text", "image_url", "abstain", "answerable", "context", "noise", "t1"],
)
_MUTATED_OWNERS = mutated_json(_OWNER_SEED, _OWNER_VALUES, _OWNER_KEYS, max_edits=4)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MUTATED_OWNERS)
def test_dataset_violations_match_jsonschema(doc: Any) -> None:
    _agree(DATASET, doc)


def _edit(change: Callable[[dict[str, Any]], object]) -> str:
    owner: dict[str, Any] = json.loads(json.dumps(_OWNER_SEED))
    change(owner)
    return json.dumps(owner)


def session(owner: dict[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = owner["sessions"][0]
    return first


def message(owner: dict[str, Any], index: int) -> dict[str, Any]:
    found: dict[str, Any] = session(owner)["messages"][index]
    return found


def _broken_lines() -> list[str]:
    edit = _edit
    return [
        json.dumps(_OWNER_SEED),
        edit(lambda o: o.pop("user_id")),
        edit(lambda o: o.update(language="english", sessions=[])),
        edit(lambda o: session(o).update(started_at="2025-01-01 10:00", lables={})),
        edit(lambda o: message(o, 0).update(role="bot", tool_calls=[], content=[{"type": 1}])),
        edit(lambda o: message(o, 2).pop("tool_call_id")),
        edit(lambda o: message(o, 1).update(tool_call_id="c1", content=7)),
        edit(lambda o: o["questions"][1].update(answer="x", after_session=-1)),
        edit(lambda o: o["questions"][0].update(kind="maybe", evidence={"turns": [{}]})),
        edit(lambda o: session(o)["labels"].update(facts=[{"id": "", "category": "hobby"}])),
    ]


def test_dataset_file_errors_are_unchanged(tmp_path: Path) -> None:
    """file:line:field errors: one per problem, naming the file, the line and the field."""
    data = tmp_path / "broken.jsonl"
    data.write_text("".join(line + "\n" for line in _broken_lines()), encoding="utf-8")
    ours = [str(error) for error in validate_dataset(data)]
    assert all("\n" not in line for line in ours)
    assert {int(line.split(":")[1]) for line in ours} == set(range(2, 11))  # all but line 1
    name = str(data)
    assert f"{name}:2: user_id: missing required field" in ours
    assert f'{name}:3: language: must be a BCP-47 language tag such as "en" or "zh"' in ours
    assert f"{name}:3: sessions: must not be empty" in ours
    assert f"{name}:6: sessions[0].messages[2].tool_call_id: missing required field" in ours
    assert (
        f"{name}:7: sessions[0].messages[1].tool_call_id: only tool messages carry tool_call_id"
        in ours
    )


# --- schemas the fast check does not cover ------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "valid", "invalid"),
    [
        # draft 2020-12 only: fastjsonschema (draft 7) would let the invalid value through
        ({"prefixItems": [{"type": "string"}]}, ["a", 1], [1]),
        ({"type": "object", "dependentRequired": {"a": ["b"]}}, {"a": 1, "b": 2}, {"a": 1}),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, 3, 3.5),
        ({"properties": {"a": {"uniqueItems": True}}}, {"a": [1, 2]}, {"a": [1, 1]}),
    ],
)
def test_other_keywords_are_left_to_jsonschema(
    schema: dict[str, Any], valid: Any, invalid: Any
) -> None:
    compiled = CompiledSchema(schema)
    assert not compiled.compiled_check(valid)  # no fast check: every verdict is jsonschema's
    assert compiled.errors(valid) == []
    assert _ours(compiled, invalid, fast=True) == _reference(schema, invalid) != []


def test_jsonschema_loads_when_a_value_first_fails() -> None:
    """Valid values never import jsonschema (its import alone takes most of a second)."""
    code = """
        import sys
        from memlab.core.jsondoc.contract import minimal_update, validate_update
        assert validate_update(minimal_update()) == []
        assert "jsonschema" not in sys.modules
        assert validate_update({"user": 1}) != []
        assert "jsonschema" in sys.modules
        """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_compiling_leaves_the_schema_untouched() -> None:
    schema = dataset_schema()
    before = json.dumps(schema, sort_keys=True)
    compiled = CompiledSchema(schema)
    compiled.errors({"sessions": [{}]})
    assert json.dumps(schema, sort_keys=True) == before
    assert contract_module._validator().schema == contract_schema()
