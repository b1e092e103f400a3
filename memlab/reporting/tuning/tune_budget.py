"""The wall-time budget of a search: no candidate starts once it is spent.

:class:`TimeBudget` measures time on a clock it is given (the monotonic wall clock by default;
a test passes a clock it advances itself). The search checks it before its first candidate and
after each one; once spent, the study stops, finished candidates are kept in the study, and
:class:`TimeLimitError` says how far it got. The same command continues the search, with a
fresh budget.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memlab.errors import MemlabError

if TYPE_CHECKING:
    import optuna

__all__ = ["TimeBudget", "TimeLimitError", "wall_clock"]

Clock = Callable[[], float]


def wall_clock() -> float:
    """Seconds on the monotonic wall clock."""
    return time.monotonic()


class TimeLimitError(MemlabError):
    """The wall-time budget stopped a search before its last candidate.

    Attributes:
        path: The tune directory.
        max_time: The budget, in seconds.
        done: Candidates finished (resumed ones included).
        wanted: Candidates asked for.
    """

    def __init__(self, path: Path, max_time: float, done: int, wanted: int) -> None:
        self.path = path
        self.max_time = max_time
        self.done = done
        self.wanted = wanted
        super().__init__(
            f"{path}: the time budget ({max_time:g} s) stopped the search after {done} of "
            f"{wanted} candidates; they are kept, and the same command continues the search"
        )


class TimeBudget:
    """``max_time`` seconds from construction on ``clock`` (None: no limit)."""

    def __init__(self, max_time: float | None, clock: Clock | None = None) -> None:
        self.max_time = max_time
        self.clock = clock or wall_clock
        self.started = self.clock()
        self.ran_out = False
        """Whether a check found the budget used up (it stays so)."""

    def spent(self) -> bool:
        """Whether the budget is used up (checked on the clock, then remembered)."""
        if self.max_time is not None and not self.ran_out:
            self.ran_out = self.clock() - self.started >= self.max_time
        return self.ran_out

    def stop_when_spent(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        """An Optuna callback: stop the study once the budget is spent."""
        del trial
        if self.spent():
            study.stop()
