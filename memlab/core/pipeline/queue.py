"""Debounced queue of conversations waiting for a memory update.

``add`` keeps at most one pending context per thread (the latest wins) and restarts a debounce
timer; when the timer fires, every pending context is processed one by one, with a short pause
between them to stay clear of provider rate limits. Time comes from an injectable
:class:`~memlab.core.base.clock.Scheduler`, so a replay can drive the real queue on a virtual clock.

Re-entry: if the timer fires while a batch is still being processed, the queue re-arms the
timer once and returns; further fires during the same batch do nothing. When the batch ends,
any work that arrived meanwhile and has no timer pending gets a fresh debounce timer, so
nothing is stranded and nothing spins.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from memlab.core.base.clock import RealScheduler, Scheduler, TimerHandle

__all__ = [
    "ConversationContext",
    "MemoryUpdateQueue",
    "QueueSettings",
    "QueueStats",
    "get_memory_queue",
    "reset_memory_queue",
]

logger = logging.getLogger(__name__)


class QueueSettings(Protocol):
    """The part of the memory configuration the queue reads (at every ``add``)."""

    @property
    def enabled(self) -> bool:
        """False makes ``add`` a no-op."""

    @property
    def debounce_seconds(self) -> int:
        """Quiet period before pending contexts are processed."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class ConversationContext:
    """One conversation waiting for a memory update (a snapshot of its filtered messages)."""

    thread_id: str
    messages: list[Any]
    timestamp: datetime = field(default_factory=_utc_now)


@dataclass
class QueueStats:
    """Counters kept by a :class:`MemoryUpdateQueue`.

    Attributes:
        added: Contexts accepted by ``add``.
        coalesced: Pending contexts replaced by a newer one of the same thread.
        processed: Contexts handed to the processor.
        failed: Processor calls that raised or returned ``False`` (update not written).
        timer_fires: Debounce timer expiries.
        rearmed: Timers re-armed because work was pending while a batch was running.
    """

    added: int = 0
    coalesced: int = 0
    processed: int = 0
    failed: int = 0
    timer_fires: int = 0
    rearmed: int = 0


def _default_config() -> QueueSettings:
    from memlab.core.pipeline.config import get_memory_config

    config: QueueSettings = get_memory_config()
    return config


def _default_processor(context: ConversationContext) -> object:
    from memlab.core.pipeline.updater import MemoryUpdater

    return MemoryUpdater().update_memory(context.messages, context.thread_id)


