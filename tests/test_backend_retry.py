"""RetryPolicy and the OpenAI backend's retries against a loopback HTTP server."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_backend_openai import FakeServer, chat_body, request

from memlab.backends.caching.cache import CachedBackend
from memlab.backends.caching.cache_admin import cache_stats
from memlab.backends.remote.openai_compat import OpenAICompatibleBackend
from memlab.backends.remote.retry import (
    RetryableError,
    RetryExhaustedError,
    RetryPolicy,
    parse_retry_after,
)
from memlab.core.pipeline.llm import allow_model_requests


def test_parse_retry_after_seconds_ms_and_http_date() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"Retry-After": "Wed, 01 May 2024 12:00:07 GMT"}, now=now) == 7.0
    assert parse_retry_after({"Retry-After": "Wed, 01 May 2024 11:00:00 GMT"}, now=now) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"Retry-After": "-1"}) is None
    assert parse_retry_after({}) is None


def test_backoff_is_exponential_capped_and_jittered() -> None:
    plain = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.0)
    assert [plain.backoff(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    jittered = RetryPolicy(base_delay=1.0, max_delay=100.0, jitter=0.5, rng=random.Random(1))
    delays = [jittered.backoff(3) for _ in range(50)]
    assert all(2.0 <= d <= 6.0 for d in delays)
    assert len(set(delays)) > 1


def test_call_retries_then_succeeds_and_uses_retry_after() -> None:
    sleeps: list[float] = []
    outcomes: list[object] = [RetryableError("429", retry_after=2.5), RetryableError("503"), "ok"]

    def fn() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return str(outcome)

    policy = RetryPolicy(max_attempts=3, base_delay=0.5, jitter=0.0, sleep=sleeps.append)
    assert policy.call(fn) == "ok"
    assert sleeps == [2.5, 1.0]


def test_other_errors_are_not_retried() -> None:
    calls = []

    def fn() -> None:
        calls.append(1)
        raise KeyError("bad")

    with pytest.raises(KeyError):
        RetryPolicy(sleep=lambda s: None).call(fn)
    assert len(calls) == 1


def test_too_long_retry_after_stops_immediately() -> None:
    def fn() -> None:
        raise RetryableError("429", retry_after=3600)

    with pytest.raises(RetryExhaustedError, match="max_retry_after") as info:
        RetryPolicy(max_retry_after=60, sleep=lambda s: None).call(fn)
    assert info.value.attempts == 1


def test_429_with_retry_after_then_200_succeeds_after_the_wait(tmp_path: Path) -> None:
    script = [
        (429, {"Retry-After": "2"}, {"error": {"message": "rate limited"}}, 0.0),
        (200, {}, chat_body("hello"), 0.0),
    ]
    sleeps: list[float] = []
    with FakeServer(script) as server:
        backend = OpenAICompatibleBackend(
            "fake-model",
            base_url=server.base_url,
            retry=RetryPolicy(max_attempts=3, sleep=sleeps.append),
        )
        with allow_model_requests():
            completion = backend.complete(request())
    assert completion.text == "hello"
    assert sleeps == [2.0]
    assert len(server.requests) == 2


def test_persistent_500_exhausts_retries_and_caches_nothing(tmp_path: Path) -> None:
    script = [(500, {}, {"error": {"message": "boom"}}, 0.0)]
    sleeps: list[float] = []
    with FakeServer(script) as server:
        backend = OpenAICompatibleBackend(
            "fake-model",
            base_url=server.base_url,
            retry=RetryPolicy(max_attempts=3, base_delay=0.1, jitter=0.0, sleep=sleeps.append),
        )
        cached = CachedBackend(backend, tmp_path / "cache")
        with allow_model_requests(), pytest.raises(RetryExhaustedError) as info:
            cached.complete(request())
    message = str(info.value)
    assert "failed after 3 attempt(s)" in message and "HTTP 500" in message
    assert info.value.attempts == 3
    assert sleeps == [0.1, 0.2]
    assert len(server.requests) == 3
    assert cache_stats(tmp_path / "cache").entries == 0
    assert not any((tmp_path / "cache").rglob("*.json"))


def test_the_deadline_bounds_attempts_and_waits_together() -> None:
    """A request against a server that keeps failing ends by the deadline, not after
    max_attempts x timeout; each attempt is told how much time is left."""
    now = [0.0]
    remaining: list[float | None] = []

    def attempt(left: float | None) -> str:
        remaining.append(left)
        now[0] += 30.0  # every attempt times out after 30 s
        raise RetryableError("timed out")

    def sleep(seconds: float) -> None:
        now[0] += seconds

    policy = RetryPolicy(
        max_attempts=10, base_delay=10.0, max_delay=10.0, jitter=0.0, deadline=100.0,
        sleep=sleep, clock=lambda: now[0],
    )  # fmt: skip
    with pytest.raises(RetryExhaustedError, match="deadline of 100s") as failed:
        policy.run(attempt, describe="request")
    assert failed.value.attempts == 3  # 30 + 10 + 30 + 10 + 30 = 110: no third wait
    assert remaining == [100.0, 60.0, 20.0]
    assert now[0] <= 110.0


def test_the_backend_uses_the_time_left_as_its_timeout() -> None:
    with FakeServer([(500, {}, {"error": "down"}, 0.0)]) as server, allow_model_requests():
        backend = OpenAICompatibleBackend(
            "fake-model",
            base_url=server.base_url,
            timeout=120.0,
            retry=RetryPolicy(max_attempts=50, base_delay=0.2, jitter=0.0, deadline=1.0),
        )
        with pytest.raises(RetryExhaustedError, match="deadline"):
            backend.complete(request())
        assert 2 <= len(server.requests) < 10
