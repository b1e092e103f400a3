"""How the QA step hands its settings on and prepares its matcher, without replaying: the step
itself is replaced by a recorder, the matcher by a spy, and the replay record is written by
hand, so every expected value is read off the arguments and the record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memlab.backends.caching.cache import CacheMode
from memlab.backends.remote.rate_limit import RateLimit
from memlab.datasets.models import Owner
from memlab.postrun import qa_step
from memlab.postrun.qa_step import QAOptions, add_fates, add_qa

JOB, CAT, TEA = "Works as a nurse in Leeds", "Has a cat called Miso", "Likes green tea"


def _recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, Any, QAOptions]]:
    calls: list[tuple[Any, Any, QAOptions]] = []
    monkeypatch.setattr(qa_step, "run_qa", lambda *args: calls.append(args) or "done")
    return calls


def test_add_qa_defaults_are_the_documented_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _recorded(monkeypatch)
    assert add_qa("runs/r", None) == "done"
    [(run, spec, options)] = calls
    assert (run, spec) == ("runs/r", None)
    assert options.cache_dir is None and options.cache_mode is CacheMode.READ_WRITE
    assert options.max_workers == 8 and options.progress is True
    assert options.matcher is None and options.backend_factory is None
    assert options.prompts_dir is None and options.allow_incomplete is False
    assert options.max_judge_errors == 0.0
    assert options.spend is None and options.rates is None


def test_add_qa_hands_every_setting_to_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _recorded(monkeypatch)
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
    )
    [(_, given, options)] = calls
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
    assert options.rates.limit_for("openai:gpt-4o-mini") is limit
    assert dict(options.rates.limits) == {"*": limit}


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


def test_the_run_directory_argument_is_passed_on_unread(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = _recorded(monkeypatch)
    add_qa(tmp_path, None, max_cost=None, rate_limit=None)
    [(run, _, options)] = calls
    assert run == tmp_path and options.spend is None and options.rates is None
