"""The tiered strategy step by step, on a scripted model: eviction by tokens, the summary
budget, importance above the threshold only, episodes, failed calls kept as records."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from memlab.backends.scripted import ScriptedBackend
from memlab.core.jsondoc.parsing import ParseOptions
from memlab.core.pipeline.llm import CompletionRequest, GenerationParams, OutputMode
from memlab.core.pipeline.queue import ConversationContext
from memlab.core.tiered_prompts import importance_prompt, summary_prompt
from memlab.memory.strategy import is_primary
from memlab.memory.tiers.tiered import TieredSettings, TieredStrategy
from memlab.memory.tiers.tiered_calls import TieredCaller
from memlab.sweeps.execute import unfinished
from memlab.sweeps.replay import OwnerReplay

START = datetime(2025, 1, 1, 9, tzinfo=UTC)


class _Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def _model(ratings: list[float], summary: str = "short") -> ScriptedBackend:
    """Key points "fact 1".. per summary call; importance replies rate them in order."""

    def reply(request: CompletionRequest) -> str:
        prompt = str(request.messages[-1]["content"])
        if summary_prompt().parse(prompt) is not None:
            points = [f"fact {i}" for i in range(1, len(ratings) + 1)]
            return json.dumps({"summary": summary, "keyPoints": points})
        if importance_prompt().parse(prompt) is not None:
            rated = [
                {"index": i, "importance": r, "category": "context"}
                for i, r in enumerate(ratings, start=1)
            ]
            return json.dumps({"ratings": rated})
        return "not a tiered prompt"

    return ScriptedBackend(function=reply)


def _strategy(backend: ScriptedBackend, clock: _Clock, **settings: Any) -> TieredStrategy:
    caller = TieredCaller(backend, OutputMode.FREE, GenerationParams(), ParseOptions(), 0, clock)
    return TieredStrategy.open(
        caller, None, TieredSettings(token_counting="char", **settings), clock
    )


def _messages(n: int, words: int = 40) -> list[dict[str, str]]:
    out = []
    for i in range(n):
        role = "human" if i % 2 == 0 else "ai"
        out.append({"role": role, "content": f"message {i} " + "word " * words})
    return out


def test_the_oldest_messages_are_evicted_by_tokens_into_the_summary() -> None:
    clock = _Clock()
    backend = _model([0.9])
    strategy = _strategy(backend, clock, working_tokens=120)  # ~55 tokens a message
    messages = _messages(6)
    step = strategy.process(ConversationContext("t1", messages[:2]))
    assert step.records[0]["skipped"] == "in_working_memory" and not backend.requests
    step = strategy.process(ConversationContext("t1", messages))
    assert [r["call"] for r in step.records] == ["summary", "importance"]
    folded = summary_prompt().parse(str(backend.requests[0].messages[-1]["content"]))
    assert folded is not None
    conversation = folded["conversation"]
    # Six messages of ~55 tokens in a 120-token window: the oldest four leave, two stay.
    assert "message 0 " in conversation and "message 3 " in conversation
    assert "message 4 " not in conversation and "message 5 " not in conversation
    assert [m.content for m in strategy.store.memories()] == ["fact 1"]
    assert len(strategy.store.episodes()) == 3  # one per (user message, reply)
    end = strategy.end_session("t1")
    assert end is not None and is_primary(end.records[0])
    assert strategy.end_session("t1") is None  # nothing left in the window
    strategy.close()


def test_only_ratings_above_the_threshold_are_stored() -> None:
    clock = _Clock()
    strategy = _strategy(_model([0.7, 0.71, 0.2, 1.0]), clock, working_tokens=10_000)
    strategy.process(ConversationContext("t1", _messages(2)))
    step = strategy.end_session("t1")
    assert step is not None
    importance = step.records[1]
    assert importance["stored"] == 2 and importance["rated"] == 4
    stored = {m.content: m.importance for m in strategy.store.memories()}
    assert stored == {"fact 2": 0.71, "fact 4": 1.0}
    view = strategy.snapshot()
    assert {f["content"]: f["confidence"] for f in view["facts"]} == stored
    assert view["user"]["topOfMind"]["summary"].startswith("short\n- fact 1")
    assert "message 0" in view["history"]["recentMonths"]["summary"]
    strategy.close()


def test_a_summary_over_its_budget_is_cut() -> None:
    clock = _Clock()
    strategy = _strategy(_model([], summary="x" * 20_000), clock, summary_tokens=100)
    strategy.process(ConversationContext("t1", _messages(2)))
    step = strategy.end_session("t1")
    assert step is not None and step.records[0]["summary_cut"] is True
    latest = strategy.store.session_summary("t1")
    assert latest is not None and len(latest[0]) <= 100 * 4
    strategy.close()


def test_a_failed_summary_is_a_parse_failure_record_and_stores_nothing() -> None:
    clock = _Clock()
    backend = ScriptedBackend(['{"summary": 3, "keyPoints": []}'], repeat_last=True)
    strategy = _strategy(backend, clock)
    strategy.process(ConversationContext("t1", _messages(2)))
    step = strategy.end_session("t1")
    assert step is not None and len(step.records) == 1
    record = step.records[0]
    assert record["error_stage"] == "parse" and record["parse"]["category"] == "schema_violation"
    assert strategy.store.session_summary("t1") is None
    strategy.close()


def test_time_passing_decays_unused_memories_into_forgetting_events() -> None:
    clock = _Clock()
    strategy = _strategy(_model([0.9]), clock)
    strategy.process(ConversationContext("t1", _messages(2)))
    strategy.end_session("t1")
    clock.now = START + timedelta(days=10)
    assert strategy.advance(clock.now) is None  # 0.9 * 0.95**10 is still above 0.1
    clock.now = START + timedelta(days=60)
    step = strategy.advance(clock.now)
    assert step is not None
    assert [e["kind"] for e in step.forgetting] == ["decayed"]
    assert step.forgetting[0]["removed"][0]["content"] == "fact 1"
    assert strategy.store.memories() == []
    strategy.close()


def test_a_replay_missing_a_primary_record_is_unfinished() -> None:
    summary = {"call": "summary", "error_stage": None}
    importance = {"call": "importance", "error_stage": None}
    done = OwnerReplay("u", calls=[summary, importance], updates=1)
    assert unfinished(done) == ""
    lost = OwnerReplay("u", calls=[importance], updates=1)
    assert unfinished(lost) == "1 updates ran but 0 were recorded"


def test_tiered_and_update_calls_record_a_failure_alike() -> None:
    """A server error of megabytes, with a key in it: both kinds of call keep the same
    redacted, cut message (one call path, one limit: 2,000 characters)."""
    from memlab.core.pipeline.llm import BackendError
    from memlab.core.pipeline.storage import InMemoryStorage
    from memlab.core.pipeline.updater import MemoryUpdater

    key = "A1b2C3d4" * 6
    text = f"server said Authorization: Bearer {key} " + "x" * 10_000

    def broken(request: CompletionRequest) -> str:
        raise BackendError(text)

    caller = TieredCaller(
        ScriptedBackend(function=broken), OutputMode.FREE, GenerationParams(), ParseOptions(),
        0, _Clock(),
    )  # fmt: skip
    tiered, data = caller.ask("summary", "a prompt", "t1")
    updater = MemoryUpdater(backend=ScriptedBackend(function=broken), storage=InMemoryStorage())
    update = updater.run_update([{"role": "human", "content": "I live in Oslo"}], "t1")
    assert data is None
    for result in (tiered, update):
        assert result.error_stage == "backend"
        assert result.error is not None and len(result.error) == 2000
        assert key not in result.error and result.error.startswith("server said ")
    assert tiered.error == update.error


def test_tiered_calls_take_the_updaters_call_path(monkeypatch: Any) -> None:
    """Send, failure record, redaction and parse are one path: a failure is recorded by
    memlab.core.pipeline.updater.record_failure, labelled with the call's kind."""
    import memlab.core.pipeline.updater as updater_module

    seen: list[tuple[str, str]] = []
    monkeypatch.setattr(
        updater_module, "record_failure", lambda r, stage, m, label="": seen.append((stage, label))
    )
    caller = TieredCaller(
        ScriptedBackend(replies=["not JSON"]), OutputMode.FREE, GenerationParams(),
        ParseOptions(), 0, _Clock(),
    )  # fmt: skip
    assert caller.ask("importance", "a prompt", "t1")[1] is None
    assert seen == [("parse", "tiered importance call")]
