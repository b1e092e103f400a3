"""A bounded tiered lane on the bundled model: no call ends truncated.

Every tiered call's ``max_tokens`` is ``auto``, the longest reply its bounded grammar admits,
so whatever the model writes on whichever CPU, each reply closes before the limit. No reply is
pinned; one owner, two sessions keep the work small.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.grids.grid import Grid
from memlab.memory.tiered_bounds import TieredBounds, call_reply_tokens
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
