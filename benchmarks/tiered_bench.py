"""The tiered memory store's cost: per update beside the JSON store, and similarity recall.

No LLM runs; texts are embedded by :class:`memlab.memory.storage.vectors.HashedEmbedding` (256
dimensions, the size of the bundled wordllama model), whose cost is included.

1. **Overhead per update** at ``--sizes`` memories (100 and 1,000): one tiered update is
   ``add_memory`` + ``add_episode`` + ``forget`` (an hour later on the virtual clock, so every
   memory decays and is rewritten), each a durable transaction (WAL, ``synchronous=FULL``).
   Beside it, in the same run and turns, the JSON store's per-update save: the pipeline's
   default :class:`~memlab.core.pipeline.storage.JsonFileStorage` (atomic replace, fsync of the file
   and its folder) saving the document with as many facts. The two alternate in ``--rounds``
   rounds of ``--updates`` updates; the median of the rounds' per-update means is compared.
   Goal: tiered <= 2x JSON, for each vector backend.
2. **Similarity recall over 10,000 episodes** (``--episodes``): ``recall_episodes(query, 10)``
   for ``--queries`` queries, all episodes and within a 30-day range, on a store reopened per
   backend (sqlite-vec and NumPy side by side; NumPy's first query, which reads the vectors,
   is printed apart). Goal: median <= 20 ms.

Exit status 1 when a goal is missed. Usage::

    .venv/bin/python benchmarks/tiered_bench.py                 # about a minute on 2 cores
    .venv/bin/python benchmarks/tiered_bench.py --rounds 3 --queries 20   # quicker
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memlab.core.jsondoc.document import MemoryDocument, create_empty_memory, utc_iso
from memlab.core.pipeline.storage import JsonFileStorage
from memlab.memory import TieredStore
from memlab.memory.storage.items import ForgettingRules
from memlab.memory.storage.vectors import HashedEmbedding, sqlite_vec_available

T0 = datetime(2025, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
DIM = 256
GOAL_RATIO = 2.0
GOAL_RECALL_MS = 20.0
WORDS = [f"word{n}" for n in range(2000)]


def sentence(rng: random.Random, words: int = 10) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def json_document(size: int, rng: random.Random) -> MemoryDocument:
    document = create_empty_memory(T0)
    document["facts"] = [
        {
            "id": f"fact_{n:08x}",
            "content": sentence(rng),
            "category": "context",
            "confidence": 0.9,
            "createdAt": utc_iso(T0),
            "source": f"t{n}",
        }
        for n in range(size)
    ]
    return document


def tiered_store(path: Path, size: int, vectors: str, rng: random.Random) -> TieredStore:
    store = TieredStore(path, embed=HashedEmbedding(DIM), vectors=vectors)  # type: ignore[arg-type]
    for n in range(size):
        store.add_memory(sentence(rng), category="context", importance=0.9, at=T0, source=f"t{n}")
        store.add_episode(at=T0, thread_id=f"t{n}", input=sentence(rng), output="ok", outcome="")
    store.forget(T0, ForgettingRules())
    return store


def per_update(
    rounds: int, updates: int, steps: dict[str, Callable[[int], None]]
) -> dict[str, float]:
    """Median over ``rounds`` of each step's mean seconds per update; steps alternate."""
    means: dict[str, list[float]] = {name: [] for name in steps}
    counter = 0
    for _round in range(rounds):
        for name, step in steps.items():
            start = time.perf_counter()
            for _ in range(updates):
                counter += 1
                step(counter)
            means[name].append((time.perf_counter() - start) / updates)
    return {name: statistics.median(values) for name, values in means.items()}


