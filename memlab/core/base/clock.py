"""Time injection for the memory queue: a real scheduler and a virtual one.

The queue never calls ``threading.Timer``, ``time.sleep`` or ``datetime.now`` directly; it
asks a :class:`Scheduler`. :class:`RealScheduler` is the production implementation.
:class:`VirtualScheduler` keeps a virtual clock and a heap of pending callbacks so a replay can
push timestamped conversations through the real queue in milliseconds of real time.

Virtual semantics:

* ``call_later(delay, cb)`` schedules ``cb`` at ``now + delay``; nothing runs until the clock is
  driven with :meth:`VirtualScheduler.advance`, :meth:`~VirtualScheduler.advance_to` or
  :meth:`~VirtualScheduler.run_until_idle`, which run every due callback synchronously, in due
  time order (ties in scheduling order). Callbacks may schedule further callbacks; those that
  fall due inside the window being advanced also run.
* ``sleep(s)`` only moves the clock forward by ``s``; it never runs callbacks. Inside a callback
  (e.g. the queue's pause between two contexts) this models the time the work takes. Callbacks
  that became due during the sleep run at the next ``advance``/``run_until_idle``, and the clock
  never moves backwards to run them.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = [
    "RealScheduler",
    "Scheduler",
    "TimerHandle",
    "VirtualScheduler",
]


class TimerHandle(Protocol):
    """A scheduled callback that can be cancelled before it runs."""

    def cancel(self) -> None:
        """Cancel the callback; a no-op if it already ran or was cancelled."""


class Scheduler(Protocol):
    """Clock, timer factory and sleep used by the memory queue."""

    def now(self) -> datetime:
        """Return the current time (timezone-aware, UTC)."""

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` once after ``delay_s`` seconds; return a handle to cancel it."""

    def sleep(self, seconds: float) -> None:
        """Pause the calling code for ``seconds``."""


class RealScheduler:
    """Wall-clock scheduler: daemon ``threading.Timer`` threads and ``time.sleep``."""

    def now(self) -> datetime:
        """Return the current UTC time."""
        return datetime.now(UTC)

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> TimerHandle:
        """Start a daemon timer thread (it never keeps the process alive)."""
        timer = threading.Timer(max(0.0, delay_s), callback)
        timer.daemon = True
        timer.start()
        return timer

    def sleep(self, seconds: float) -> None:
        """Block the calling thread."""
        if seconds > 0:
            time.sleep(seconds)


@dataclass(order=True)
class _Entry:
    due: datetime
    seq: int
    callback: Callable[[], None] = field(compare=False)
    # True once cancelled or popped for running: the entry no longer counts as pending.
    cancelled: bool = field(default=False, compare=False)


class _VirtualTimer:
    """Handle returned by :meth:`VirtualScheduler.call_later`."""

    def __init__(self, scheduler: VirtualScheduler, entry: _Entry) -> None:
        self._scheduler = scheduler
        self._entry = entry

    def cancel(self) -> None:
        self._scheduler._cancel(self._entry)

    @property
    def due(self) -> datetime:
        """When the callback is (or was) due."""
        return self._entry.due


def _as_utc(dt: datetime, name: str) -> datetime:
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(
            f"{name} must be a timezone-aware datetime (got naive {dt.isoformat()}); "
            "pass e.g. datetime(..., tzinfo=UTC)"
        )
    return dt.astimezone(UTC)


