"""Rate limits: the pacing arithmetic, headers learned, 429s honoured once, one pace shared.

Every expected wait is worked out by hand from the bucket rules in
``memlab.backends.remote.rate_limit``: a bucket refills at limit/60 units a second, holds half a
second of refill (at least one call's worth), starts full, and a call that takes it below zero
waits ``-level / rate`` seconds. Time is a :class:`VirtualScheduler`, never the wall clock.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from fake_openai import FakeServer, chat_body
from test_backend_openai import request

from memlab.backends.remote.openai_compat import OpenAICompatibleBackend
from memlab.backends.remote.rate_limit import (
    RateLimit,
    RateLimiter,
    RateLimiters,
    parse_duration,
    parse_rate_limit_headers,
)
from memlab.backends.remote.retry import RetryPolicy
from memlab.core.base.clock import VirtualScheduler
from memlab.core.pipeline.llm import allow_model_requests

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def elapsed(clock: VirtualScheduler) -> float:
    return (clock.now() - T0).total_seconds()


def test_requests_are_spaced_at_the_limit() -> None:
    clock = VirtualScheduler(T0)
    limiter = RateLimiter(RateLimit(rpm=60), clock)  # one a second, capacity one call
    waits = [limiter.acquire(0) for _ in range(4)]
    assert waits == [0.0, 1.0, 1.0, 1.0]
    assert elapsed(clock) == 3.0


def test_a_burst_of_one_second_then_the_refill_rate() -> None:
    clock = VirtualScheduler(T0)
    limiter = RateLimiter(RateLimit(rpm=240), clock)  # 4 a second, capacity 2
    waits = [limiter.reserve(0) for _ in range(6)]  # all at t=0, queued in order
    assert waits == [0.0, 0.0, 0.25, 0.5, 0.75, 1.0]
    clock.sleep(10.0)  # idle: refills to capacity, not beyond
    assert [limiter.reserve(0) for _ in range(4)] == [0.0, 0.0, 0.25, 0.5]


def test_tokens_pace_large_calls_and_the_slower_bucket_wins() -> None:
    clock = VirtualScheduler(T0)
    # 10 tokens a second; a 25-token call is bigger than a second's capacity: the capacity
    # grows to one call, so the first goes at once and the second waits 25 / 10 s.
    limiter = RateLimiter(RateLimit(tpm=600), clock)
    assert [limiter.reserve(25) for _ in range(2)] == [0.0, 2.5]

    both = RateLimiter(RateLimit(rpm=120, tpm=600), VirtualScheduler(T0))
    # requests: 2/s, capacity 1; tokens: 10/s, capacity 10 (one call). Calls of 10 tokens:
    # the token bucket allows one a second, the request bucket two.
    assert [both.reserve(10) for _ in range(3)] == [0.0, 1.0, 2.0]


def test_durations_and_headers_parse() -> None:
    assert parse_duration("6m0s") == 360.0
    assert parse_duration("250ms") == 0.25
    assert parse_duration("1h2m3.5s") == 3723.5
    assert parse_duration("0.5") == 0.5
    assert parse_duration("soon") is None
    assert parse_duration("1s later") is None
    seen = parse_rate_limit_headers(
        {
            "X-RateLimit-Limit-Requests": "500",
            "x-ratelimit-remaining-requests": "499",
            "x-ratelimit-reset-requests": "120ms",
            "x-ratelimit-limit-tokens": "30000",
            "x-ratelimit-remaining-tokens": "many",
            "x-ratelimit-reset-tokens": "1m2s",
        }
    )
    assert seen.limit_requests == 500
    assert seen.remaining_requests == 499
    assert seen.reset_requests == 0.12
    assert seen.limit_tokens == 30000
    assert seen.remaining_tokens is None
    assert seen.reset_tokens == 62.0


def test_headers_lower_the_pace_and_empty_the_buckets() -> None:
    clock = VirtualScheduler(T0)
    limiter = RateLimiter(RateLimit(rpm=600, tpm=600_000), clock)
    limiter.observe(
        {
            "x-ratelimit-limit-requests": "30",  # lower than configured: 30 wins
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-limit-tokens": "6000000",  # higher than configured: ignored
            "x-ratelimit-remaining-tokens": "0",
        }
    )
    assert limiter.limit == RateLimit(rpm=30, tpm=600_000)
    # requests: empty, 0.5/s -> 2 s; tokens: empty, 10,000/s -> 5,000 tokens wait 0.5 s.
    assert limiter.reserve(5000) == 2.0


def test_without_a_limit_a_remaining_of_zero_holds_until_the_reset() -> None:
    clock = VirtualScheduler(T0)
    limiter = RateLimiter(None, clock)
    assert limiter.reserve(100) == 0.0
    limiter.observe({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1.5s"})
    assert limiter.reserve(100) == 1.5
    clock.sleep(1.5)
    assert limiter.reserve(100) == 0.0


def test_a_429_with_retry_after_is_waited_once_and_holds_other_callers() -> None:
    clock = VirtualScheduler(T0)
    limiter = RateLimiter(None, clock)
    script = [
        (429, {"Retry-After": "2"}, {"error": {"message": "rate limited"}}, 0.0),
        (200, {}, chat_body("hello"), 0.0),
    ]
    retry_sleeps: list[float] = []

    def retry_sleep(seconds: float) -> None:
        retry_sleeps.append(seconds)
        clock.sleep(seconds)

    holds: list[float] = []
    original_hold = limiter.hold

    def recording_hold(seconds: float) -> None:
        holds.append(seconds)
        original_hold(seconds)
        holds.append(RateLimiter.reserve(limiter, 0))  # another caller, right after the 429

    limiter.hold = recording_hold  # type: ignore[method-assign]
    with FakeServer(script) as server:
        backend = OpenAICompatibleBackend(
            "fake-model",
            base_url=server.base_url,
            retry=RetryPolicy(max_attempts=3, sleep=retry_sleep),
            rate_limiter=limiter,
        )
        with allow_model_requests():
            completion = backend.complete(request())
    assert completion.text == "hello"
    assert len(server.requests) == 2
    assert holds == [2.0, 2.0]  # the other caller waits out the Retry-After too
    assert retry_sleeps == [2.0]
    assert elapsed(clock) == 2.0  # once, not once in the retry and again in the limiter


def test_headers_of_replies_reach_the_limiter() -> None:
    clock = VirtualScheduler(T0)
    limiter = RateLimiter(None, clock)
    headers = {"x-ratelimit-limit-requests": "120", "x-ratelimit-remaining-requests": "50"}
    with FakeServer([(200, headers, chat_body("hi"), 0.0)]) as server:
        backend = OpenAICompatibleBackend(
            "fake-model", base_url=server.base_url, rate_limiter=limiter
        )
        with allow_model_requests():
            backend.complete(request())
    assert limiter.limit.rpm == 120
    # A limit first learned starts empty (calls before it used an unknown share of the
    # burst), whatever the remaining says; it refills at two a second.
    assert limiter.reserve(0) == 0.5


class _FrozenClock:
    """A :class:`~memlab.core.base.clock.Scheduler` whose time stands still; sleeps are recorded
    (so the waits handed out depend only on the reservations, not on thread timing)."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def now(self) -> datetime:
        return T0

    def call_later(self, delay_s: float, callback: object) -> object:
        raise NotImplementedError

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)


