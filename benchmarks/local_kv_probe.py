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
  stream per sequence (``kv_unified=False``; each stream gets n_ctx / n_seq_max cells).

Prints wall and process CPU seconds; on a shared machine compare CPU seconds of runs at a
similar load. Usage::

    python benchmarks/local_kv_probe.py attention
    python benchmarks/local_kv_probe.py streams
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    import llama_cpp

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=["attention", "sequential", "unified", "streams"])
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