def overhead(folder: Path, size: int, backends: list[str], args: argparse.Namespace) -> bool:
    rng = random.Random(size)
    document = json_document(size, rng)
    json_store = JsonFileStorage(folder / f"json-{size}.json")
    rules = ForgettingRules()
    stores = {b: tiered_store(folder / f"tiered-{size}-{b}.db", size, b, rng) for b in backends}

    def json_step(n: int) -> None:
        document["facts"][n % size]["content"] = sentence(rng)
        json_store.save(document, now=T0 + n * HOUR)

    def tiered_step(store: TieredStore) -> Callable[[int], None]:
        def step(n: int) -> None:
            at = T0 + n * HOUR
            store.add_memory(sentence(rng), category="context", importance=0.9, at=at, source="t")
            store.add_episode(at=at, thread_id="t", input=sentence(rng), output="ok", outcome="")
            store.forget(at, rules)

        return step

    steps = {"json": json_step, **{b: tiered_step(s) for b, s in stores.items()}}
    times = per_update(args.rounds, args.updates, steps)
    ok = True
    print(f"\n{size:,} memories: per-update means, median of {args.rounds} rounds")
    print(f"  JSON store save (durable)      {times['json'] * 1e3:8.2f} ms")
    for backend, store in stores.items():
        ratio = times[backend] / times["json"]
        verdict = "PASS" if ratio <= GOAL_RATIO else "MISS"
        ok &= ratio <= GOAL_RATIO
        print(
            f"  tiered ({backend:10s}) add+add+forget {times[backend] * 1e3:8.2f} ms  "
            f"{ratio:5.2f}x JSON (goal <= {GOAL_RATIO:.0f}x) {verdict}"
        )
        store.close()
    return ok


def fill_episodes(path: Path, count: int) -> None:
    rng = random.Random(7)
    store = TieredStore(path, embed=HashedEmbedding(DIM), vectors="numpy")
    # Filling only: a benchmark's scratch file need not be synced after each of 10,000 writes.
    store._db.conn.execute("PRAGMA synchronous=OFF")
    for n in range(count):
        store.add_episode(
            at=T0 + n * HOUR, thread_id=f"t{n // 20}", input=sentence(rng), output="", outcome=""
        )
    store.close()


def recall(path: Path, backends: list[str], args: argparse.Namespace) -> bool:
    rng = random.Random(11)
    queries = [sentence(rng, 6) for _ in range(args.queries)]
    middle = T0 + (args.episodes // 2) * HOUR
    ok = True
    print(f"\nrecall_episodes(query, 10) over {args.episodes:,} episodes ({DIM} dimensions)")
    for backend in backends:
        store = TieredStore(path, embed=HashedEmbedding(DIM), vectors=backend)  # type: ignore[arg-type]
        start = time.perf_counter()
        store.recall_episodes(queries[0], 10)
        first = time.perf_counter() - start
        for label, since, until in (
            ("all", None, None),
            ("30 days", middle, middle + timedelta(days=30)),
        ):
            times = []
            for query in queries:
                start = time.perf_counter()
                store.recall_episodes(query, 10, since=since, until=until)
                times.append(time.perf_counter() - start)
            median_ms = statistics.median(times) * 1e3
            p95_ms = sorted(times)[int(0.95 * (len(times) - 1))] * 1e3
            verdict = "PASS" if median_ms <= GOAL_RECALL_MS else "MISS"
            ok &= median_ms <= GOAL_RECALL_MS
            print(
                f"  {backend:10s} {label:8s} median {median_ms:6.2f} ms  p95 {p95_ms:6.2f} ms  "
                f"(goal <= {GOAL_RECALL_MS:.0f} ms) {verdict}"
            )
        print(f"  {backend:10s} first query after opening: {first * 1e3:.1f} ms")
        store.close()
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    problem = sqlite_vec_available()
    backends = ["numpy"] if problem else ["sqlite-vec", "numpy"]
    if problem:
        print(f"sqlite-vec unavailable ({problem}): NumPy only")
    load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    ok = True
    with tempfile.TemporaryDirectory(prefix="tiered-bench-") as tmp:
        folder = Path(tmp)
        for size in args.sizes:
            ok &= overhead(folder, size, backends, args)
        path = folder / "episodes.db"
        fill_episodes(path, args.episodes)
        ok &= recall(path, backends, args)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nload average before: {load_before}; after: {load}")
    print("all goals met" if ok else "GOAL MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
