"""Debounce queue on a virtual clock, plus one real-timer smoke test (SPEC §1.8)."""

from __future__ import annotations

import itertools
import sys
import threading
import time
import types
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

import memlab.core.pipeline.queue as queue_module
from memlab.core.base.clock import RealScheduler, VirtualScheduler
from memlab.core.pipeline.queue import (
    ConversationContext,
    MemoryUpdateQueue,
    get_memory_queue,
    reset_memory_queue,
)

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


class Settings(SimpleNamespace):
    enabled: bool
    debounce_seconds: int


class Recorder:
    """Processor that records (virtual time, thread id, messages) for each call."""

    def __init__(self, scheduler: VirtualScheduler) -> None:
        self.scheduler = scheduler
        self.calls: list[tuple[datetime, str, list[Any]]] = []

    def __call__(self, ctx: ConversationContext) -> bool:
        self.calls.append((self.scheduler.now(), ctx.thread_id, ctx.messages))
        return True


def make_queue(
    debounce: int = 30, enabled: bool = True, pause: float = 0.5
) -> tuple[MemoryUpdateQueue, VirtualScheduler, Recorder, Settings]:
    sched = VirtualScheduler(T0)
    rec = Recorder(sched)
    settings = Settings(enabled=enabled, debounce_seconds=debounce)
    q = MemoryUpdateQueue(
        rec, scheduler=sched, config_provider=lambda: settings, pause_seconds=pause
    )
    return q, sched, rec, settings


def msgs(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]


# -- virtual scheduler -----------------------------------------------------------------------


def test_virtual_scheduler_runs_in_time_then_schedule_order() -> None:
    sched = VirtualScheduler(T0)
    order: list[str] = []
    sched.call_later(5, lambda: order.append("b"))
    sched.call_later(1, lambda: order.append("a"))
    sched.call_later(5, lambda: order.append("c"))
    handle = sched.call_later(3, lambda: order.append("cancelled"))
    handle.cancel()
    assert sched.pending() == 3
    assert sched.advance(2) == 1
    assert order == ["a"]
    assert sched.now() == T0 + timedelta(seconds=2)
    sched.advance(10)
    assert order == ["a", "b", "c"]
    assert sched.now() == T0 + timedelta(seconds=12)
    assert sched.pending() == 0


def test_virtual_scheduler_nested_scheduling_and_sleep() -> None:
    sched = VirtualScheduler(T0)
    seen: list[datetime] = []

    def first() -> None:
        seen.append(sched.now())
        sched.sleep(2)  # only moves the clock
        sched.call_later(1, lambda: seen.append(sched.now()))  # due at +13: inside the window
        sched.call_later(100, lambda: seen.append(sched.now()))  # outside the window

    sched.call_later(10, first)
    sched.advance(20)
    assert seen == [T0 + timedelta(seconds=10), T0 + timedelta(seconds=13)]
    assert sched.pending() == 1
    assert sched.run_until_idle() == 1
    assert seen[-1] == T0 + timedelta(seconds=112)


def test_virtual_scheduler_guards() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        VirtualScheduler(datetime(2025, 1, 1))
    sched = VirtualScheduler(T0)
    with pytest.raises(ValueError):
        sched.advance(-1)
    sched.advance_to(T0 - timedelta(seconds=5))  # never moves backwards
    assert sched.now() == T0

    def again() -> None:
        sched.call_later(1, again)

    sched.call_later(1, again)
    with pytest.raises(RuntimeError, match="max_steps"):
        sched.run_until_idle(max_steps=50)


# -- queue -----------------------------------------------------------------------------------


def test_debounce_coalesces_same_thread_latest_wins() -> None:
    q, sched, rec, _ = make_queue(debounce=30)
    q.add("A", msgs("first"))
    sched.advance(10)
    q.add("A", msgs("second"))
    assert q.pending_count == 1
    sched.advance(29)  # 39 s after the first add, 29 after the second: not yet
    assert rec.calls == []
    sched.advance(1)
    assert len(rec.calls) == 1
    when, thread, messages = rec.calls[0]
    assert thread == "A"
    assert messages[0]["content"] == "second"
    assert when == T0 + timedelta(seconds=40)
    stats = q.stats
    assert (stats.added, stats.coalesced, stats.processed, stats.timer_fires) == (2, 1, 1, 1)
    assert q.pending_count == 0


def test_two_threads_processed_in_one_fire_with_pause() -> None:
    q, sched, rec, _ = make_queue(debounce=30, pause=0.5)
    q.add("A", msgs("a"))
    q.add("B", msgs("b"))
    q.add("C", msgs("c"))
    sched.advance(30)
    assert [thread for _, thread, _ in rec.calls] == ["A", "B", "C"]
    times = [when for when, _, _ in rec.calls]
    assert times[0] == T0 + timedelta(seconds=30)
    assert [b - a for a, b in itertools.pairwise(times)] == [timedelta(seconds=0.5)] * 2
    # No pause after the last context.
    assert sched.now() == T0 + timedelta(seconds=31)
    assert q.stats.timer_fires == 1


