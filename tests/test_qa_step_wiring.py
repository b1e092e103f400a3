"""How the QA step hands its settings on and prepares its matcher, without replaying: the step
itself is replaced by a recorder, the run directory's loader by one returning a stand-in run
(its grid's ``rate_limit:`` key alone: what ``add_qa`` reads), the matcher by a spy, and the
replay record is written by hand, so every expected value is read off the arguments and the
record.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memlab.backends.caching.cache import CacheMode
from memlab.backends.local.llama_batch import BatchOptions
from memlab.backends.remote.rate_limit import RateLimit
from memlab.datasets.models import Owner
from memlab.grids.rate_limit_spec import RateLimitSpec
from memlab.postrun import qa_step
from memlab.postrun.qa_step import QAOptions, add_fates, add_qa

JOB, CAT, TEA = "Works as a nurse in Leeds", "Has a cat called Miso", "Likes green tea"


class _Step:
    """Records the step's calls and the directories loaded; every directory loads as ``run``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, rate_limit: Any = None) -> None:
        self.run = SimpleNamespace(grid=SimpleNamespace(rate_limit=rate_limit))
        self.calls: list[tuple[Any, Any, QAOptions]] = []
        self.loaded: list[Any] = []
        monkeypatch.setattr(qa_step, "run_qa", lambda *args: self.calls.append(args) or "done")
        monkeypatch.setattr(qa_step, "load_run", lambda path: self.loaded.append(path) or self.run)


def test_add_qa_defaults_are_the_documented_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    step = _Step(monkeypatch)
    assert add_qa("runs/r", None) == "done"
    [(run, spec, options)] = step.calls
    assert step.loaded == ["runs/r"]
    assert run is step.run and spec is None
    assert options.cache_dir is None and options.cache_mode is CacheMode.READ_WRITE
    assert options.max_workers == 8 and options.progress is True
    assert options.matcher is None and options.backend_factory is None
    assert options.prompts_dir is None and options.allow_incomplete is False
    assert options.max_judge_errors == 0.0
    assert options.spend is None and options.rates is None
    assert options.batch is None


def test_add_qa_hands_every_setting_to_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    step = _Step(monkeypatch)
    matcher, factory, limit = object(), (lambda spec: None), RateLimit(rpm=60, tpm=9000)
    spec = {"answer_backend": "agent"}
    add_qa(
        "runs/r",
        spec,
        cache_dir="cache",
        cache_mode=CacheMode.READ_ONLY,
        max_workers=3,
        progress=False,
        matcher=matcher,  # type: ignore[arg-type]
        backend_factory=factory,  # type: ignore[arg-type]
        prompts_dir="prompts",
        allow_incomplete=True,
        max_judge_errors=0.25,
        max_cost=1.5,
        rate_limit=limit,
        local_batch=3,
    )
    [(_, given, options)] = step.calls
    assert options.batch == BatchOptions(lanes=3)
    assert given is spec
    assert options.cache_dir == "cache" and options.cache_mode is CacheMode.READ_ONLY
    assert options.max_workers == 3 and options.progress is False
    assert options.matcher is matcher and options.backend_factory is factory
    assert options.prompts_dir == "prompts" and options.allow_incomplete is True
    assert options.max_judge_errors == 0.25
    assert options.spend is not None and options.spend.limit == 1.5
    assert options.spend.spent == 0.0
    # The limit paces every backend spec: it is the "*" entry.
    assert options.rates is not None
    assert options.rates.limit_for("openai:gpt-4o-mini") == limit
    assert dict(options.rates.limits) == {"*": limit}


def test_the_grids_rate_limit_paces_the_step_under_the_values_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    grid = RateLimitSpec(requests_per_minute=30, tokens_per_minute=5000)
    step = _Step(monkeypatch, grid)
    add_qa("runs/r", None)
    add_qa("runs/r", None, rate_limit=RateLimit(tpm=9000))
    (_, _, alone), (_, _, over) = step.calls
    assert alone.rates is not None and dict(alone.rates.limits) == {"*": RateLimit(30, 5000)}
    # The value given replaces the grid's tokens; its requests stay the grid's.
    assert over.rates is not None and dict(over.rates.limits) == {"*": RateLimit(30, 9000)}


def _owner() -> Owner:
    def session(n: int, facts: list[tuple[str, str]]) -> dict[str, Any]:
        start = f"2025-01-0{n + 1}T10:00:00Z"
        return {
            "thread_id": f"t{n}",
            "started_at": start,
            "messages": [
                {"role": "human", "content": f"Session {n}.", "timestamp": start},
                {"role": "ai", "content": "Noted.", "timestamp": f"2025-01-0{n + 1}T10:00:05Z"},
            ],
            "labels": {"facts": [{"id": i, "content": c, "category": "context"} for i, c in facts]},
        }

    return Owner.model_validate(
        {
            "user_id": "zoe",
            "sessions": [session(0, [("job", JOB), ("cat", CAT)]), session(1, [("tea", TEA)])],
        }
    )


class _Spy:
    """A matcher that compares texts exactly and records what it is asked to warm."""

    name = "spy"

    def __init__(self) -> None:
        self.warmed: list[list[str]] = []

    def covers(self, stored: str, gold: str) -> bool:
        return stored == gold

    def warm(self, texts: list[str]) -> None:
        self.warmed.append(list(texts))


def test_the_matcher_is_warmed_once_with_every_gold_and_stored_text() -> None:
    record = {
        "snapshots": [
            {"facts": [{"id": "m1", "content": "Nurse in Leeds"}, {"id": "m2"}]},
            {},  # a snapshot that stored nothing
        ]
    }
    spy = _Spy()
    add_fates(_owner(), record, [], spy)  # type: ignore[arg-type]
    # The gold facts session by session, then each stored fact ("" for one without content).
    assert spy.warmed == [[JOB, CAT, TEA, "Nurse in Leeds", ""]]
    # A record without snapshots warms the gold facts alone.
    alone = _Spy()
    add_fates(_owner(), {}, [], alone)  # type: ignore[arg-type]
    assert alone.warmed == [[JOB, CAT, TEA]]


def test_a_directory_is_loaded_once_and_a_run_is_used_as_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    step = _Step(monkeypatch)
    add_qa(tmp_path, None, max_cost=None, rate_limit=None)
    add_qa(step.run, None)  # type: ignore[arg-type]
    (first, _, options), (second, _, _) = step.calls
    assert step.loaded == [tmp_path]
    assert first is step.run and second is step.run
    assert options.spend is None and options.rates is None
