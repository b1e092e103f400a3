"""The sweep engine with the real bundled model, through the response cache."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from memlab.backends.cache import CachedBackend, CacheMode
from memlab.backends.registry import resolve_backend
from memlab.sweeps.driver import sweep
from memlab.sweeps.grid import Grid

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
    # The model is deterministic: under max_tokens=96 every contract reply is cut short, so
    # every call of both lanes (one per agent run: 7 per lane) is a truncated parse failure
    # and nothing is stored.
    assert built[0].counters.backend_calls == len(first.calls) == 14
    calls = first.calls
    assert set(calls["parse_category"]) == {"truncated"}
    assert set(calls["finish_reason"]) == {"length"}
    assert set(calls["completion_tokens"]) == {96}
    assert not calls["saved"].any()
    summary = first.summary
    assert list(summary["llm_calls"]) == list(summary["agent_runs"]) == [7, 7]
    assert list(summary["parse_failure_rate"]) == [1.0, 1.0]
    assert list(summary["final_facts"]) == [0, 0]

    second = sweep("smoke", grid, runs_dir=tmp_path / "b", backend_factory=factory, progress=False)
    assert built[1].counters.backend_calls == 0
    assert second.calls["cached"].all()
    metric_cols = [c for c in first.summary.columns if c != "cache_hits"]
    pd.testing.assert_frame_equal(first.summary[metric_cols], second.summary[metric_cols])
    pd.testing.assert_frame_equal(
        first.sessions.reset_index(drop=True), second.sessions.reset_index(drop=True)
    )
