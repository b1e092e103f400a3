"""Pacing calls to a rate-limited model endpoint: requests and tokens a minute.

A hosted model answers HTTP 429 once a client passes its requests-per-minute or
tokens-per-minute limit. Retrying after each 429 turns a sweep into a storm of rejected
calls and backoffs; :class:`RateLimiter` sends calls no faster than the limit instead.

Pacing is two token buckets, one for requests and one for tokens. A bucket refills at
``limit / 60`` units a second up to a capacity of :data:`BURST_SECONDS` seconds of refill
(at least one call's worth), and starts full. A call *reserves* its units at once: the
bucket's level may go negative, and the call then waits until the refill has paid the debt
(``-level / rate`` seconds). Reservations are made under a lock and the wait happens outside
it, so concurrent callers queue in order, each waiting for its own slot; in the long run
calls go out at the limit, whatever the number of threads.

The limiter learns from the server:

- ``x-ratelimit-limit-requests`` / ``-tokens`` (per minute): the pace is the lower of the
  configured limit and the server's (a limit first learned so starts with an empty bucket:
  the calls sent before it was known used an unknown share of the server's burst);
- ``x-ratelimit-remaining-requests`` / ``-tokens``: a bucket never holds more than the
  server says remains (with no known limit, a remaining of 0 holds every call until
  ``x-ratelimit-reset-*`` has passed);
- HTTP 429 with ``Retry-After``: every caller holds until it has passed, and the buckets are
  emptied. The retried call itself waits once, in
  :class:`~memlab.backends.remote.retry.RetryPolicy`.

:class:`RateLimiters` hands out one limiter per endpoint and model, so every worker thread of
a sweep or QA step calling the same model shares one pace. Processes that call one endpoint
side by side (the workers of a Dask cluster) each pace at their share: built with
``parts=N``, a limiter divides the configured limits and those it learns by ``N``. Limits
never enter lane identities or cache keys: they change when calls are sent, not what is asked.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from memlab.core.base.clock import Scheduler

__all__ = [
    "BURST_SECONDS",
    "RateLimit",
    "RateLimitHeaders",
    "RateLimited",
    "RateLimiter",
    "RateLimiters",
    "parse_duration",
    "parse_rate_limit_headers",
]

BURST_SECONDS = 0.5
"""Seconds of refill a bucket holds: the burst a limiter allows after an idle spell. Providers
enforce per-minute limits over short windows, so a minute's worth at once would be refused;
holding less than a server's own burst leaves room for calls that arrive bunched."""

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class RateLimit:
    """Requests and tokens a minute one endpoint's model accepts (``None``: not limited).

    Raises:
        ValueError: A limit is not a positive finite number.
    """

    rpm: float | None = None
    tpm: float | None = None

    def __post_init__(self) -> None:
        for name, value in (("rpm", self.rpm), ("tpm", self.tpm)):
            if value is not None and not (0 < value < math.inf):
                raise ValueError(f"rate_limit.{name} must be a positive number, got {value!r}")

    def share(self, parts: int) -> RateLimit:
        """This limit divided among ``parts`` processes pacing independently."""
        return RateLimit(
            None if self.rpm is None else self.rpm / parts,
            None if self.tpm is None else self.tpm / parts,
        )


def parse_duration(text: str) -> float | None:
    """Seconds in a reset duration: ``"1s"``, ``"250ms"``, ``"6m0s"``, ``"1h2m3.5s"`` or a
    plain number of seconds; ``None`` when unparsable."""
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        parts = _DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            return None
        return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    return value if value >= 0 else None


@dataclass(frozen=True)
class RateLimitHeaders:
    """What a reply's ``x-ratelimit-*`` headers say (``None``: not sent or unparsable).

    Limits are per minute; resets are seconds until the server's bucket is full again.
    """

    limit_requests: float | None = None
    limit_tokens: float | None = None
    remaining_requests: float | None = None
    remaining_tokens: float | None = None
    reset_requests: float | None = None
    reset_tokens: float | None = None


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if 0 <= value < math.inf else None


