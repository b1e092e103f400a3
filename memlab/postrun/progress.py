"""Progress of a long step: a bar on a terminal or in a notebook, sparse plain lines elsewhere.

A bar redraws itself with carriage returns, which a log file or a CI job's output keeps as
hundreds of fragments. When the stream is neither a terminal nor a notebook's output,
:class:`Progress` writes one plain line instead (``qa calls: 120/1360 (9%)``) each time another
tenth of the total is done or :data:`PLAIN_EVERY_SECONDS` have passed since the last line, and
a last line when the step ends. Every long step (the sweep's replays, the QA calls) goes
through it. The total may grow while the step runs (the QA step learns of its judge calls as
answers arrive); :meth:`Progress.add_total` says so.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

__all__ = ["PLAIN_EVERY_SECONDS", "Progress"]

PLAIN_EVERY_SECONDS = 60.0
"""Longest pause between two plain lines while the step advances."""


def _interactive(stream: TextIO) -> bool:
    """A terminal, or a Jupyter kernel's output stream (where tqdm draws a widget)."""
    if type(stream).__module__.startswith("ipykernel"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or minimal stream
        return False


class Progress:
    """Counts done units of a step of ``total`` (thread-safe); see the module docstring.

    Args:
        desc: The step's name, first on every line.
        unit: What is counted (``replay``, ``session``, ``call``).
        total: Units known at the start.
        enabled: ``False`` shows nothing.
        stream: Where to write (default: ``sys.stderr`` when the step starts).
        clock: Seconds on a monotonic clock (injectable for tests).
        every_seconds: Longest pause between two plain lines (default:
            :data:`PLAIN_EVERY_SECONDS`).
    """

    def __init__(
        self,
        desc: str,
        unit: str,
        total: int = 0,
        *,
        enabled: bool = True,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        every_seconds: float | None = None,
    ) -> None:
        self.desc, self.unit = desc, unit
        self.total, self.done = total, 0
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._every = PLAIN_EVERY_SECONDS if every_seconds is None else every_seconds
        self._lock = threading.Lock()
        self._bar: Any = None
        self._plain = False
        if enabled and _interactive(self._stream):
            # Imported here: tqdm.auto warns at import time in a notebook without ipywidgets.
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, file=self._stream)
        elif enabled:
            self._plain = True
        self._last_time = clock()
        self._last_tenth = 0
        self._last_line = ""

    def add_total(self, count: int) -> None:
        """``count`` more units to do than known so far."""
        if count == 0:
            return
        with self._lock:
            self.total += count
            if self._bar is not None:
                self._bar.total = self.total
                self._bar.refresh()

    def update(self, count: int = 1) -> None:
        """``count`` more units done."""
        if count == 0:
            return
        with self._lock:
            self.done += count
            if self._bar is not None:
                self._bar.update(count)
            elif self._plain:
                self._maybe_line()

    def line(self) -> str:
        """The plain line for the counts now: ``desc: done/total (pct%)``."""
        share = f" ({100 * self.done // self.total}%)" if self.total else ""
        return f"{self.desc}: {self.done}/{self.total} {self.unit}s{share}"

    def _maybe_line(self) -> None:
        tenth = 10 * self.done // self.total if self.total else 0
        now = self._clock()
        if tenth > self._last_tenth or now - self._last_time >= self._every:
            self._write()
            self._last_tenth, self._last_time = max(tenth, self._last_tenth), now

    def _write(self) -> None:
        text = self.line()
        if text != self._last_line:
            self._stream.write(text + "\n")
            self._stream.flush()
            self._last_line = text

    def close(self) -> None:
        """End the step: close the bar, or write the last plain line."""
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            elif self._plain and self.done:
                self._write()
            self._plain = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
