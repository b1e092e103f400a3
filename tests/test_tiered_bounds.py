"""Bounded tiered calls: each call kind's worst case, its ``max_tokens: auto`` and grid errors.

The worst cases are checked against replies written out by hand here (the longest text each
bounded contract admits in the compact dialect: four-byte characters in every string, every
list at its bound, the longest numbers and enum value) and against llama.cpp's own grammar
engine, which must accept each hand-written reply spelled one byte per token and refuse it
one character longer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memlab.core.jsondoc.parsing import ParseOptions
from memlab.core.pipeline.llm import Completion, CompletionRequest, GenerationParams, OutputMode
from memlab.core.tiered_prompts import CALL_CONTRACTS, TIERED_CALLS
from memlab.grids.grid import Grid, GridError
from memlab.grids.lane import LaneConfig
from memlab.memory.tiers.tiered import TieredSettings
from memlab.memory.tiers.tiered_bounds import TieredBounds, bounded_call_schema, call_reply_tokens
from memlab.memory.tiers.tiered_calls import TieredCaller
from memlab.simulation.model import SimulatedBackend
from memlab.sweeps.driver import sweep
from memlab.sweeps.plan import load_grid, tiered_settings

SMALL = TieredBounds(summary_chars=3, key_point_chars=2, max_key_points=2, compression_chars=4)
WIDE = "\U0001f600"  # four UTF-8 bytes: the longest character a string may hold
LONGEST_INTEGER = "-" + "9" * 16  # the converter's integer: a sign and up to 16 digits
LONGEST_NUMBER = f"-{'9' * 16}.{'9' * 16}e-{'9' * 16}"  # a number with every part at length
RATING = f'{{"index":{LONGEST_INTEGER},"importance":{LONGEST_NUMBER},"category":"preference"}}'

# The longest reply of each kind under SMALL, written out by hand; and one that is longer.
LONGEST = {
    "summary": f'{{"summary":"{WIDE * 3}","keyPoints":["{WIDE * 2}","{WIDE * 2}"]}}',
    "importance": f'{{"ratings":[{RATING},{RATING}]}}',
    "compression": f'{{"summary":"{WIDE * 4}"}}',
}
TOO_LONG = {
    "summary": f'{{"summary":"{WIDE * 4}","keyPoints":["{WIDE * 2}","{WIDE * 2}"]}}',
    "importance": f'{{"ratings":[{RATING},{RATING},{RATING}]}}',
    "compression": f'{{"summary":"{WIDE * 5}"}}',
}


def test_the_bounded_schemas_bound_every_string_and_list() -> None:
    summary = bounded_call_schema("summary", SMALL)["properties"]
    assert summary["summary"]["maxLength"] == 3
    assert summary["keyPoints"]["maxItems"] == 2
    assert summary["keyPoints"]["items"]["maxLength"] == 2
    assert bounded_call_schema("importance", SMALL)["properties"]["ratings"]["maxItems"] == 2
    assert bounded_call_schema("compression", SMALL)["properties"]["summary"]["maxLength"] == 4
    # the contracts the replies are validated against stay unbounded
    assert "maxLength" not in str(CALL_CONTRACTS["summary"].schema)


@pytest.mark.parametrize("call", TIERED_CALLS)
def test_the_worst_case_is_the_longest_reply_written_by_hand(call: Any) -> None:
    pytest.importorskip("llama_cpp")
    from grammar_oracle import GrammarOracle

    from memlab.backends.decoding.grammar import compile_grammar

    oracle = _oracle(GrammarOracle)
    grammar = compile_grammar(bounded_call_schema(call, SMALL), "compact")
    longest = LONGEST[call]
    assert oracle.accepts(grammar, oracle.byte_spelling(longest))
    assert not oracle.accepts(grammar, oracle.byte_spelling(TOO_LONG[call]))
    # one token per byte, then the end of generation
    assert call_reply_tokens(call, SMALL, "compact") == len(longest.encode("utf-8")) + 1


_ORACLES: list[Any] = []


def _oracle(kind: Any) -> Any:
    if not _ORACLES:  # loading the vocabulary once is enough
        _ORACLES.append(kind())
    return _ORACLES[0]


def test_the_worst_case_by_byte_count() -> None:
    """The hand-written replies' sizes, counted apart from any grammar: 12 + 12 + 15 + 10 +
    1 + 10 + 2 bytes for the summary, 17 for the integer and 52 for the number."""
    assert len(LONGEST["summary"].encode()) == 62
    assert len(LONGEST_INTEGER) == 17 and len(LONGEST_NUMBER) == 52
    assert len(LONGEST["compression"].encode()) == 12 + 16 + 2


def test_the_caller_sends_the_bounded_schema_and_each_calls_max_tokens() -> None:
    caller = TieredCaller(
        backend=_NoBackend(),
        output_mode=OutputMode.JSON_SCHEMA,
        params=GenerationParams(max_tokens=700, seed=3),
        parse_options=ParseOptions(),
        sample=0,
        clock=lambda: None,  # type: ignore[arg-type,return-value]
        bounds=SMALL,
        max_tokens={"summary": 111, "importance": 222},
    )
    summary = caller.request("summary", "p")
    assert summary.schema == bounded_call_schema("summary", SMALL)
    assert (summary.params.max_tokens, summary.params.seed) == (111, 3)
    assert caller.request("importance", "p").params.max_tokens == 222
    assert caller.request("compression", "p").params.max_tokens == 700  # the lane's
    unbounded = TieredCaller(
        _NoBackend(),
        OutputMode.JSON_SCHEMA,
        GenerationParams(),
        ParseOptions(),
        0,
        lambda: None,  # type: ignore[arg-type,return-value]
    )
    assert unbounded.request("summary", "p").schema == dict(CALL_CONTRACTS["summary"].schema or {})


class _NoBackend:
    name = "none"
    model = "none"

    def identity(self) -> dict[str, Any]:
        return {}

    def complete(self, request: CompletionRequest) -> Completion:
        raise AssertionError("no call expected")


# --------------------------------------------------------------------------- grid settings


def _grid(tmp_path: Path, tiered: str, mode: str = "json_schema") -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(
        "name: bounded\ndataset: smoke\nbase:\n  backend: local:smollm2\n  memory: tiered\n"
        f"  output_mode: {mode}\n  tiered:\n{tiered}"
    )
    return path


BOUNDS_YAML = (
    "    schema_bounds: {summary_chars: 3, key_point_chars: 2, max_key_points: 2, "
    "compression_chars: 4}\n"
)


def test_auto_is_each_calls_worst_case_and_the_default_with_bounds(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    worst = {call: call_reply_tokens(call, SMALL, "compact") for call in TIERED_CALLS}
    (lane,) = load_grid(_grid(tmp_path, BOUNDS_YAML)).lanes()
    assert tiered_settings(lane).max_tokens == worst
    asked = "    max_tokens: {summary: auto, importance: 900}\n"
    (lane,) = load_grid(_grid(tmp_path, BOUNDS_YAML + asked)).lanes()
    assert tiered_settings(lane).max_tokens == {**worst, "importance": 900}
    assert tiered_settings(lane).schema_bounds == SMALL
    # bounds enter the lane's id and identity; a lane without them keeps its own
    plain = LaneConfig(memory="tiered", output_mode="json_schema")
    assert lane.point_id != plain.point_id
    assert "schema_bounds" not in TieredSettings().to_dict()
    assert tiered_settings(lane).to_dict()["schema_bounds"] == SMALL.model_dump()


def test_a_smaller_max_tokens_is_an_error_at_its_line(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    bound = call_reply_tokens("importance", SMALL, "compact")
    asked = f"    max_tokens:\n      summary: auto\n      importance: {bound - 1}\n"
    path = _grid(tmp_path, BOUNDS_YAML + asked)
    with pytest.raises(GridError) as caught:
        load_grid(path)
    assert str(caught.value) == (
        f"{path}:11: base.tiered.max_tokens.importance: max_tokens {bound - 1} < worst case "
        f"{bound} of the importance call under these tiered.schema_bounds (the longest reply "
        "their grammar admits for local:smollm2, in tokens); set it to auto or lower "
        "tiered.schema_bounds"
    )
    assert "\n" not in str(caught.value)


def test_a_sweep_refuses_the_lane_before_any_call(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    data = {
        "name": "tight",
        "dataset": "smoke",
        "base": {
            "memory": "tiered",
            "output_mode": "json_schema",
            "tiered": {"schema_bounds": {}, "max_tokens": {"summary": 100}},
        },
    }
    grid = Grid.from_mapping(data)
    backend = _NoBackend()
    with pytest.raises(GridError, match=r"base.tiered.max_tokens.summary: max_tokens 100 < "):
        sweep("smoke", grid, runs_dir=tmp_path, backend_factory=lambda _s: backend)


@pytest.mark.parametrize(
    ("tiered", "mode", "message"),
    [
        ("    max_tokens: {summary: auto}\n", "json_schema", "auto is computed from tiered"),
        (BOUNDS_YAML, "free", "tiered.schema_bounds only applies to output_mode json_schema"),
        ("    schema_bounds: {max_key_points: -1}\n", "json_schema", "greater than or equal"),
        ("    max_tokens: {summary: 8}\n", "json_schema", "greater than or equal to 16"),
        ("    max_tokens: {sumary: 80}\n", "json_schema", "unknown key; known keys"),
    ],
)
def test_grid_errors_name_the_file_line_and_key(
    tmp_path: Path, tiered: str, mode: str, message: str
) -> None:
    with pytest.raises(GridError) as caught:
        load_grid(_grid(tmp_path, tiered, mode))
    text = str(caught.value)
    assert text.startswith(f"{tmp_path / 'grid.yaml'}:") and "base.tiered" in text
    assert message in text and "\n" not in text


def test_a_bounded_sweep_sends_each_call_its_schema_and_max_tokens(tmp_path: Path) -> None:
    """The simulated model (an instrument) answers; every request it got is checked."""
    pytest.importorskip("llama_cpp")
    seen: list[CompletionRequest] = []
    sim = SimulatedBackend("careful", dataset="personas")

    class Recording:
        name, model = "sim", sim.model

        def identity(self) -> dict[str, Any]:
            return sim.identity()

        def complete(self, request: CompletionRequest) -> Completion:
            seen.append(request)
            return sim.complete(request)

    base = {"backend": "sim:careful", "memory": "tiered", "output_mode": "json_schema"}
    bounds = {"summary_chars": 300, "key_point_chars": 100, "max_key_points": 4}
    grid = Grid.from_mapping(
        {
            "name": "b",
            "max_owners": 1,
            "max_sessions": 2,
            "base": {**base, "tiered": {"schema_bounds": bounds}},
        }
    )
    sweep("personas", grid, runs_dir=tmp_path, progress=False, max_workers=1,
          backend_factory=lambda _s: Recording())  # fmt: skip
    kinds = {
        call: [r for r in seen if r.schema == bounded_call_schema(call, TieredBounds(**bounds))]
        for call in TIERED_CALLS
    }
    assert kinds["summary"] and kinds["importance"]
    assert sum(len(v) for v in kinds.values()) == len(seen)  # no request went unbounded
    for call, requests in kinds.items():
        expected = call_reply_tokens(call, TieredBounds(**bounds), "server")  # sim: unknown
        assert {r.params.max_tokens for r in requests} <= {expected}


def test_options_built_in_code_are_resolved_like_a_grids() -> None:
    pytest.importorskip("llama_cpp")
    from memlab.memory.tiers.options import TieredOptions

    options = TieredOptions(schema_bounds=SMALL)
    lane = LaneConfig(memory="tiered", output_mode="json_schema", tiered=options)
    dialect = "server"  # the default backend, scripted, is not the local one
    assert tiered_settings(lane).max_tokens == {
        call: call_reply_tokens(call, SMALL, dialect) for call in TIERED_CALLS
    }
