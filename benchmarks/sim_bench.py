"""How the simulated model's time per prompt grows with an owner's sessions.

The simulated model finds the session a memory-update prompt holds before it decides a reply.
This script builds one owner with N distinct sessions for several N, renders the default
update prompt of every session the way the pipeline does (the conversation's paragraphs over
an empty memory) and times ``SimulatedBackend.complete`` on all of them, best of
``--repeats``. It prints the CPU time per prompt for each N and its ratio to the smallest N: a
lookup that scanned every session would grow that ratio with N (quadratic in all); the goal
is a ratio under 2 at 16 times the sessions. Beside it, the time per prompt over the first
and the last tenth of the sessions: a cost that grew with the session index would show there.

Usage::

    .venv/bin/python benchmarks/sim_bench.py                 # a few seconds
    .venv/bin/python benchmarks/sim_bench.py --sizes 100 400 1600 --repeats 5
    PYTHONPATH=<older checkout>/src .venv/bin/python benchmarks/sim_bench.py   # before/after
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime, timedelta

from memlab.core.jsondoc.document import create_empty_memory
from memlab.core.pipeline.messages import filter_messages_for_memory, format_conversation_for_update
from memlab.core.prompts import get_prompt
from memlab.datasets.models import Owner

try:
    from memlab.core.pipeline.llm import CompletionRequest, GenerationParams
    from memlab.simulation.model import SimulatedBackend
except ImportError:  # an older checkout (PYTHONPATH=<checkout>/src), for a before/after
    from memlab.backends.base import CompletionRequest, GenerationParams  # type: ignore
    from memlab.backends.simulated import SimulatedBackend  # type: ignore

T0 = datetime(2025, 1, 1, 9, 0, tzinfo=UTC)
GOAL_RATIO = 2.0


def owner(sessions: int) -> Owner:
    """One owner whose every session says something different."""
    return Owner.model_validate(
        {
            "user_id": "u1",
            "sessions": [
                {
                    "thread_id": f"t{i}",
                    "started_at": (T0 + timedelta(hours=i)).isoformat(),
                    "messages": [
                        {
                            "role": "human",
                            "content": f"Session {i}: I moved to district {i} and walk to work.",
                            "timestamp": (T0 + timedelta(hours=i)).isoformat(),
                        },
                        {
                            "role": "ai",
                            "content": f"Noted, district {i}.",
                            "timestamp": (T0 + timedelta(hours=i, seconds=2)).isoformat(),
                        },
                    ],
                }
                for i in range(sessions)
            ],
        }
    )


def prompts(subject: Owner) -> list[CompletionRequest]:
    """The update prompt of every session, as the pipeline renders it."""
    template = get_prompt("default")
    memory = create_empty_memory(T0)
    requests = []
    for session in subject.sessions:
        messages = filter_messages_for_memory([m.to_pipeline_message() for m in session.messages])
        conversation = format_conversation_for_update(messages)
        text = template.render(memory, conversation)
        requests.append(
            CompletionRequest(
                messages=[{"role": "user", "content": text}], params=GenerationParams()
            )
        )
    return requests


def per_prompt_seconds(sessions: int, repeats: int) -> tuple[float, float, float]:
    """Best time per prompt over all sessions, over the first tenth and over the last tenth
    of the sessions (CPU time of this thread: the machine may be shared)."""
    subject = owner(sessions)
    backend = SimulatedBackend("careful", dataset=[subject])
    requests = prompts(subject)
    tenth = max(1, len(requests) // 10)
    best = [float("inf")] * 3
    for _ in range(repeats):
        spent = []
        for request in requests:
            start = time.thread_time()
            backend.complete(request)
            spent.append(time.thread_time() - start)
        parts = (spent, spent[:tenth], spent[-tenth:])
        best = [min(b, sum(p) / len(p)) for b, p in zip(best, parts, strict=True)]
    return best[0], best[1], best[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 400, 1600])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = sorted(args.sizes)
    measured = {n: per_prompt_seconds(n, args.repeats) for n in sizes}
    times = {n: m[0] for n, m in measured.items()}
    base = times[sizes[0]]
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; CPU time per prompt")
    print(f"{'sessions':>9} {'ms/prompt':>10} {'ratio':>6} {'first 10%':>10} {'last 10%':>9}")
    for n in sizes:
        _, first, last = measured[n]
        print(
            f"{n:>9} {times[n] * 1000:>10.3f} {times[n] / base:>6.2f} "
            f"{first * 1000:>10.3f} {last * 1000:>9.3f}"
        )
    ratio = times[sizes[-1]] / base
    verdict = "met" if ratio < GOAL_RATIO else "MISSED"
    print(f"goal: ratio < {GOAL_RATIO} at {sizes[-1] // sizes[0]}x the sessions: {verdict}")
    return 0 if ratio < GOAL_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
