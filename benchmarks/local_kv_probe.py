"""Where a batched context's decode time goes: attention over the KV cells it holds.

Probes the KV-cache layouts of llama.cpp's batched decoding on the bench's memory-update
prompts (``local_batch_bench.requests``; 4 prompts of about 1,380 tokens sharing 337), one
case per process so that each starts from a fresh context (2 threads, n_ubatch 512):

* ``attention``: one unified KV cache (memlab's batched decoder's layout); sequence 0's
  prompt evaluated, then 12 one-token steps of sequence 0 timed, then the three other
  prompts evaluated into sequences 1-3, and the same 12 steps timed again (twice). The
  other sequences' cells are masked out of sequence 0's attention, so a difference between
  the two timings is the cost of computing over cells it cannot see;
* ``sequential``: one sequence, each prompt evaluated whole after clearing the cache, then
  64 one-token steps (the sequential path's shape, without its prefix reuse);
* ``unified`` and ``streams``: the four prompts evaluated whole as four sequences in one
  batch, then 16 four-token steps (one per sequence), in one unified KV cache or with a KV
  stream per sequence (``kv_unified=False``; each stream gets n_ctx / n_seq_max cells);
* ``ceiling``: the most any 4-lane layout can gain over one call at a time, both measured
  side by side in one process (``--repeats`` times, alternating, medians). One at a time:
  each prompt after the shared prefix (kept in the cache, as the sequential path keeps its
  previous prompt's prefix), then 16 one-token steps. Four lanes, the best layout the
  other cases found: a KV stream per lane, the shared prefix kept in a fifth stream and
  copied whole into each lane's (``llama_memory_seq_cp`` copies only whole sequences
  between streams), the four rests in one batch, then 16 four-lane steps. Prints the best
  ratio of the two for replies of 16 to 512 tokens and its limit for endless replies: each
  prompt rest evaluated the cheaper of the two ways (prompt evaluation is bound by
  arithmetic, so a batch does not make it cheaper) and every reply token at the four-lane
  step's cost.

Prints wall and process CPU seconds; on a shared machine compare CPU seconds of runs at a
similar load. Usage::

    python benchmarks/local_kv_probe.py attention
    python benchmarks/local_kv_probe.py streams
    python benchmarks/local_kv_probe.py ceiling --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from local_batch_bench import chat_text, requests

from memlab.backends.local.llama_batch import common_prefix
from memlab.backends.local.llama_local import bundled_model_path

_BATCH = 1024


def _timed(work: Callable[[], None]) -> str:
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return f"{time.perf_counter() - wall:.2f} s wall, {time.process_time() - cpu:.2f} s CPU"


class _Probe:
    def __init__(self, llm: Any, n_ctx: int, n_seq: int, unified: bool) -> None:
        import llama_cpp

        self.lib = llama_cpp
        params = type(llm.context_params).from_buffer_copy(llm.context_params)
        params.n_ctx, params.n_batch, params.n_ubatch = n_ctx, _BATCH, 512
        params.n_seq_max = n_seq
        params.n_threads = params.n_threads_batch = 2
        params.kv_unified, params.embeddings = unified, False
        self.ctx = llama_cpp.llama_init_from_model(llm._model.model, params)
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.batch = llama_cpp.llama_batch_init(_BATCH, 0, 1)

    def decode(self, items: list[tuple[int, int, int, bool]]) -> None:
        """Decode (token, position, sequence, logits) items, ``_BATCH`` per call."""
        batch = self.batch
        for start in range(0, len(items), _BATCH):
            chunk = items[start : start + _BATCH]
            batch.n_tokens = len(chunk)
            for i, (token, pos, seq, logits) in enumerate(chunk):
                batch.token[i], batch.pos[i], batch.logits[i] = token, pos, logits
                batch.n_seq_id[i], batch.seq_id[i][0] = 1, seq
            if self.lib.llama_decode(self.ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")

    def prompt(self, tokens: list[int], seq: int) -> None:
        self.decode([(t, i, seq, i == len(tokens) - 1) for i, t in enumerate(tokens)])


def attention(llm: Any, prompts: list[list[int]], room: int) -> None:
    probe = _Probe(llm, room * 5, 5, True)
    first = prompts[0]
    probe.prompt(first, 0)

    def steps() -> None:
        for k in range(12):
            probe.decode([(first[-1], len(first) + k, 0, True)])
        probe.lib.llama_memory_seq_rm(probe.memory, 0, len(first), -1)

    print(f"12 steps of one lane, the cache holding 1 lane's cells: {_timed(steps)}")
    for seq in (1, 2, 3):
        probe.prompt(prompts[seq], seq)
    print(f"12 steps of one lane, the cache holding 4 lanes' cells: {_timed(steps)}")
    print(f"the same again: {_timed(steps)}")


def _seconds(work: Callable[[], None]) -> float:
    wall = time.perf_counter()
    work()
    return time.perf_counter() - wall


def _one_at_a_time(
    llm: Any, prompts: list[list[int]], shared: int, room: int
) -> tuple[float, float]:
    """Seconds for the prompts one after another (the prefix kept) and for one decode step."""
    probe = _Probe(llm, room, 1, True)
    probe.decode([(t, i, 0, False) for i, t in enumerate(prompts[0][:shared])])

    def rests() -> None:
        for tokens in prompts:
            probe.lib.llama_memory_seq_rm(probe.memory, 0, shared, -1)
            probe.decode(
                [(tokens[i], i, 0, i == len(tokens) - 1) for i in range(shared, len(tokens))]
            )

    last = prompts[-1]

    def steps() -> None:
        for k in range(16):
            probe.decode([(last[-1], len(last) + k, 0, True)])

    return _seconds(rests), _seconds(steps) / 16


def _four_lanes(llm: Any, prompts: list[list[int]], shared: int, room: int) -> tuple[float, float]:
    """Seconds for the prompts as four lanes (the kept prefix copied into each lane's stream)
    and for one 4-lane step."""
    n = len(prompts)
    probe = _Probe(llm, room * (n + 1), n + 1, False)
    probe.decode([(t, i, n, False) for i, t in enumerate(prompts[0][:shared])])  # kept, untimed

    def prefill() -> None:
        for seq in range(n):
            probe.lib.llama_memory_seq_cp(probe.memory, n, seq, -1, -1)  # whole sequence only
        probe.decode(
            [
                (p[i], i, s, i == len(p) - 1)
                for s, p in enumerate(prompts)
                for i in range(shared, len(p))
            ]
        )

    def steps() -> None:
        for k in range(16):
            probe.decode([(p[-1], len(p) + k, s, True) for s, p in enumerate(prompts)])

    return _seconds(prefill), _seconds(steps) / 16


def ceiling(llm: Any, prompts: list[list[int]], shared: int, room: int, repeats: int) -> None:
    """Print the speed-up over one call at a time that four lanes could reach at best."""
    single: list[tuple[float, float]] = []
    lanes: list[tuple[float, float]] = []
    for _ in range(repeats):  # alternated, so that a change of load falls on both
        single.append(_one_at_a_time(llm, prompts, shared, room))
        lanes.append(_four_lanes(llm, prompts, shared, room))
    p1, s1 = (statistics.median(x) for x in zip(*single, strict=True))
    p4, s4 = (statistics.median(x) for x in zip(*lanes, strict=True))
    n = len(prompts)
    print(f"one at a time: prompts {p1:.2f} s, a step {s1 * 1000:.1f} ms")
    print(f"four lanes: prompts {p4:.2f} s, a {n}-lane step {s4 * 1000:.1f} ms")
    print(f"decode step speed-up {n * s1 / s4:.2f}x (medians of {repeats})")
    # The best case: each prompt's rest evaluated at the cheaper of the two measured ways
    # (prompt evaluation is bound by arithmetic), every reply token at the 4-lane step's cost.
    best_prompts = min(p1, p4)
    for tokens in (16, 32, 128, 512):
        ratio = (p1 + n * tokens * s1) / (best_prompts + tokens * s4)
        print(f"replies of {tokens:>3} tokens: batched / sequential at most {ratio:.2f}x")
    print(f"endless replies: at most {n * s1 / s4:.2f}x")


def main() -> None:
    import llama_cpp

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "case", choices=["attention", "sequential", "unified", "streams", "ceiling"]
    )
    parser.add_argument("--repeats", type=int, default=3, help="ceiling: runs of each side")
    args = parser.parse_args()
    llm = llama_cpp.Llama(str(bundled_model_path()), n_ctx=4096, n_threads=2, verbose=False)
    prompts = [
        llm.tokenize(chat_text(llm, r), add_bos=False, special=True) for r in requests(4, 16)
    ]
    shared = min(common_prefix(prompts[0], p) for p in prompts)
    print(f"prompts of {[len(p) for p in prompts]} tokens sharing {shared}")
    room = max(len(p) for p in prompts) + 64
    if args.case == "attention":
        attention(llm, prompts, room)
        return
    if args.case == "ceiling":
        ceiling(llm, prompts, shared, room, args.repeats)
        return
    if args.case == "sequential":
        probe = _Probe(llm, room, 1, True)

        def whole() -> None:
            for tokens in prompts:
                probe.lib.llama_memory_seq_rm(probe.memory, 0, -1, -1)
                probe.prompt(tokens, 0)

        def steps() -> None:
            last = prompts[-1]
            for k in range(64):
                probe.decode([(last[-1], len(last) + k, 0, True)])

        print(f"4 prompts, one after another: {_timed(whole)}")
        print(f"64 one-token steps: {_timed(steps)}")
        return
    probe = _Probe(llm, room * 4, 4, args.case == "unified")
    items = [(t, i, s, i == len(p) - 1) for s, p in enumerate(prompts) for i, t in enumerate(p)]
    print(f"4 prompts as 4 sequences in one batch: {_timed(lambda: probe.decode(items))}")

    def lanes() -> None:
        for k in range(16):
            probe.decode([(p[-1], len(p) + k, s, True) for s, p in enumerate(prompts)])

    print(f"16 four-lane steps: {_timed(lanes)}")


if __name__ == "__main__":
    main()