def test_context_timestamp_comes_from_scheduler() -> None:
    sched = VirtualScheduler(T0)
    seen: list[ConversationContext] = []
    q = MemoryUpdateQueue(
        seen.append,
        scheduler=sched,
        config_provider=lambda: Settings(enabled=True, debounce_seconds=5),
    )
    sched.advance(7)
    q.add("A", msgs("x"))
    q.flush()
    assert seen[0].timestamp == T0 + timedelta(seconds=7)


def test_messages_list_is_snapshotted() -> None:
    q, _, rec, _ = make_queue()
    messages = msgs("x")
    q.add("A", messages)
    messages.append({"role": "user", "content": "later"})
    q.flush()
    assert len(rec.calls[0][2]) == 2


def test_debounce_read_at_each_add() -> None:
    q, sched, rec, settings = make_queue(debounce=30)
    settings.debounce_seconds = 5
    q.add("A", msgs("x"))
    sched.advance(5)
    assert len(rec.calls) == 1


def test_reentry_while_processing_rearms_once_without_spinning() -> None:
    sched = VirtualScheduler(T0)
    settings = Settings(enabled=True, debounce_seconds=30)
    calls: list[tuple[str, str]] = []
    # Observed inside the processor, asserted outside: the queue catches (and only logs)
    # whatever the processor raises, an AssertionError included.
    inside: list[tuple[str, bool, int, int, int]] = []
    q: MemoryUpdateQueue

    def observe(step: str) -> None:
        stats = q.stats
        inside.append((step, q.is_processing, stats.rearmed, sched.pending(), q.pending_count))

    def processor(ctx: ConversationContext) -> bool:
        calls.append((ctx.thread_id, ctx.messages[0]["content"]))
        if ctx.thread_id == "A":
            # A new turn arrives while this update is running, and its timer fires (several
            # times over) before the update finishes.
            q.add("B", msgs("b"))
            sched.advance(30)  # fires B's timer: busy -> re-armed once
            observe("first fire")
            sched.advance(30)  # fires the re-armed timer: still busy -> nothing new
            sched.advance(30)
            observe("later fires")
        return True

    q = MemoryUpdateQueue(processor, scheduler=sched, config_provider=lambda: settings)
    q.add("A", msgs("a"))
    sched.advance(30)
    assert inside == [
        # (step, is_processing, rearmed, timers pending, contexts pending)
        ("first fire", True, 1, 1, 1),
        ("later fires", True, 1, 0, 1),
    ]
    assert calls == [("A", "a")]
    assert not q.is_processing
    # The batch ended with B still pending: it got one fresh timer.
    assert sched.pending() == 1
    assert q.stats.rearmed == 2
    assert sched.run_until_idle() == 1
    assert calls == [("A", "a"), ("B", "b")]
    stats = q.stats
    assert stats.timer_fires == 4
    assert (stats.processed, stats.failed) == (2, 0)
    assert q.pending_count == 0


def test_flush_processes_now_and_cancels_timer() -> None:
    q, sched, rec, _ = make_queue()
    q.add("A", msgs("a"))
    q.add("B", msgs("b"))
    q.flush()
    assert [t for _, t, _ in rec.calls] == ["A", "B"]
    assert rec.calls[0][0] == T0
    assert sched.pending() == 0
    sched.advance(100)
    assert len(rec.calls) == 2
    assert q.stats.timer_fires == 0


def test_clear_drops_pending_work() -> None:
    q, sched, rec, _ = make_queue()
    q.add("A", msgs("a"))
    assert q.pending_count == 1
    q.clear()
    assert q.pending_count == 0
    assert sched.pending() == 0
    sched.advance(100)
    assert rec.calls == []


def test_is_processing_visible_inside_processor() -> None:
    sched = VirtualScheduler(T0)
    states: list[tuple[bool, int]] = []
    q: MemoryUpdateQueue

    def processor(ctx: ConversationContext) -> None:
        states.append((q.is_processing, q.pending_count))

    q = MemoryUpdateQueue(
        processor,
        scheduler=sched,
        config_provider=lambda: Settings(enabled=True, debounce_seconds=1),
    )
    assert not q.is_processing
    q.add("A", msgs("a"))
    sched.advance(1)
    assert states == [(True, 0)]
    assert not q.is_processing