class VirtualScheduler:
    """Deterministic scheduler on a virtual clock (see the module docstring for semantics).

    Args:
        start: Initial virtual time (timezone-aware; converted to UTC).

    The scheduler is safe to share between threads: its state is guarded by a lock that is
    never held while a callback runs, and only one thread dispatches callbacks at a time.
    """

    def __init__(self, start: datetime) -> None:
        self._now = _as_utc(start, "start")
        self._heap: list[_Entry] = []
        self._seq = 0
        self._live = 0
        self._lock = threading.Lock()
        # Held while dispatching; re-entrant so a callback may itself drive the clock.
        self._dispatch_lock = threading.RLock()

    def now(self) -> datetime:
        """Return the virtual time."""
        with self._lock:
            return self._now

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> TimerHandle:
        """Schedule ``callback`` at ``now + delay_s`` (negative delays count as 0)."""
        with self._lock:
            due = self._now + timedelta(seconds=max(0.0, delay_s))
            entry = _Entry(due, self._seq, callback)
            self._seq += 1
            self._live += 1
            heapq.heappush(self._heap, entry)
        return _VirtualTimer(self, entry)

    def sleep(self, seconds: float) -> None:
        """Move the virtual clock forward by ``seconds`` without running any callback."""
        if seconds < 0:
            raise ValueError(f"sleep length must be non-negative, got {seconds}")
        with self._lock:
            self._now += timedelta(seconds=seconds)

    def pending(self) -> int:
        """Return the number of scheduled, not cancelled, not yet run callbacks."""
        with self._lock:
            return self._live

    def next_due(self) -> datetime | None:
        """Return when the next pending callback is due, or None when idle."""
        with self._lock:
            self._drop_cancelled()
            return self._heap[0].due if self._heap else None

    def advance(self, seconds: float) -> int:
        """Advance the clock by ``seconds``, running every callback that falls due.

        Returns:
            The number of callbacks run.
        """
        if seconds < 0:
            raise ValueError(f"cannot advance by a negative duration ({seconds} s)")
        with self._dispatch_lock:
            target = self.now() + timedelta(seconds=seconds)
            return self._run_until(target)

    def advance_to(self, when: datetime) -> int:
        """Advance the clock to ``when``, running every callback due by then.

        A target earlier than the current time runs the overdue callbacks but does not move
        the clock backwards.

        Returns:
            The number of callbacks run.
        """
        target = _as_utc(when, "when")
        with self._dispatch_lock:
            return self._run_until(target)

    def run_until_idle(self, max_steps: int = 10_000) -> int:
        """Run callbacks in order, jumping the clock to each, until none is pending.

        Args:
            max_steps: Safety limit against callbacks that keep rescheduling themselves.

        Returns:
            The number of callbacks run.

        Raises:
            RuntimeError: More than ``max_steps`` callbacks ran without the heap emptying.
        """
        ran = 0
        with self._dispatch_lock:
            while True:
                entry = self._pop_due(None)
                if entry is None:
                    return ran
                if ran >= max_steps:
                    # Put it back so the state stays consistent for inspection.
                    with self._lock:
                        entry.cancelled = False
                        heapq.heappush(self._heap, entry)
                        self._live += 1
                    raise RuntimeError(
                        f"run_until_idle stopped after {max_steps} callbacks with work still "
                        "pending; a callback probably reschedules itself forever "
                        "(raise max_steps if this is expected)"
                    )
                entry.callback()
                ran += 1

    # -- internals -------------------------------------------------------------------------

    def _cancel(self, entry: _Entry) -> None:
        with self._lock:
            # Popped entries are already marked inactive, so nothing is counted twice.
            if not entry.cancelled:
                self._live -= 1
            entry.cancelled = True

    def _drop_cancelled(self) -> None:
        while self._heap and self._heap[0].cancelled:
            heapq.heappop(self._heap)

    def _pop_due(self, target: datetime | None) -> _Entry | None:
        """Pop the next live entry due by ``target`` (any when None) and move the clock."""
        with self._lock:
            self._drop_cancelled()
            if not self._heap:
                return None
            if target is not None and self._heap[0].due > target:
                return None
            entry = heapq.heappop(self._heap)
            self._live -= 1
            # Mark it so a late cancel() from the callback itself is a no-op.
            entry.cancelled = True
            if entry.due > self._now:
                self._now = entry.due
            return entry

    def _run_until(self, target: datetime) -> int:
        ran = 0
        while True:
            entry = self._pop_due(target)
            if entry is None:
                break
            entry.callback()
            ran += 1
        with self._lock:
            if target > self._now:
                self._now = target
        return ran
