"""Throughput and 429s of 8 threads against a rate-limited loopback OpenAI-compatible server.

The script starts a server on 127.0.0.1 that enforces ``--rpm`` requests and ``--tpm``
tokens a minute (default 600 and 60,000) as providers do: a bucket per limit refilling
continuously, holding ``--server-burst`` seconds of the limit (default 1 s), charging a call
its prompt at four characters a token plus its ``max_tokens`` on arrival. A call over either
limit is answered 429 with ``Retry-After`` (seconds until it would fit); every reply carries
``x-ratelimit-limit/remaining/reset-requests`` and ``-tokens``. Each call asks for 100 tokens
(60 of prompt, 40 of ``max_tokens``), so both limits bind at once.

8 threads call one model through the sweep's backend path (:class:`LaneBackends`, the
registry's ``openai:`` backend, its retry policy) for ``--seconds`` each, in three modes:

- **unpaced**: the backend only retries after 429s (honouring ``Retry-After``);
- **configured**: paced by a shared limiter told the limits (``rate_limit: {rpm, tpm}``);
- **learned**: paced by a shared limiter told nothing, learning the limits from the headers.

Then the same two paced modes on ``dask-local:2x4`` (2 worker processes of 4 threads, the
sweep's executor and its workers' backend path, :func:`memlab.sweeps.remote.worker_backend`):
each worker process paces at its share of the limit, configured or learned (``--no-dask``
skips these rows).

Printed per mode: calls answered a second against the limit (throughput ratio), and the 429s
as a share of all requests the server received. Goals for the paced modes: throughput
>= 0.9x the limit, 429s <= 1% (exit 1 otherwise).

    .venv/bin/python benchmarks/rate_limit_bench.py   # about 2 min (5 modes x 20 s + a cluster)
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memlab.backends.caching.cache import CacheMode
from memlab.backends.registry import resolve_backend
from memlab.backends.remote.rate_limit import RateLimit, RateLimiter, RateLimiters
from memlab.core.pipeline.llm import (
    BackendError,
    CompletionRequest,
    GenerationParams,
    allow_model_requests,
)
from memlab.grids.lane_backends import LaneBackends
from memlab.sweeps.executors import dask_client, parse_executor, worker_processes
from memlab.sweeps.remote import WorkerBackends, worker_backend

THREADS = 8
DASK = "dask-local:2x4"
PROMPT = "x" * 240  # 60 tokens at four characters a token
MAX_TOKENS = 40


class _Bucket:
    def __init__(self, per_minute: float, burst_s: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = self.rate * burst_s
        self.level = self.capacity
        self.at = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
        self.at = now

    def retry_after(self, cost: float) -> float:
        return max(0.0, (cost - self.level) / self.rate)

    def reset(self) -> float:
        return (self.capacity - self.level) / self.rate


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, rpm: float, tpm: float, burst_s: float) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.limits = (rpm, tpm)
        self.burst_s = burst_s
        self.lock = threading.Lock()
        self.restart()

    def restart(self) -> None:
        with self.lock:
            self.requests = _Bucket(self.limits[0], self.burst_s)
            self.tokens = _Bucket(self.limits[1], self.burst_s)
            self.ok_at: list[float] = []
            self.refused = 0

    def admit(self, cost: float) -> tuple[int, dict[str, str]]:
        with self.lock:
            now = time.monotonic()
            self.requests.refill(now)
            self.tokens.refill(now)
            wait = max(self.requests.retry_after(1.0), self.tokens.retry_after(cost))
            if wait > 0:
                self.refused += 1
            else:
                self.requests.level -= 1.0
                self.tokens.level -= cost
                self.ok_at.append(now)
            headers = {
                "x-ratelimit-limit-requests": f"{self.limits[0]:g}",
                "x-ratelimit-limit-tokens": f"{self.limits[1]:g}",
                "x-ratelimit-remaining-requests": str(max(0, math.floor(self.requests.level))),
                "x-ratelimit-remaining-tokens": str(max(0, math.floor(self.tokens.level))),
                "x-ratelimit-reset-requests": f"{self.requests.reset():.3f}s",
                "x-ratelimit-reset-tokens": f"{self.tokens.reset():.3f}s",
            }
            if wait > 0:
                headers["Retry-After"] = f"{wait:.3f}"
                return 429, headers
            return 200, headers


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
        cost = chars / 4.0 + float(body.get("max_tokens", 0))
        status, headers = self.server.admit(cost)
        if status == 200:
            payload: dict[str, Any] = {
                "id": "x",
                "object": "chat.completion",
                "model": body.get("model", "m"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ok"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": int(chars / 4), "completion_tokens": 1},
            }
        else:
            payload = {"error": {"message": "rate limit reached", "type": "rate_limit"}}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Unpaced(RateLimiter):
    """No pacing and nothing learned: the backend as it is without a limiter."""

    def acquire(self, tokens: float) -> float:
        return 0.0

    def observe(self, headers: Mapping[str, str] | None) -> Any:
        return None

    def hold(self, seconds: float) -> None:
        return None


@dataclass
class _Result:
    answered: int
    refused: int
    seconds: float
    errors: int

    def throughput(self, rpm: float) -> float:
        return self.answered / self.seconds / (rpm / 60.0)

    def refused_share(self) -> float:
        return self.refused / max(1, self.answered + self.refused)


def _measure(server: _Server, mode: str, rpm: float, tpm: float, seconds: float) -> _Result:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    rates = RateLimiters({"*": RateLimit(rpm, tpm)} if mode == "configured" else {})

    if mode == "unpaced":
        rates = _NoPool()

    def factory(spec: str) -> Any:
        return resolve_backend(spec, base_url=url, api_key="sk-none")

    lanes = LaneBackends(factory, None, CacheMode.OFF, rates=rates)
    request = CompletionRequest(
        messages=[{"role": "user", "content": PROMPT}],
        params=GenerationParams(max_tokens=MAX_TOKENS),
    )
    errors: list[str] = []
    server.restart()
    started = time.monotonic()
    deadline = started + seconds

    def worker() -> None:
        backend = lanes.get("openai:bench-model")
        while time.monotonic() < deadline:
            try:
                backend.complete(request)
            except BackendError as exc:
                errors.append(str(exc))

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    with allow_model_requests():
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    with server.lock:
        answered = sum(1 for t in server.ok_at if t <= deadline)
        refused = server.refused
    return _Result(answered, refused, seconds, len(errors))


def _remote_calls(source: WorkerBackends, until: float) -> int:
    """One Dask task: call the model through the worker's backend until ``until`` (wall
    clock); the errors it met."""
    backend, _ = worker_backend(source, "openai:bench-model")
    request = CompletionRequest(
        messages=[{"role": "user", "content": PROMPT}],
        params=GenerationParams(max_tokens=MAX_TOKENS),
    )
    errors = 0
    with allow_model_requests():
        while time.time() < until:
            try:
                backend.complete(request)
            except BackendError:
                errors += 1
    return errors


def _measure_dask(
    client: Any, server: _Server, mode: str, rpm: float, tpm: float, seconds: float
) -> _Result:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    limits = {"*": RateLimit(rpm, tpm)} if mode != "learned" else {}
    source = WorkerBackends(
        functools.partial(resolve_backend, base_url=url, api_key="sk-none"),
        token=f"bench-{mode}",
        limits=limits,
        parts=worker_processes(client),
    )
    threads = int(sum(client.nthreads().values()))
    server.restart()
    until = time.time() + seconds
    deadline = time.monotonic() + seconds
    futures = [
        client.submit(_remote_calls, source, until, pure=False, key=f"{mode}-{k}")
        for k in range(threads)
    ]
    errors = sum(client.gather(futures))
    with server.lock:
        answered = sum(1 for t in server.ok_at if t <= deadline)
        refused = server.refused
    return _Result(answered, refused, seconds, errors)


def _warm(client: Any, server: _Server, rpm: float, tpm: float) -> None:
    """Build the backend path on every worker thread and send a few calls before the clock
    starts (the first call in a process imports the client library)."""
    _measure_dask(client, server, "warm-up", rpm, tpm, 2.0)


class _NoPool(RateLimiters):
    """Hands every backend a limiter that does nothing."""

    def get(self, endpoint: str, model: str, spec: str = "*") -> RateLimiter:
        return _Unpaced()


def _dask_rows(server: _Server, rpm: float, tpm: float, seconds: float) -> bool:
    """The paced modes on ``dask-local:2x4``; whether a goal was missed."""
    missed = False
    with dask_client(parse_executor(DASK)) as client:
        _warm(client, server, rpm, tpm)
        print(f"on {DASK} (each worker process paces at its share):")
        for mode in ("configured", "learned"):
            result = _measure_dask(client, server, mode, rpm, tpm, seconds)
            ratio, share = result.throughput(rpm), result.refused_share()
            ok = ratio >= 0.9 and share <= 0.01 and result.errors == 0
            missed |= not ok
            print(
                f"{mode:<11} {result.answered:>8} {result.refused:>6} {result.errors:>6} "
                f"{ratio:>16.3f} {share:>9.2%}  {'PASS' if ok else 'FAIL'}"
            )
    return missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rpm", type=float, default=600.0)
    parser.add_argument("--tpm", type=float, default=60_000.0)
    parser.add_argument("--seconds", type=float, default=20.0, help="per mode (default 20)")
    parser.add_argument("--server-burst", type=float, default=1.0)
    parser.add_argument("--no-dask", action="store_true", help="threads only")
    args = parser.parse_args(argv)
    server = _Server(args.rpm, args.tpm, args.server_burst)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(
        f"server: {args.rpm:g} requests/min, {args.tpm:g} tokens/min, burst "
        f"{args.server_burst:g} s; {THREADS} threads, {args.seconds:g} s per mode, "
        f"{len(PROMPT) // 4 + MAX_TOKENS} tokens a call"
    )
    print(
        f"{'mode':<11} {'answered':>8} {'429s':>6} {'errors':>6} "
        f"{'throughput/limit':>16} {'429 share':>9}  goal"
    )
    missed = False
    try:
        for mode in ("unpaced", "configured", "learned"):
            result = _measure(server, mode, args.rpm, args.tpm, args.seconds)
            ratio, share = result.throughput(args.rpm), result.refused_share()
            ok = ratio >= 0.9 and share <= 0.01 and result.errors == 0
            goal = "-" if mode == "unpaced" else ("PASS" if ok else "FAIL")
            missed |= goal == "FAIL"
            print(
                f"{mode:<11} {result.answered:>8} {result.refused:>6} {result.errors:>6} "
                f"{ratio:>16.3f} {share:>9.2%}  {goal}"
            )
        if not args.no_dask:
            missed |= _dask_rows(server, args.rpm, args.tpm, args.seconds)
    finally:
        server.shutdown()
    print("goals (paced modes): throughput >= 0.9x the limit, 429s <= 1% of requests")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
