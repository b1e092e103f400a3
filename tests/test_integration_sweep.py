"""The sweep engine with the real bundled model, through the response cache."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from memlab.backends.caching.cache import CachedBackend, CacheMode
from memlab.backends.registry import resolve_backend
from memlab.grids.grid import Grid
from memlab.sweeps.driver import sweep

pytestmark = pytest.mark.integration

GRID = {
    "name": "smoke-local",
    "dataset": "smoke",
    "max_sessions": 2,
    "base": {
        "backend": "local:smollm2",
        "prompt": "concise",
        "max_tokens": 96,
        "output_mode": "json_schema",
    },
    "axes": {"fact_confidence_threshold": [0.5, 0.9]},
}


def test_second_run_replays_from_cache_with_identical_metrics(tmp_path: Path) -> None:
    grid = Grid.from_mapping(GRID)
    cache = tmp_path / "cache"
    built: list[CachedBackend] = []

    def factory(spec: str) -> CachedBackend:
        backend = CachedBackend(resolve_backend(spec), cache, mode=CacheMode.READ_WRITE)
        built.append(backend)
        return backend

    first = sweep("smoke", grid, runs_dir=tmp_path / "a", backend_factory=factory, progress=False)
    # One call per agent run, 7 per lane. What the model replies differs between CPUs and
    # builds; what holds on all of them: a reply cut at max_tokens has exactly max_tokens
    # tokens, a parsed reply is saved, and the failure rate counts the failed parses. (A cut
    # reply usually fails to parse, but one whose JSON closes on the last token would parse.)
    assert built[0].counters.backend_calls == len(first.calls) == 14
    calls = first.calls
    cut = calls["finish_reason"] == "length"
    assert (calls.loc[cut, "completion_tokens"] == 96).all()
    assert (calls["saved"] == calls["parse_ok"]).all()
    summary = first.summary
    assert list(summary["llm_calls"]) == list(summary["agent_runs"]) == [7, 7]
    failed = calls.groupby("lane_id")["parse_ok"].apply(lambda ok: 1 - ok.mean())
    assert list(summary["parse_failure_rate"]) == list(failed[summary.index])

    second = sweep("smoke", grid, runs_dir=tmp_path / "b", backend_factory=factory, progress=False)
    assert built[1].counters.backend_calls == 0
    assert second.calls["cached"].all()
    # Where the replies came from differs: the model first, the cache the second time.
    assert list(first.summary["model_calls"]) == list(second.summary["cache_hits"]) == [7, 7]
    assert list(second.summary["model_calls"]) == list(first.summary["cache_hits"]) == [0, 0]
    metric_cols = [c for c in first.summary.columns if c not in ("cache_hits", "model_calls")]
    pd.testing.assert_frame_equal(first.summary[metric_cols], second.summary[metric_cols])
    pd.testing.assert_frame_equal(
        first.sessions.reset_index(drop=True), second.sessions.reset_index(drop=True)
    )
