"""Fewer garbage collections while sweeps run in this process.

A replay allocates many short-lived containers, and CPython's collector runs a young
collection every 700 net allocations (its default threshold); every tenth of those is a
middle one and, in turn, a full collection walks every live object, including the sweep's
long-lived ones (the loaded dataset, the matcher's readings of each gold fact) that grow
with the number of owners. While at least one sweep runs, :func:`fewer_collections` raises
the young threshold to :data:`YOUNG_THRESHOLD`, so all three kinds run less often; garbage
is collected as before, only in larger batches, and no result depends on when.

The thresholds are the process's, shared by every thread, so one count of the sweeps inside
is kept here under a lock: the first to enter raises the threshold, the last to leave
restores the thresholds found on entry, whatever order sweeps (nested, or overlapping on
other threads) leave in. Thresholds someone else set meanwhile are theirs and are left as
they are; so is a collector turned off by a young threshold of 0.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "fewer_collections"]

YOUNG_THRESHOLD = 20_000
"""The young-generation threshold while a sweep runs (CPython's default is 700)."""

_Thresholds = tuple[int, ...]


class _Raised:
    """The process's count of sweeps inside :func:`fewer_collections`, and what to restore."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inside = 0
        self._found: _Thresholds | None = None  # the thresholds when the first sweep entered
        self._set: _Thresholds | None = None  # what that entry set (None: nothing)

    def enter(self) -> None:
        with self._lock:
            self._inside += 1
            if self._inside > 1:
                return
            found = gc.get_threshold()
            self._found, self._set = found, None
            if 0 < found[0] < YOUNG_THRESHOLD:
                gc.set_threshold(YOUNG_THRESHOLD, *found[1:])
                self._set = gc.get_threshold()

    def leave(self) -> None:
        with self._lock:
            self._inside -= 1
            if self._inside > 0:
                return
            found, raised = self._found, self._set
            self._found = self._set = None
            # Thresholds changed while sweeps ran were set on purpose: they stay.
            if found is not None and raised is not None and gc.get_threshold() == raised:
                gc.set_threshold(*found)


_RAISED = _Raised()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the collector's young threshold while the block runs (see the module)."""
    _RAISED.enter()
    try:
        yield
    finally:
        _RAISED.leave()
