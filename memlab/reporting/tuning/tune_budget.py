"""The budgets of a search on wall time, model calls and tokens: no candidate starts once
one is spent.

:class:`TimeBudget` measures time on a clock it is given (the monotonic wall clock by default;
a test passes a clock it advances itself). The search checks it before its first candidate and
after each one; once spent, the study stops, finished candidates are kept in the study, and
:class:`TimeLimitError` says how far it got. The same command continues the search, with a
fresh budget.

:class:`CallBudget` counts the calls the search sends to the model (cache misses: a reply
the response cache answers costs nothing and counts nothing) and their prompt + completion
tokens: the candidates' replays, the evolution's replays and its reflection calls. It is
checked at the same points as the time budget, and before each replay outside the study (the
evolution's, the held-out proof's). A replay that starts under the budget runs to its end, so
the search can pass a budget by one replay's calls. Unlike time, the finished candidates'
calls (recorded in the study) count on a rerun: once spent, :class:`CallLimitError` says how
far the search got, and the same command with a larger budget continues it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from memlab.errors import MemlabError
from memlab.memory.strategy import asked_model

if TYPE_CHECKING:
    import optuna

__all__ = [
    "SENT",
    "CallBudget",
    "CallLimitError",
    "TimeBudget",
    "TimeLimitError",
    "sent_before",
    "sent_by",
    "wall_clock",
]

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


SENT = "sent"
"""The study's trial attribute holding a candidate's calls sent and their tokens."""


class CallLimitError(MemlabError):
    """The call or token budget stopped a search before a candidate, a replay or a reflection
    call.

    Attributes:
        path: The tune directory.
        budget: Which budget ran out: ``calls`` or ``tokens``.
        limit: The budget (calls, or prompt + completion tokens, sent to the model).
        used: What the search has sent (the finished candidates' included).
        done: Candidates finished (resumed ones included).
        wanted: Candidates asked for.
        before: What was not started (``the next candidate``, ``a reflection call``...).
    """

    def __init__(
        self, path: Path, budget: str, limit: int, used: int, done: int, wanted: int, before: str
    ) -> None:
        self.path = path
        self.budget = budget
        self.limit = limit
        self.used = used
        self.done = done
        self.wanted = wanted
        self.before = before
        what = "call" if budget == "calls" else "token"
        unit = f"{what}{'' if limit == 1 else 's'}" if budget == "calls" else "tokens"
        sent = "sent to the model" if budget == "calls" else "of the calls sent to the model"
        option = "--max-calls" if budget == "calls" else "--max-total-tokens"
        super().__init__(
            f"{path}: the {what} budget (at most {limit} {unit} {sent}; replies from the cache "
            f"not counted) ran out at {used} before {before}, after {done} of {wanted} "
            f"candidates; they are kept, and the same command with a larger {option} "
            "continues the search"
        )


_UNITS = ("calls", "tokens")


def _count(value: Any) -> int:
    """A recorded count (0 when absent or undefined)."""
    try:
        return 0 if value != value else int(value)  # NaN is not equal to itself
    except (TypeError, ValueError):
        return 0


def sent_by(calls: Any, owners: Sequence[str]) -> dict[str, int]:
    """The calls of a run's call table (a DataFrame) on ``owners`` that were sent to the
    model (asked it and not answered by the cache), and their prompt + completion tokens."""
    if calls.empty:
        return {"calls": 0, "tokens": 0}
    mine = calls[calls["user_id"].isin(set(owners))]
    asked = mine["skipped"].map(asked_model).astype(bool) if "skipped" in mine.columns else True
    sent = mine[asked & ~mine["cached"].astype(bool)]
    tokens = sent["prompt_tokens"].fillna(0).sum() + sent["completion_tokens"].fillna(0).sum()
    return {"calls": len(sent), "tokens": int(tokens)}


def sent_before(run_dir: Path, owners: Sequence[str]) -> dict[str, int]:
    """What :func:`sent_by` counts in the records a run directory already holds (a replay
    resumed there keeps them and sends only the rest)."""
    path = run_dir / "calls.jsonl"
    if not path.is_file():
        return {"calls": 0, "tokens": 0}
    lines = path.read_text("utf-8").splitlines()
    return sent_by(pd.DataFrame.from_records([json.loads(x) for x in lines if x.strip()]), owners)


@dataclass
class CallBudget:
    """At most ``max_calls`` calls and ``max_tokens`` tokens sent to the model (None: no
    limit); :meth:`add` counts them."""

    path: Path
    wanted: int
    max_calls: int | None = None
    max_tokens: int | None = None
    calls: int = 0
    tokens: int = 0
    done: int = 0
    """Candidates finished, as last counted (the error reports it)."""

    def resume(self, recorded: Sequence[dict[str, Any]]) -> None:
        """Count the finished candidates: each one's :data:`SENT` attribute, or for a trial
        recorded without it, its calls not from the cache and all their tokens (at most)."""
        self.done = len(recorded)
        for attrs in recorded:
            cost = attrs.get("cost", {})
            found = attrs.get(SENT) or {
                "calls": _count(cost.get("llm_calls")) - _count(cost.get("cache_hits")),
                "tokens": _count(cost.get("prompt_tokens")) + _count(cost.get("completion_tokens")),
            }
            self.add(found)

    last: dict[str, int] = field(default_factory=dict)
    """What the last :meth:`add` counted."""

    def add(self, sent: dict[str, int], before: dict[str, int] | None = None) -> None:
        """Count ``sent`` (as :func:`sent_by` gives it) less what was there ``before``."""
        self.last = {k: max(0, int(sent.get(k, 0)) - (before or {}).get(k, 0)) for k in _UNITS}
        self.calls += self.last["calls"]
        self.tokens += self.last["tokens"]

    def spent(self) -> str | None:
        """The budget used up (``calls`` or ``tokens``), or None."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            return "calls"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return "tokens"
        return None

    def error(self, before: str) -> CallLimitError:
        """Why nothing more starts (call only when :meth:`spent`)."""
        budget = self.spent() or "calls"
        limit, used = (
            (self.max_calls, self.calls) if budget == "calls" else (self.max_tokens, self.tokens)
        )
        return CallLimitError(self.path, budget, limit or 0, used, self.done, self.wanted, before)

    def check(self, before: str) -> None:
        """Raise :class:`CallLimitError` when a budget is used up."""
        if self.spent():
            raise self.error(before)

    def stop_when_spent(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        """An Optuna callback: count the finished candidate; stop the study once spent (its
        calls were counted as its replay ended)."""
        if trial.state.name == "COMPLETE":
            self.done += 1
        if self.spent():
            study.stop()
