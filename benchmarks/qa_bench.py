"""Memory QA against a slow loopback server: concurrency speed-up and a fully cached rerun.

A dataset of ``--owners`` owners, each one session revealing one fact and ``--questions``
questions asked after it, is replayed once with the simulated model (instant, not timed).
Then the QA step (:func:`memlab.postrun.qa_step.add_qa`: answers from memory graded by one
judge) runs against the loopback OpenAI-compatible server of ``sweep_bench.py``, which waits
``--delay`` s (200 ms) per request:

1. **Speed-up**: the same QA step at ``max_workers=1`` and at ``--workers`` (8), each with a
   fresh response cache, the server counting every request. Goal: >= 6x.
2. **Cached rerun**: the QA step again from the cache the 8-worker step wrote
   (``READ_ONLY`` around a backend that raises if called). Goal: <= 10 s at LoCoMo's size
   (``--owners 10 --questions 200``, 4,000 answers and verdicts; ``--full``).

Usage::

    .venv/bin/python benchmarks/qa_bench.py            # 10 owners x 8 questions (about a minute)
    .venv/bin/python benchmarks/qa_bench.py --full     # 10 x 200 for the cached rerun
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_bench import slow_server

from memlab.backends.caching.cache import CacheMode
from memlab.backends.remote.openai_compat import OpenAICompatibleBackend
from memlab.core.pipeline.injection import get_token_counter
from memlab.core.pipeline.llm import Backend, BackendError, Completion, CompletionRequest
from memlab.grids.grid import Grid
from memlab.grids.qa_spec import QASpec
from memlab.postrun.qa_step import add_qa
from memlab.runs.run import Run
from memlab.sweeps.driver import sweep

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
SECOND = timedelta(seconds=1)
SPEC = QASpec(answer_backend="bench:qa", judges=["strict"], conditions=["memory"])


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def write_dataset(path: Path, owners: int, questions: int) -> Path:
    """``owners`` owners of one session revealing one fact, each with ``questions`` questions."""
    lines = []
    for u in range(owners):
        user = f"u{u:03d}"
        start = T0 + timedelta(minutes=u)
        fact = {"id": f"{user}.city", "content": f"Lives in city {u}", "category": "context"}
        session = {
            "thread_id": f"{user}-0",
            "started_at": _iso(start),
            "messages": [
                {"role": "human", "content": f"I live in city {u}.", "timestamp": _iso(start)},
                {"role": "ai", "content": "Noted.", "timestamp": _iso(start + SECOND * 2)},
            ],
            "labels": {"facts": [fact]},
        }
        asked = [
            {
                "id": f"{user}.q{k}",
                "question": f"Question {k} for {user}: which city does the user live in?",
                "answer": f"City {u}",
                "category": "single-hop",
                "kind": "answerable",
                "after_session": 0,
                "evidence": {"facts": [fact["id"]]},
            }
            for k in range(questions)
        ]
        lines.append(json.dumps({"user_id": user, "sessions": [session], "questions": asked}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class _Refusing:
    """A backend that fails if called: the cached rerun must not reach it."""

    name, model = "openai", "bench-model"

    def complete(self, request: CompletionRequest) -> Completion:
        raise BackendError("the cached rerun called the backend")


def _timed(run: Run, workers: int, cache: Path, backend: Backend, mode: CacheMode) -> float:
    started = time.perf_counter()
    add_qa(
        run,
        SPEC,
        cache_dir=cache,
        cache_mode=mode,
        max_workers=workers,
        progress=False,
        backend_factory=lambda spec: backend,
    )
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    """Run the two measurements and print them; exit 1 when a goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--owners", type=int, default=10)
    parser.add_argument("--questions", type=int, default=8, help="questions per owner")
    parser.add_argument("--full", action="store_true", help="LoCoMo's size: 10 x 200 questions")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.2, help="server wait per request (s)")
    parser.add_argument(
        "--parallel-only",
        action="store_true",
        help="time only the --workers step (larger sizes without the serial baseline)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    owners, questions = (10, 200) if args.full else (args.owners, args.questions)
    results: list[tuple[str, float, str, bool]] = []
    with tempfile.TemporaryDirectory(prefix="memlab-qa-bench-") as tmp:
        root = Path(tmp)
        data = write_dataset(root / "data.jsonl", owners, questions)
        grid = Grid.from_mapping({"name": "qa-bench", "base": {"backend": "sim:careful"}})
        run = sweep(data, grid, runs_dir=root / "runs", progress=False)
        calls = 2 * owners * questions  # one answer and one verdict per question
        with slow_server(args.delay) as server:
            backend = OpenAICompatibleBackend(
                "bench-model", base_url=server.base_url, api_key="bench"
            )
            backend.complete(CompletionRequest(messages=[{"role": "user", "content": "ping"}]))
            # One-time process costs (the tokenizer's tables) are paid before either timing,
            # so the ratio compares steady states.
            get_token_counter("tiktoken").count("warm up")
            walls: dict[int, float] = {}
            serial = not (args.full or args.parallel_only)
            sizes = [1, args.workers] if serial else [args.workers]
            for workers in sizes:
                server.reset_counters()
                walls[workers] = _timed(
                    run, workers, root / f"cache-w{workers}", backend, CacheMode.READ_WRITE
                )
                if server.requests != calls:
                    seen = server.requests
                    raise RuntimeError(f"expected {calls} requests, the server saw {seen}")
                print(
                    f"workers={workers}: {walls[workers]:.2f} s for {calls} calls "
                    f"(floor {calls * args.delay / workers:.1f} s), peak in flight "
                    f"{server.max_in_flight}"
                )
        if 1 in walls:
            speedup = walls[1] / walls[args.workers]
            name = f"speed-up {args.workers} vs 1 workers"
            results.append((name, speedup, ">= 6x", speedup >= 6))
        rerun = _timed(
            run, args.workers, root / f"cache-w{args.workers}", _Refusing(), CacheMode.READ_ONLY
        )
        goal = f"<= 10 s at 10 x 200 ({owners} x {questions} here)"
        results.append(("fully cached rerun (s)", rerun, goal, rerun <= 10))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nmemory QA benchmark, {owners} owners x {questions} questions (load {load:.1f})")
    for name, value, goal, passed in results:
        print(f"  {name:34s} {value:8.2f}   goal {goal:40s} {'ok' if passed else 'MISSED'}")
    return 0 if all(passed for *_, passed in results) else 1


if __name__ == "__main__":
    sys.exit(main())
