"""Bounded decoding: length limits in the schema sent, never in the contract replies meet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import update
from jsonschema import Draft202012Validator

from memlab.backends.scripted import ScriptedBackend
from memlab.core.contract import (
    SchemaBounds,
    bounded_schema,
    contract_schema,
    minimal_update,
    validate_update,
)
from memlab.core.llm import OutputMode
from memlab.core.storage import InMemoryStorage
from memlab.core.updater import MemoryUpdater
from memlab.sweeps.driver import sweep
from memlab.sweeps.grid import Grid, GridError, LaneConfig

BOUNDS = SchemaBounds(summary_chars=20, fact_chars=30, max_new_facts=2, max_removals=1)


def _long_reply() -> dict[str, object]:
    reply = minimal_update()
    reply["user"]["topOfMind"] = {"summary": "x" * 21, "shouldUpdate": True}
    reply["newFacts"] = [
        {"content": "y" * 31, "category": "goal", "confidence": 0.9},
        {"content": "short", "category": "goal", "confidence": 0.9},
        {"content": "third", "category": "goal", "confidence": 0.9, "sourceError": "z" * 31},
    ]
    reply["factsToRemove"] = ["fact_00000001", "f" * 33]
    return reply


def test_bounds_reject_what_the_contract_accepts() -> None:
    reply = _long_reply()
    assert validate_update(reply) == []  # the contract has no length limits
    bounded = Draft202012Validator(bounded_schema(contract_schema(), BOUNDS))
    found = {
        ("/" + "/".join(str(p) for p in e.absolute_path), e.validator)
        for e in bounded.iter_errors(reply)
    }
    assert found == {
        ("/user/topOfMind/summary", "maxLength"),
        ("/newFacts", "maxItems"),
        ("/newFacts/0/content", "maxLength"),
        ("/newFacts/2/sourceError", "maxLength"),
        ("/factsToRemove", "maxItems"),
        ("/factsToRemove/1", "maxLength"),
    }
    assert list(bounded.iter_errors(minimal_update())) == []


def test_bounding_leaves_the_contract_schema_alone_and_keeps_tighter_limits() -> None:
    before = json.dumps(contract_schema(), sort_keys=True)
    schema = bounded_schema(contract_schema(), BOUNDS)
    assert json.dumps(contract_schema(), sort_keys=True) == before
    again = bounded_schema(schema, SchemaBounds(summary_chars=500, fact_chars=10))
    assert again["$defs"]["sectionUpdate"]["properties"]["summary"]["maxLength"] == 20
    assert again["$defs"]["newFact"]["properties"]["content"]["maxLength"] == 10
    with pytest.raises(ValueError, match="lacks a node"):
        bounded_schema({"type": "object"}, BOUNDS)


def test_the_updater_sends_the_bounded_schema_and_validates_against_the_contract() -> None:
    """A reply longer than the bounds (a backend that ignores the grammar) is still valid."""
    backend = ScriptedBackend([update("A fact much longer than the thirty characters allowed")])
    updater = MemoryUpdater(
        backend=backend,
        storage=InMemoryStorage(),
        output_mode=OutputMode.JSON_SCHEMA,
        schema_bounds=BOUNDS,
    )
    result = updater.run_update(
        [{"role": "user", "content": "I like tea"}, {"role": "assistant", "content": "Noted"}],
        "t1",
    )
    assert result.saved and result.facts_after == 1
    sent = backend.requests[0].schema
    assert sent == bounded_schema(contract_schema(), BOUNDS)
    assert sent != contract_schema()


def test_a_lane_takes_bounds_only_with_schema_output() -> None:
    lane = LaneConfig(output_mode="json_schema", schema_bounds={"fact_chars": 40})
    assert lane.schema_bounds == SchemaBounds(fact_chars=40)
    assert lane.point_id != LaneConfig(output_mode="json_schema").point_id
    with pytest.raises(GridError, match="schema_bounds only applies to output_mode json_schema"):
        Grid.from_mapping({"base": {"output_mode": "free", "schema_bounds": {}}})
    with pytest.raises(GridError, match="fact_chars"):
        Grid.from_mapping(
            {"base": {"output_mode": "json_schema", "schema_bounds": {"fact_chars": 0}}}
        )


def test_a_sweep_threads_the_bounds_to_the_request(tmp_path: Path) -> None:
    backend = ScriptedBackend([update("Likes tea")], repeat_last=True)
    grid = Grid.from_mapping(
        {
            "name": "bounded",
            "dataset": "smoke",
            "max_owners": 1,
            "base": {"output_mode": "json_schema"},
            "axes": {"schema_bounds": [None, {"max_new_facts": 1}]},
        }
    )
    run = sweep(
        "smoke", grid, runs_dir=tmp_path, backend_factory=lambda _s: backend, progress=False
    )
    limits = {
        (r.schema or {}).get("properties", {}).get("newFacts", {}).get("maxItems")
        for r in backend.requests
    }
    assert limits == {None, 1}
    assert sorted(run.summary["label"]) == ["bounds=off", "bounds=on"]


def test_llama_cpp_turns_the_bounds_into_a_finite_grammar() -> None:
    pytest.importorskip("llama_cpp")
    from memlab.backends.llama_local import compile_grammar

    free = compile_grammar(contract_schema())
    bounded = compile_grammar(bounded_schema(contract_schema(), BOUNDS))
    assert "char*" in free  # an unbounded string: the loop a small model falls into
    assert "char*" not in bounded and "char+" not in bounded  # every string ends
    assert 'newFacts ::= "[" space (newFacts-item ("," space newFacts-item)?)? "]"' in bounded