class MemoryUpdateQueue:
    """Thread-safe debounce queue feeding a processor (by default ``MemoryUpdater``).

    Args:
        processor: Called with each context; its exceptions are logged and counted, never
            propagated. ``None`` uses ``MemoryUpdater().update_memory`` (created lazily).
        scheduler: Clock, timers and sleep; defaults to :class:`RealScheduler`.
        config_provider: Returns the current settings (``enabled``, ``debounce_seconds``);
            read at every ``add``. Defaults to ``memlab.core.pipeline.config.get_memory_config``.
        pause_seconds: Pause between two contexts of one batch (not after the last).
    """

    def __init__(
        self,
        processor: Callable[[ConversationContext], object] | None = None,
        *,
        scheduler: Scheduler | None = None,
        config_provider: Callable[[], QueueSettings] | None = None,
        pause_seconds: float = 0.5,
    ) -> None:
        if pause_seconds < 0:
            raise ValueError(f"pause_seconds must be >= 0, got {pause_seconds}")
        self._processor = processor or _default_processor
        self._scheduler: Scheduler = scheduler or RealScheduler()
        self._config_provider = config_provider or _default_config
        self._pause_seconds = pause_seconds
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue: list[ConversationContext] = []
        self._timer: TimerHandle | None = None
        self._timer_gen = 0
        self._debounce_seconds: float = 30.0
        self._processing = False
        self._processing_thread: int | None = None
        self._rearmed = False
        self._closed = False
        self._stats = QueueStats()

    # -- public API ------------------------------------------------------------------------

    @property
    def scheduler(self) -> Scheduler:
        """The scheduler that provides time to this queue."""
        return self._scheduler

    def add(self, thread_id: str, messages: Sequence[Any]) -> None:
        """Queue a conversation for a memory update and restart the debounce timer.

        A pending context of the same thread is replaced (the latest wins). A no-op when the
        configuration is disabled; after :meth:`close` the context is dropped with a warning.
        """
        config = self._config_provider()
        if not config.enabled:
            logger.debug("memory disabled; not queueing thread %s", thread_id)
            return
        debounce = float(config.debounce_seconds)
        with self._lock:
            if self._closed:
                logger.warning("memory queue is closed; dropping update for thread %s", thread_id)
                return
            context = ConversationContext(thread_id, list(messages), self._scheduler.now())
            kept = [c for c in self._queue if c.thread_id != thread_id]
            if len(kept) != len(self._queue):
                self._stats.coalesced += 1
            kept.append(context)
            self._queue = kept
            self._stats.added += 1
            self._debounce_seconds = debounce
            self._arm_timer_locked(debounce)
            pending = len(self._queue)
        logger.info(
            "queued memory update for thread %s (%d pending, debounce %.0f s)",
            thread_id,
            pending,
            debounce,
        )

    def flush(self) -> None:
        """Cancel the timer and process every pending context now, in the calling thread.

        If another thread is processing a batch, waits for it to finish first. Called from
        inside the processor, it only cancels the timer: the pending work gets a fresh
        timer when the running batch ends.
        """
        with self._lock:
            self._cancel_timer_locked()
            if self._processing and self._processing_thread == threading.get_ident():
                logger.debug("flush called while processing; pending work follows this batch")
                return
            while self._processing:
                self._idle.wait()
            # The finished batch may have armed a follow-up timer for the work we take now.
            self._cancel_timer_locked()
        self._process_queue()

    def clear(self) -> None:
        """Drop every pending context without processing it and cancel the timer."""
        with self._lock:
            dropped = len(self._queue)
            self._queue = []
            self._cancel_timer_locked()
        if dropped:
            logger.info("cleared %d pending memory update(s)", dropped)

    def close(self) -> None:
        """Process pending work now and refuse further adds."""
        with self._lock:
            self._closed = True
        self.flush()

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        with self._lock:
            return self._closed

    @property
    def pending_count(self) -> int:
        """Number of contexts waiting to be processed."""
        with self._lock:
            return len(self._queue)

    @property
    def is_processing(self) -> bool:
        """True while a batch is being processed."""
        with self._lock:
            return self._processing

    @property
    def stats(self) -> QueueStats:
        """A snapshot of the queue's counters."""
        with self._lock:
            return dataclasses.replace(self._stats)

    # -- internals -------------------------------------------------------------------------

    def _arm_timer_locked(self, delay: float) -> None:
        self._cancel_timer_locked()
        self._timer_gen += 1
        gen = self._timer_gen
        self._timer = self._scheduler.call_later(delay, lambda: self._on_timer(gen))

    def _cancel_timer_locked(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        # A timer thread that already started must see itself as stale.
        self._timer_gen += 1

    def _on_timer(self, gen: int) -> None:
        with self._lock:
            if gen != self._timer_gen:
                return  # replaced or cancelled after it had started
            self._timer = None
            self._stats.timer_fires += 1
        try:
            self._process_queue()
        except Exception:  # never let anything escape a timer thread
            logger.exception("memory queue timer callback failed")

    def _process_queue(self) -> None:
        """Process the pending batch, or re-arm the timer once if a batch is running."""
        with self._lock:
            if self._processing:
                if self._queue and self._timer is None and not self._rearmed:
                    self._rearmed = True
                    self._stats.rearmed += 1
                    self._arm_timer_locked(self._debounce_seconds)
                    logger.debug("memory queue busy; timer re-armed")
                return
            if not self._queue:
                return
            batch = self._queue
            self._queue = []
            self._processing = True
            self._processing_thread = threading.get_ident()
        try:
            self._run_batch(batch)
        finally:
            with self._lock:
                self._processing = False
                self._processing_thread = None
                self._rearmed = False
                if self._queue and self._timer is None and not self._closed:
                    # Work arrived during the batch and its timer fired or was cancelled.
                    self._stats.rearmed += 1
                    self._arm_timer_locked(self._debounce_seconds)
                self._idle.notify_all()

    def _run_batch(self, batch: list[ConversationContext]) -> None:
        logger.info("processing %d memory update(s)", len(batch))
        for index, context in enumerate(batch):
            if index > 0 and self._pause_seconds > 0:
                self._scheduler.sleep(self._pause_seconds)
            failed = False
            try:
                result = self._processor(context)
                if result is False:
                    failed = True
                    # The processor logged why (the updater: at WARNING, or INFO for a reply
                    # that did not parse); one line per failure is enough.
                    logger.info("memory update for thread %s was not written", context.thread_id)
            except Exception:
                failed = True
                logger.exception("memory update for thread %s failed", context.thread_id)
            with self._lock:
                self._stats.processed += 1
                if failed:
                    self._stats.failed += 1


_instance: MemoryUpdateQueue | None = None
_instance_lock = threading.Lock()


def get_memory_queue() -> MemoryUpdateQueue:
    """Return the process-wide queue, creating it on first use."""
    global _instance
    with _instance_lock:
        if _instance is None:
            _instance = MemoryUpdateQueue()
        return _instance


def reset_memory_queue() -> None:
    """Drop the process-wide queue: its pending work is cleared and it is closed."""
    global _instance
    with _instance_lock:
        old = _instance
        _instance = None
    if old is not None:
        old.clear()
        old.close()
