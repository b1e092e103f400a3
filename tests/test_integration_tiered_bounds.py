"""A bounded tiered lane on the bundled model: no call ends truncated.

Every tiered call's ``max_tokens`` is ``auto``, the longest reply its bounded grammar admits,
so whatever the model writes on whichever CPU, each reply closes before the limit. No reply is
pinned; one owner, two sessions keep the work small.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.grids.grid import Grid
from memlab.memory.tiers.tiered_bounds import TieredBounds, call_reply_tokens
from memlab.sweeps.driver import sweep

pytestmark = pytest.mark.integration

BOUNDS = {"summary_chars": 160, "key_point_chars": 60, "max_key_points": 3}


def test_a_bounded_tiered_lane_ends_no_call_truncated(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    grid = Grid.from_mapping(
        {
            "name": "tiered-bounded-local",
            "dataset": "smoke",
            "max_owners": 1,
            "max_sessions": 2,
            "base": {
                "backend": "local:smollm2",
                "memory": "tiered",
                "output_mode": "json_schema",
                "tiered": {"schema_bounds": BOUNDS, "max_tokens": {"summary": "auto"}},
            },
        }
    )
    run = sweep("smoke", grid, runs_dir=tmp_path, progress=False, max_workers=1)
    calls = run.calls
    asked = calls[calls["completion_tokens"] > 0]
    assert set(asked["call"]) >= {"summary"}  # a session's end folds its working memory
    assert not (calls["finish_reason"] == "length").any(), calls["finish_reason"].tolist()
    assert not (calls["parse_category"] == "truncated").any()
    # each reply took no more tokens than its kind's worst case less the end of generation
    for call, tokens in zip(asked["call"], asked["completion_tokens"], strict=True):
        assert tokens < call_reply_tokens(call, TieredBounds(**BOUNDS), "compact")


def test_each_bounded_call_kind_ends_before_its_max_tokens() -> None:
    """The lane above may make no importance or compression call (the model decides what it
    keeps): each kind is asked here once, with the prompt the tiered memory renders."""
    pytest.importorskip("llama_cpp")
    from datetime import UTC, datetime

    from memlab.backends.registry import resolve_backend
    from memlab.core.jsondoc.parsing import ParseOptions
    from memlab.core.pipeline.llm import GenerationParams, OutputMode
    from memlab.core.tiered_prompts import TIERED_CALLS, tiered_prompt
    from memlab.memory.tiers.tiered_calls import TieredCaller

    bounds = TieredBounds(**BOUNDS)
    worst = {call: call_reply_tokens(call, bounds, "compact") for call in TIERED_CALLS}
    caller = TieredCaller(
        resolve_backend("local:smollm2"),
        OutputMode.JSON_SCHEMA,
        GenerationParams(max_tokens=16),  # every kind has its own limit below
        ParseOptions(),
        0,
        lambda: datetime(2025, 1, 1, tzinfo=UTC),
        bounds=bounds,
        max_tokens=worst,
    )
    facts = ["User is a nurse in Leeds", "User is allergic to peanuts", "User has a dog, Rex"]
    prompts = {
        "summary": tiered_prompt("summary").fill(
            {"previous_summary": "", "conversation": "User: I work nights as a nurse in Leeds."}
        ),
        "importance": tiered_prompt("importance").fill(
            {"candidates": "\n".join(f"{i}. {f}" for i, f in enumerate(facts, start=1))}
        ),
        "compression": tiered_prompt("compression").fill(
            {"memories": "\n".join(f"- {f}" for f in facts)}
        ),
    }
    for call in TIERED_CALLS:
        result, _data = caller.ask(call, prompts[call], "t")
        record = result.to_record()
        assert record["finish_reason"] != "length", (call, record["completion_tokens"])
        assert 0 < record["completion_tokens"] < worst[call]
