"""Bounded decoding: length limits in the schema sent, never in the contract replies meet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import update
from jsonschema import Draft202012Validator

from memlab.backends.decoding.grammar import (
    bounded_reply_tokens,
    longest_text_bytes,
    worst_case_tokens,
)
from memlab.backends.registry import dialect_for
from memlab.backends.scripted import ScriptedBackend
from memlab.cli.main import main
from memlab.core.jsondoc.contract import (
    SchemaBounds,
    bounded_schema,
    contract_schema,
    minimal_update,
    validate_update,
)
from memlab.core.pipeline.llm import OutputMode
from memlab.core.pipeline.storage import InMemoryStorage
from memlab.core.pipeline.updater import MemoryUpdater
from memlab.grids.grid import Grid, GridError
from memlab.grids.lane import LaneConfig
from memlab.sweeps.driver import sweep
from memlab.sweeps.plan import load_grid

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
    from memlab.backends.local.llama_local import compile_grammar

    free = compile_grammar(contract_schema())
    bounded = compile_grammar(bounded_schema(contract_schema(), BOUNDS))
    assert "char*" in free  # an unbounded string: the loop a small model falls into
    assert "char*" not in bounded and "char+" not in bounded  # every string ends
    assert 'newFacts ::= "[" space (newFacts-item ("," space newFacts-item)?)? "]"' in bounded


# --------------------------------------------------------------------------- the worst case


@pytest.mark.parametrize(
    ("gbnf", "longest"),
    [
        ('root ::= "ab" [a-c] "é"', 2 + 1 + 2),
        ("root ::= x{3}\nx ::= [^a]", 3 * 4),  # a negated class: up to 4 bytes
        ('root ::= ("a" | "bcd")? "e"{2,5}', 3 + 5),
        ('root ::= "\\x41\\u00e9\\U0001F600" [\\u3000] space\nspace ::= ""', 1 + 2 + 4 + 3),
        ('root ::= "a"{2,}', None),
        ('root ::= "a"*', None),
        ('root ::= "a" ""+', 1),
        ('root ::= x\nx ::= "(" x? ")"', None),  # recursion
        ('# a comment\nroot ::= ( "[" ("\\"" | "\\\\") "]" )?', 3),
    ],
)
def test_longest_text_of_a_grammar(gbnf: str, longest: int | None) -> None:
    assert longest_text_bytes(gbnf) == longest


def test_groups_nested_thousands_deep() -> None:
    """llama.cpp writes a string of up to N characters as N nested optional groups."""
    depth = 5000
    gbnf = 'root ::= "\\"" ' + "([a-z] " * depth + ")?" * depth + ' "\\""'
    assert longest_text_bytes(gbnf) == depth + 2


def test_a_grammar_reader_refuses_what_it_cannot_read() -> None:
    with pytest.raises(ValueError, match="'x' is used but not defined"):
        longest_text_bytes("root ::= x")
    with pytest.raises(ValueError, match="unclosed group"):
        longest_text_bytes('root ::= ("a"')


def _grid(tmp_path: Path, base: str) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(
        "name: bounded\ndataset: smoke\nbase:\n  backend: local:smollm2\n"
        "  output_mode: json_schema\n  schema_bounds: {summary_chars: 60, max_new_facts: 3}\n"
        + base
    )
    return path


def test_max_tokens_below_the_worst_case_is_an_error_at_its_line(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    bound = bounded_reply_tokens(SchemaBounds(summary_chars=60, max_new_facts=3))
    path = _grid(tmp_path, f"axes:\n  max_tokens: [auto, {bound}, {bound - 1}]\n")
    with pytest.raises(GridError) as caught:
        load_grid(path)
    assert str(caught.value) == (
        f"{path}:8: axes.max_tokens[2]: max_tokens {bound - 1} < worst case {bound} for these "
        "bounds (the longest reply their grammar admits for local:smollm2, in tokens); set "
        "max_tokens: auto or lower schema_bounds"
    )
    # auto, and no max_tokens at all, make the bound the lane's limit
    lanes = load_grid(_grid(tmp_path, f"axes:\n  max_tokens: [auto, {bound}]\n")).lanes()
    assert [lane.max_tokens for lane in lanes] == [bound]
    assert [lane.max_tokens for lane in load_grid(_grid(tmp_path, "")).lanes()] == [bound]
    bigger = load_grid(_grid(tmp_path, f"  max_tokens: {bound + 7}\n")).lanes()
    assert [lane.max_tokens for lane in bigger] == [bound + 7]


def test_the_worst_case_depends_on_the_backends_grammar() -> None:
    pytest.importorskip("llama_cpp")
    bounds = SchemaBounds(summary_chars=60, max_new_facts=3)
    # llama.cpp's own grammar allows spaces, six-byte escapes and long numbers
    assert bounded_reply_tokens(bounds, "server") > bounded_reply_tokens(bounds, "compact")
    lane = LaneConfig(backend="openai:x", output_mode="json_schema", schema_bounds=bounds)
    assert lane.max_tokens == bounded_reply_tokens(bounds, "server")
    local = LaneConfig(backend="local:smollm2", output_mode="json_schema", schema_bounds=bounds)
    assert local.max_tokens == bounded_reply_tokens(bounds, "compact")
    # the backend's plugin names its grammar; an unknown prefix gets the larger bound
    assert [dialect_for(spec) for spec in ("local:x", "openai:x", "nope:x")] == [
        "compact",
        "server",
        "server",
    ]
    # more room in the bounds, more room in the worst case
    wider = SchemaBounds(summary_chars=61, max_new_facts=3)
    assert bounded_reply_tokens(wider) > bounded_reply_tokens(bounds)


def test_a_sweep_checks_the_worst_case_and_a_recorded_run_still_loads(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    data = {
        "name": "tight",
        "dataset": "smoke",
        "base": {"output_mode": "json_schema", "schema_bounds": {}, "max_tokens": 100},
    }
    grid = Grid.from_mapping(data)
    assert [lane.max_tokens for lane in grid.lanes()] == [100]  # how a recorded run reads it
    backend = ScriptedBackend([update("Likes tea")], repeat_last=True)
    with pytest.raises(GridError, match=r"base.max_tokens: max_tokens 100 < worst case \d+"):
        sweep("smoke", grid, runs_dir=tmp_path, backend_factory=lambda _s: backend)
    assert backend.requests == []


def test_auto_needs_bounds(tmp_path: Path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("name: x\ndataset: smoke\nbase:\n  max_tokens: auto\n")
    with pytest.raises(GridError, match=r"grid.yaml:4: base.max_tokens: max_tokens: auto is "):
        load_grid(path)


def test_the_cli_prints_the_worst_case(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("llama_cpp")
    bounds = SchemaBounds(summary_chars=60, fact_chars=80, max_new_facts=3, max_removals=2)
    flags = ["--bounds", "summary_chars=60,fact_chars=80,max_new_facts=3,max_removals=2"]
    assert main(["validate", "--schema", *flags]) == 0
    out = capsys.readouterr().out
    schema_text, _, line = out.rstrip("\n").rpartition("\n")
    assert json.loads(schema_text) == bounded_schema(contract_schema(), bounds)
    assert f"({'compact'} grammar): {bounded_reply_tokens(bounds)} tokens" in line
    prompt = Path(__file__).parent.parent / "notebooks" / "prompts" / "terse.txt"
    assert main(["prompts", "check", str(prompt), *flags, "--backend", "openai:x"]) == 0
    last = capsys.readouterr().out.rstrip("\n").rsplit("\n", 1)[-1]
    assert f"(server grammar): {bounded_reply_tokens(bounds, 'server')} tokens" in last
    assert main(["validate", "--schema", "--bounds", "max_new_facts=-1"]) == 2
    assert "max_new_facts must be at least 0" in capsys.readouterr().err


def test_the_worst_case_counts_the_end_of_generation() -> None:
    """Worked by hand, without llama.cpp: the compact grammar of ``{"ok": boolean}`` admits
    ``{"ok":true}`` and ``{"ok":false}`` (no whitespace), at most 12 bytes; one token a byte
    plus the end of generation is 13."""
    schema = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "additionalProperties": False,
    }
    assert len('{"ok":false}') == 12
    assert worst_case_tokens(schema) == 13
