"""Retry with exponential backoff and jitter for transient backend failures.

Backends classify each failure as retryable or not (429, 5xx, timeouts and connection errors
are; bad requests and auth errors are not) and pass the server's ``Retry-After`` hint when it
sent one. :class:`RetryPolicy` decides how long to wait and when to give up, so the behaviour
is explicit and testable: the sleep function and the random source are injectable.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from memlab.core.pipeline.llm import BackendError
from memlab.errors import MemlabError

__all__ = [
    "RetryExhaustedError",
    "RetryPolicy",
    "RetryableError",
    "parse_retry_after",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class RetryableError(MemlabError):
    """A transient failure worth retrying.

    Attributes:
        retry_after: Seconds the server asked to wait (``Retry-After``), or ``None``.
        status: HTTP status code, or ``None`` for timeouts and connection errors.
    """

    def __init__(
        self, message: str, *, retry_after: float | None = None, status: int | None = None
    ):
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class RetryExhaustedError(BackendError):
    """Every attempt failed with a retryable error (or the server asked to wait too long).

    Attributes:
        attempts: Number of attempts made.
        last_error: The last retryable failure.
    """

    def __init__(self, message: str, *, attempts: int, last_error: RetryableError):
        super().__init__(message)
        self.attempts = attempts
        self.last_error = last_error


def parse_retry_after(
    headers: Mapping[str, str] | None, *, now: datetime | None = None
) -> float | None:
    """Return the wait in seconds a server asked for, or ``None``.

    Understands ``retry-after-ms`` (sent by OpenAI), ``Retry-After`` in seconds and
    ``Retry-After`` as an HTTP-date. Header names are matched case-insensitively; negative
    or unparsable values give ``None``.

    Args:
        headers: Response headers.
        now: Current time for HTTP-date values (defaults to the current UTC time).
    """
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
        except ValueError:
            value = -1.0
        if value >= 0:
            return value
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        current = now or datetime.now(UTC)
        return max(0.0, (when - current).total_seconds())
    return seconds if seconds >= 0 else None


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to retry transient failures.

    The n-th retry waits ``min(max_delay, base_delay * 2**(n-1))`` seconds, scaled by a random
    factor in ``[1 - jitter, 1 + jitter]`` (and capped at ``max_delay`` again). When the server
    sent ``Retry-After``, that wait is used instead (it is what the server asked for); a
    ``Retry-After`` longer than ``max_retry_after`` ends the retries at once with an error.

    The whole call, attempts and waits together, ends by ``deadline`` seconds after it
    started: no wait is begun that would end after it, and :meth:`run` tells each attempt how
    much time is left (a backend makes that its request timeout).

    Attributes:
        max_attempts: Total attempts including the first (1 disables retries).
        base_delay: Backoff of the first retry in seconds.
        max_delay: Upper bound of one backoff wait.
        jitter: Relative jitter in ``[0, 1]``; spreads concurrent clients apart.
        max_retry_after: Longest server-requested wait that is honoured.
        deadline: Seconds the whole call may take, retries included (``None``: no bound).
        sleep: Sleep function (injectable for tests).
        rng: Random source for jitter (``None``: a module-level generator).
        clock: Monotonic clock in seconds (injectable for tests).
    """

    max_attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    jitter: float = 0.25
    max_retry_after: float = 120.0
    deadline: float | None = 300.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)
    rng: random.Random | None = field(default=None, compare=False, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts}.")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("RetryPolicy.base_delay and max_delay must be >= 0.")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError(f"RetryPolicy.jitter must be within [0, 1], got {self.jitter}.")
        if self.deadline is not None and not self.deadline > 0:
            raise ValueError(f"RetryPolicy.deadline must be > 0 seconds, got {self.deadline}.")

    def backoff(self, retry_number: int) -> float:
        """Return the wait before retry ``retry_number`` (1-based) without a server hint."""
        delay = min(self.max_delay, self.base_delay * (2.0 ** max(0, retry_number - 1)))
        if self.jitter:
            rng = self.rng or _RNG
            delay *= rng.uniform(1.0 - self.jitter, 1.0 + self.jitter)
        return max(0.0, min(self.max_delay, delay))

    def call(self, fn: Callable[[], T], *, describe: str = "request") -> T:
        """Call ``fn`` until it succeeds, raises a non-retryable error, or attempts or the
        deadline run out (see :meth:`run`)."""
        return self.run(lambda _remaining: fn(), describe=describe)

    def run(self, fn: Callable[[float | None], T], *, describe: str = "request") -> T:
        """Call ``fn(remaining_seconds)`` until it succeeds, raises a non-retryable error, or
        attempts or the deadline run out.

        ``fn`` signals a transient failure by raising :class:`RetryableError`; any other
        exception propagates immediately. ``remaining_seconds`` is the time left before the
        deadline (``None`` without one).

        Raises:
            RetryExhaustedError: All attempts failed, ``Retry-After`` exceeded
                ``max_retry_after``, or the next wait would pass the deadline.
        """
        started = self.clock()
        attempt = 0
        while True:
            attempt += 1
            remaining = None if self.deadline is None else self.deadline - (self.clock() - started)
            try:
                return fn(remaining)
            except RetryableError as error:
                delay = self._next_delay(error, attempt, describe)
                spent = self.clock() - started
                if self.deadline is not None and spent + delay >= self.deadline:
                    raise RetryExhaustedError(
                        f"{describe} failed after {attempt} attempt(s) in {spent:.0f}s; last "
                        f"error: {error}. Waiting {delay:.1f}s more would pass the deadline of "
                        f"{self.deadline:.0f}s for one request: check that the server is up, "
                        "or raise RetryPolicy.deadline.",
                        attempts=attempt,
                        last_error=error,
                    ) from error
                logger.warning(
                    "%s: attempt %d/%d failed (%s); retrying in %.2fs",
                    describe,
                    attempt,
                    self.max_attempts,
                    error,
                    delay,
                )
                self.sleep(delay)

    def _next_delay(self, error: RetryableError, attempt: int, describe: str) -> float:
        """The wait before the next attempt, or raise when there is none."""
        if error.retry_after is not None and error.retry_after > self.max_retry_after:
            raise RetryExhaustedError(
                f"{describe} failed ({error}); the server asked to retry after "
                f"{error.retry_after:.0f}s, longer than max_retry_after="
                f"{self.max_retry_after:.0f}s. Wait and run again, or raise "
                "RetryPolicy.max_retry_after.",
                attempts=attempt,
                last_error=error,
            ) from error
        if attempt >= self.max_attempts:
            raise RetryExhaustedError(
                f"{describe} failed after {attempt} attempt(s); last error: {error}. "
                "The server kept failing with transient errors: check that it is "
                "up and not overloaded, or raise RetryPolicy.max_attempts.",
                attempts=attempt,
                last_error=error,
            ) from error
        return error.retry_after if error.retry_after is not None else self.backoff(attempt)


_RNG = random.Random()
