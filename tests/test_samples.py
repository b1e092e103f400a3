"""Repeated samples: each lane replayed N times with distinct seeds, cached apart, averaged."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import cache_entries, city_owners, update, write_owners

from memlab.backends.caching.cache import request_key
from memlab.backends.scripted import ScriptedBackend
from memlab.core.pipeline.llm import CompletionRequest, GenerationParams
from memlab.grids.grid import Grid
from memlab.postrun.rescoring import rescore
from memlab.runs.run import load_run
from memlab.sweeps.driver import sweep

T0 = datetime(2025, 5, 5, 9, 0, tzinfo=UTC)


def seeded(request: CompletionRequest) -> str:
    """A model whose answer depends on the seed: even seeds store the fact, odd ones nothing."""
    city = "Leeds" if "Leeds" in str(request.messages[-1]["content"]) else "Porto"
    return update(f"Lives in {city}") if (request.params.seed or 0) % 2 == 0 else update()


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    return write_owners(tmp_path / "d.jsonl", city_owners(T0))


def test_samples_replay_with_distinct_seeds_cache_apart_and_average(
    dataset: Path, tmp_path: Path
) -> None:
    grid = Grid.from_mapping(
        {"name": "s", "samples": 3, "replay_mode": "per_session", "base": {"temperature": 0.7}}
    )
    backend = ScriptedBackend(function=seeded)

    def run_it(model: ScriptedBackend) -> object:
        return sweep(
            dataset,
            grid,
            runs_dir=tmp_path / "runs",
            run_name="s",
            backend_factory=lambda spec: model,
            cache_dir=tmp_path / "cache",
            progress=False,
            resume=False,
        )

    run = run_it(backend)
    assert backend.call_count == 6  # 2 owners x 3 samples
    assert sorted(r.params.seed for r in backend.requests) == [0, 0, 1, 1, 2, 2]
    assert sorted(r.sample for r in backend.requests) == [0, 0, 1, 1, 2, 2]
    assert len(cache_entries(tmp_path / "cache")) == 6  # cached apart
    calls, sessions = run.calls, run.sessions  # type: ignore[attr-defined]
    assert sorted(calls["sample"]) == [0, 0, 1, 1, 2, 2]
    assert sorted(sessions["sample"]) == [0, 0, 1, 1, 2, 2]
    summary = run.summary.iloc[0]  # type: ignore[attr-defined]
    # Samples 0 and 2 store the fact, sample 1 does not: 2/3 on average for each owner.
    assert summary["recall"] == pytest.approx(2 / 3)
    assert summary["final_facts"] == pytest.approx(4 / 3)  # mean over samples, summed over owners
    # A rerun from the cache makes no call and gives the same numbers.
    again = ScriptedBackend(function=seeded)
    rerun = run_it(again)
    assert again.call_count == 0
    assert rerun.summary.iloc[0]["recall"] == pytest.approx(2 / 3)  # type: ignore[attr-defined]
    # Rescoring reads every sample's records.
    rescored = rescore(tmp_path / "runs" / "s")
    assert rescored.summary.iloc[0]["recall"] == pytest.approx(2 / 3)
    assert load_run(tmp_path / "runs" / "s").manifest["samples"] == 3


def test_the_cache_key_holds_the_sample_index_only_for_repeated_samples() -> None:
    base = CompletionRequest(messages=[{"role": "user", "content": "x"}], params=GenerationParams())
    again = CompletionRequest(
        messages=[{"role": "user", "content": "x"}], params=GenerationParams(), sample=0
    )
    other = CompletionRequest(
        messages=[{"role": "user", "content": "x"}], params=GenerationParams(), sample=1
    )
    assert request_key("b", "m", base) == request_key("b", "m", again)
    assert request_key("b", "m", base) != request_key("b", "m", other)
