"""How the simulated model's time per prompt grows with an owner's sessions.

The simulated model finds the session a memory-update prompt holds before it decides a reply.
This script builds one owner with N distinct sessions for several N, renders the default
update prompt of every session the way the pipeline does (the conversation's paragraphs over
an empty memory) and times ``SimulatedBackend.complete`` on all of them, best of
``--repeats``. It prints the time per prompt for each N and its ratio to the smallest N: a
lookup that scanned every session would grow that ratio with N (quadratic in all); the goal
is a ratio under 2 at 16 times the sessions.

Usage::

    .venv/bin/python benchmarks/sim_bench.py                 # a few seconds
    .venv/bin/python benchmarks/sim_bench.py --sizes 100 400 1600 --repeats 5
    PYTHONPATH=<older checkout>/src .venv/bin/python benchmarks/sim_bench.py   # before/after
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime, timedelta

from memlab.core.document import create_empty_memory
from memlab.core.messages import filter_messages_for_memory, format_conversation_for_update
from memlab.core.prompts import get_prompt
from memlab.datasets.models import Owner

try:
    from memlab.core.llm import CompletionRequest, GenerationParams
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


def per_prompt_seconds(sessions: int, repeats: int) -> float:
    subject = owner(sessions)
    backend = SimulatedBackend("careful", dataset=[subject])
    requests = prompts(subject)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for request in requests:
            backend.complete(request)
        best = min(best, time.perf_counter() - start)
    return best / len(requests)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 400, 1600])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = sorted(args.sizes)
    times = {n: per_prompt_seconds(n, args.repeats) for n in sizes}
    base = times[sizes[0]]
    print(f"{'sessions':>9} {'ms/prompt':>10} {'ratio':>6}")
    for n in sizes:
        print(f"{n:>9} {times[n] * 1000:>10.3f} {times[n] / base:>6.2f}")
    ratio = times[sizes[-1]] / base
    verdict = "met" if ratio < GOAL_RATIO else "MISSED"
    print(f"goal: ratio < {GOAL_RATIO} at {sizes[-1] // sizes[0]}x the sessions: {verdict}")
    return 0 if ratio < GOAL_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