def parse_rate_limit_headers(headers: Mapping[str, str] | None) -> RateLimitHeaders:
    """Read the ``x-ratelimit-*`` headers (names matched case-insensitively)."""
    lowered = {str(k).lower(): str(v) for k, v in (headers or {}).items()}

    def reset(name: str) -> float | None:
        raw = lowered.get(name)
        return None if raw is None else parse_duration(raw)

    return RateLimitHeaders(
        limit_requests=_number(lowered.get("x-ratelimit-limit-requests")),
        limit_tokens=_number(lowered.get("x-ratelimit-limit-tokens")),
        remaining_requests=_number(lowered.get("x-ratelimit-remaining-requests")),
        remaining_tokens=_number(lowered.get("x-ratelimit-remaining-tokens")),
        reset_requests=reset("x-ratelimit-reset-requests"),
        reset_tokens=reset("x-ratelimit-reset-tokens"),
    )


class _Clock(Protocol):
    def seconds(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class _Monotonic:
    def seconds(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


@dataclass
class _OnScheduler:
    scheduler: Scheduler

    def seconds(self) -> float:
        return self.scheduler.now().timestamp()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.scheduler.sleep(seconds)


@dataclass
class _Bucket:
    """Units refilling at ``per_minute / 60`` a second up to ``BURST_SECONDS`` of refill."""

    per_minute: float | None
    level: float = math.nan  # NaN: full (set on first use, when the capacity is known)
    at: float = 0.0

    def capacity(self, cost: float) -> float:
        assert self.per_minute is not None
        return max(self.per_minute / 60.0 * BURST_SECONDS, cost, 1.0)

    def refill(self, now: float, cost: float) -> None:
        if self.per_minute is None:
            return
        cap = self.capacity(cost)
        if math.isnan(self.level):
            self.level = cap
        else:
            self.level = min(cap, self.level + (now - self.at) * self.per_minute / 60.0)
        self.at = now

    def wait_after(self, cost: float) -> float:
        """Reserve ``cost`` units; the seconds until the refill has paid for them."""
        if self.per_minute is None:
            return 0.0
        self.level -= cost
        return max(0.0, -self.level / (self.per_minute / 60.0))

    def cap_level(self, remaining: float) -> None:
        if self.per_minute is not None and not math.isnan(self.level):
            self.level = min(self.level, remaining)
        elif self.per_minute is not None:
            self.level = remaining


@dataclass
class _Counts:
    calls: int = 0
    waited_s: float = 0.0
    holds: int = 0


class RateLimiter:
    """Paces calls to one endpoint's model (see the module docstring). Thread-safe.

    Args:
        limit: The configured limits (``RateLimit()``: none until the server sends some).
        scheduler: Clock and sleep (:class:`~memlab.core.base.clock.Scheduler`; a
            :class:`~memlab.core.base.clock.VirtualScheduler` in tests); default the monotonic
            clock and ``time.sleep``.
        parts: The number of processes pacing the same endpoint independently, this one
            among them: the configured and learned limits are divided by it.

    Raises:
        ValueError: ``parts`` is below 1.
    """

    def __init__(
        self,
        limit: RateLimit | None = None,
        scheduler: Scheduler | None = None,
        parts: int = 1,
    ):
        if parts < 1:
            raise ValueError(f"parts must be at least 1, got {parts}")
        self.parts = parts
        self.configured = (limit or RateLimit()).share(parts)
        self._clock: _Clock = _Monotonic() if scheduler is None else _OnScheduler(scheduler)
        self._requests = _Bucket(self.configured.rpm)
        self._tokens = _Bucket(self.configured.tpm)
        self._hold_until = -math.inf
        self._lock = threading.Lock()
        self._counts = _Counts()

    @property
    def limit(self) -> RateLimit:
        """The limits paced at now (configured, lowered by what the server declared)."""
        with self._lock:
            return RateLimit(self._requests.per_minute, self._tokens.per_minute)

    @property
    def calls(self) -> int:
        """Calls paced so far."""
        return self._counts.calls

    @property
    def waited_s(self) -> float:
        """Seconds callers were asked to wait in total."""
        return self._counts.waited_s

    def reserve(self, tokens: float) -> float:
        """Reserve one request of ``tokens`` tokens; the seconds the caller must wait."""
        with self._lock:
            now = self._clock.seconds()
            self._requests.refill(now, 1.0)
            self._tokens.refill(now, tokens)
            wait = max(
                self._requests.wait_after(1.0),
                self._tokens.wait_after(tokens),
                self._hold_until - now,
                0.0,
            )
            self._counts.calls += 1
            self._counts.waited_s += wait
            return wait

    def acquire(self, tokens: float) -> float:
        """Wait until one request of ``tokens`` tokens may be sent; the seconds waited."""
        wait = self.reserve(tokens)
        self._clock.sleep(wait)
        return wait

    def observe(self, headers: Mapping[str, str] | None) -> RateLimitHeaders:
        """Learn from a reply's ``x-ratelimit-*`` headers; what they said."""
        seen = parse_rate_limit_headers(headers)
        with self._lock:
            now = self._clock.seconds()
            for bucket, whole, remaining, reset in (
                (self._requests, seen.limit_requests, seen.remaining_requests, seen.reset_requests),
                (self._tokens, seen.limit_tokens, seen.remaining_tokens, seen.reset_tokens),
            ):
                limit = whole / self.parts if whole else whole
                if limit and bucket.per_minute is None:
                    # The calls sent before the limit was known used an unknown share of the
                    # server's burst: start empty.
                    bucket.per_minute, bucket.level, bucket.at = limit, 0.0, now
                elif limit and bucket.per_minute is not None:
                    bucket.refill(now, 0.0)
                    bucket.per_minute = min(bucket.per_minute, limit)
                if remaining is None:
                    continue
                if bucket.per_minute is not None:
                    bucket.refill(now, 0.0)
                    bucket.cap_level(remaining)
                elif remaining < 1 and reset is not None:
                    self._hold_until = max(self._hold_until, now + reset)
        return seen

    def hold(self, seconds: float) -> None:
        """The server refused a call and asked for ``seconds`` of quiet (429 ``Retry-After``):
        no call starts before then, and the buckets restart empty."""
        with self._lock:
            now = self._clock.seconds()
            self._hold_until = max(self._hold_until, now + seconds)
            self._counts.holds += 1
            for bucket in (self._requests, self._tokens):
                bucket.refill(now, 0.0)
                bucket.cap_level(0.0)
                bucket.at = max(bucket.at, now + seconds)


@dataclass
class RateLimiters:
    """One :class:`RateLimiter` per endpoint and model, shared by every thread that asks for
    it: the pace of a sweep or QA step. Thread-safe.

    Args:
        limits: Configured limits by backend spec (e.g. ``"openai:gpt-4o-mini"``); the key
            ``"*"`` applies to every spec without its own.
        scheduler: Clock and sleep of the limiters (default: the monotonic clock).
        parts: The number of processes sharing each endpoint's limit, this one among them
            (the workers of a Dask cluster): each limiter paces at its share.
    """

    limits: Mapping[str, RateLimit] = field(default_factory=dict)
    scheduler: Scheduler | None = None
    parts: int = 1
    _made: dict[tuple[str, str], RateLimiter] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def limit_for(self, spec: str) -> RateLimit:
        """The configured limit of a backend spec."""
        return self.limits.get(spec) or self.limits.get("*") or RateLimit()

    def get(self, endpoint: str, model: str, spec: str = "*") -> RateLimiter:
        """The limiter of ``model`` at ``endpoint`` (made with ``spec``'s limit on first use;
        the lower limit wins when two specs name the same endpoint and model)."""
        wanted = self.limit_for(spec)
        with self._lock:
            limiter = self._made.get((endpoint, model))
            if limiter is None:
                limiter = RateLimiter(wanted, self.scheduler, self.parts)
                self._made[(endpoint, model)] = limiter
            else:
                limiter.observe(_as_headers(wanted))
            return limiter


@runtime_checkable
class RateLimited(Protocol):
    """A backend whose calls a :class:`RateLimiter` paces (the OpenAI-compatible one)."""

    rate_limiter: RateLimiter

    def rate_limit_key(self) -> tuple[str, str]:
        """The endpoint and model whose limit the calls count against."""


def _as_headers(limit: RateLimit) -> dict[str, str]:
    """A configured limit in the form the server declares one (to lower a shared pace)."""
    out: dict[str, str] = {}
    if limit.rpm is not None:
        out["x-ratelimit-limit-requests"] = repr(limit.rpm)
    if limit.tpm is not None:
        out["x-ratelimit-limit-tokens"] = repr(limit.tpm)
    return out