def test_processor_exception_counted_and_next_run_works(caplog: pytest.LogCaptureFixture) -> None:
    sched = VirtualScheduler(T0)
    seen: list[str] = []

    def processor(ctx: ConversationContext) -> bool:
        if ctx.thread_id == "bad":
            raise RuntimeError("model exploded")
        seen.append(ctx.thread_id)
        return ctx.thread_id != "unsaved"

    q = MemoryUpdateQueue(
        processor,
        scheduler=sched,
        config_provider=lambda: Settings(enabled=True, debounce_seconds=10),
    )
    q.add("bad", msgs("x"))
    q.add("good", msgs("y"))
    with caplog.at_level("ERROR", logger="memlab.core.pipeline.queue"):
        sched.advance(10)
    assert seen == ["good"]
    assert "model exploded" in caplog.text
    assert not q.is_processing
    q.add("unsaved", msgs("z"))
    q.add("next", msgs("z"))
    sched.advance(10)
    assert seen == ["good", "unsaved", "next"]
    stats = q.stats
    assert (stats.processed, stats.failed) == (4, 2)


def test_disabled_config_short_circuits_add() -> None:
    q, sched, _rec, settings = make_queue(enabled=False)
    q.add("A", msgs("a"))
    assert q.pending_count == 0
    assert sched.pending() == 0
    settings.enabled = True  # read at each call
    q.add("A", msgs("a"))
    assert q.pending_count == 1
    assert q.stats.added == 1


def test_close_flushes_and_refuses_adds(caplog: pytest.LogCaptureFixture) -> None:
    q, _, rec, _ = make_queue()
    q.add("A", msgs("a"))
    q.close()
    assert len(rec.calls) == 1
    assert q.closed
    with caplog.at_level("WARNING", logger="memlab.core.pipeline.queue"):
        q.add("B", msgs("b"))
    assert q.pending_count == 0
    assert "closed" in caplog.text


def test_negative_pause_rejected() -> None:
    with pytest.raises(ValueError, match="pause_seconds"):
        MemoryUpdateQueue(lambda ctx: None, pause_seconds=-1)


def test_singleton_get_and_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    reset_memory_queue()
    first = get_memory_queue()
    assert get_memory_queue() is first
    reset_memory_queue()
    assert first.closed
    second = get_memory_queue()
    assert second is not first
    reset_memory_queue()
    assert queue_module._instance is None


def test_default_processor_uses_memory_updater(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[list[Any], str | None]] = []

    class FakeUpdater:
        def update_memory(self, messages: list[Any], thread_id: str | None = None) -> bool:
            calls.append((messages, thread_id))
            return True

    # A stand-in module, so this test only checks the queue's lazy default wiring.
    monkeypatch.setitem(
        sys.modules,
        "memlab.core.pipeline.updater",
        types.SimpleNamespace(MemoryUpdater=FakeUpdater),
    )
    q = MemoryUpdateQueue(
        scheduler=VirtualScheduler(T0),
        config_provider=lambda: Settings(enabled=True, debounce_seconds=30),
    )
    q.add("T", msgs("hello"))
    q.flush()
    assert calls == [(msgs("hello"), "T")]


def test_real_scheduler_fires() -> None:
    done = threading.Event()
    seen: list[str] = []

    def processor(ctx: ConversationContext) -> None:
        seen.append(ctx.thread_id)
        done.set()

    q = MemoryUpdateQueue(
        processor,
        scheduler=RealScheduler(),
        config_provider=lambda: Settings(enabled=True, debounce_seconds=1),
    )
    start = time.monotonic()
    q.add("real", msgs("x"))
    assert q.pending_count == 1
    assert done.wait(timeout=3.0), "debounce timer did not fire within 3 s"
    assert time.monotonic() - start >= 0.9
    assert seen == ["real"]
    q.close()


def test_flush_from_another_thread_waits_for_running_batch() -> None:
    sched = VirtualScheduler(T0)
    release = threading.Event()
    started = threading.Event()
    order: list[str] = []

    released: list[bool] = []  # asserted outside: the queue would swallow an AssertionError

    def processor(ctx: ConversationContext) -> None:
        order.append(f"start {ctx.thread_id}")
        if ctx.thread_id == "A":
            started.set()
            released.append(release.wait(timeout=5))
        order.append(f"end {ctx.thread_id}")

    q = MemoryUpdateQueue(
        processor,
        scheduler=sched,
        config_provider=lambda: Settings(enabled=True, debounce_seconds=30),
    )
    q.add("A", msgs("a"))
    timer_thread = threading.Thread(target=sched.advance, args=(30,))
    timer_thread.start()
    assert started.wait(timeout=5)
    q.add("B", msgs("b"))
    flusher = threading.Thread(target=q.flush)
    flusher.start()
    flusher.join(timeout=0.2)
    assert flusher.is_alive()  # blocked until the running batch ends
    release.set()
    flusher.join(timeout=5)
    timer_thread.join(timeout=5)
    assert not flusher.is_alive() and not timer_thread.is_alive()
    assert released == [True]
    assert order == ["start A", "end A", "start B", "end B"]
    assert q.pending_count == 0
    assert sched.pending() == 0  # no stray follow-up timer
    assert (q.stats.processed, q.stats.failed) == (2, 0)