def test_threads_share_one_pace_per_endpoint_and_model() -> None:
    clock = _FrozenClock()
    pool = RateLimiters({"openai:m": RateLimit(rpm=600)}, scheduler=clock)  # type: ignore[arg-type]
    got: list[RateLimiter] = []
    waits: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        limiter = pool.get("host:1", "m", "openai:m")
        mine = [limiter.acquire(0) for _ in range(5)]
        with lock:
            got.append(limiter)
            waits.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(limiter) for limiter in got}) == 1
    # 10 a second, capacity 5: the 40 calls at t=0 go in slots 0 (five of them), 0.1, ..., 3.5.
    expected = [0.0] * 5 + [round(0.1 * k, 6) for k in range(1, 36)]
    assert sorted(round(w, 6) for w in waits) == expected
    assert sorted(round(s, 6) for s in clock.sleeps) == expected[5:]  # the zero waits sleep not
    assert pool.get("host:1", "other", "openai:m") is not got[0]


def test_the_lower_limit_wins_when_two_specs_share_an_endpoint() -> None:
    pool = RateLimiters({"a": RateLimit(rpm=600), "b": RateLimit(rpm=300)})
    first = pool.get("host", "m", "a")
    assert pool.get("host", "m", "b") is first
    assert first.limit.rpm == 300


def test_limits_are_positive() -> None:
    with pytest.raises(ValueError, match=r"rate_limit\.rpm"):
        RateLimit(rpm=0)
    assert RateLimit(rpm=600, tpm=60_000).share(4) == RateLimit(rpm=150, tpm=15_000)


def test_lane_backends_give_one_limiter_to_specs_of_the_same_endpoint_and_model() -> None:
    from memlab.backends.caching.cache import CacheMode
    from memlab.grids.lane_backends import LaneBackends

    def factory(spec: str) -> OpenAICompatibleBackend:
        model = spec.split(":", 1)[1].split("@")[0]
        return OpenAICompatibleBackend(model, base_url="http://127.0.0.1:9/v1", api_key="k")

    pool = RateLimiters({"*": RateLimit(rpm=600)})
    lanes = LaneBackends(factory, None, CacheMode.OFF, rates=pool)
    a, b, c = (lanes.get(s) for s in ("openai:m", "openai:m@x", "openai:n"))
    assert isinstance(a, OpenAICompatibleBackend) and isinstance(b, OpenAICompatibleBackend)
    assert isinstance(c, OpenAICompatibleBackend)
    assert a is not b and a.rate_limiter is b.rate_limiter
    assert c.rate_limiter is not a.rate_limiter
    assert a.rate_limiter.limit.rpm == 600
