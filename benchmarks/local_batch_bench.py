"""Batched local decoding: a 4-lane sweep's tokens/s vs one call at a time vs llama.cpp's own
batched decode, side by side in one run.

Runs the bundled SmolLM2-135M-Instruct (or ``--model PATH``) on memory-update prompts (the
default prompt over an empty memory and a different one-line conversation each, the memory
contract's grammar, greedy), three ways, in this order:

* **sequential**: :class:`memlab.backends.local.llama_local.LocalLlamaBackend` called one request
  after another (today's path for a sweep's lanes on the local model);
* **batched**: the same backend with ``batch=LANES`` called from LANES threads, as a sweep's
  workers call it (the scheduler decodes them together, the shared prefix kept);
* **llama.cpp reference**: the low-level batched decode loop with none of memlab's work (no
  chat formatting, no grammar, no scheduler): the shared prefix evaluated once and copied to
  each sequence, each sequence's rest evaluated, then exactly as many greedy tokens per
  sequence as the batched run generated for the same prompt, LANES sequences per
  ``llama_decode`` (what ``llama-batched-bench`` measures, on this workload).

Aggregate tokens/s is generated tokens / wall seconds over the whole run (prompt evaluation
included). Goals: batched >= 0.8x the reference and >= 1.5x sequential; the script also
checks that every batched reply equals the sequential one for the same prompt and prints the
prompt tokens the kept prefix saved. Exits with status 1 when a goal is missed.

Usage::

    python benchmarks/local_batch_bench.py                  # 8 prompts, 4 lanes, 2 threads
    python benchmarks/local_batch_bench.py --prompts 4 --max-tokens 32
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from memlab.backends.local.llama_local import LocalLlamaBackend
from memlab.core.jsondoc.contract import contract_schema
from memlab.core.jsondoc.document import create_empty_memory
from memlab.core.pipeline.llm import Completion, CompletionRequest, GenerationParams, OutputMode
from memlab.core.pipeline.messages import format_conversation_for_update
from memlab.core.prompts import get_prompt

LINES = [
    "I'm a data engineer at Acme and I prefer Python over Java.",
    "My sister Ana moved to Lisbon last spring.",
    "I run 10 km every Sunday morning before breakfast.",
    "I'm allergic to peanuts and I love Thai food.",
    "We adopted a grey cat named Miso in October.",
    "I switched to a standing desk in March.",
    "My favourite band is Radiohead; I saw them in 2017.",
    "I'm learning Japanese for a trip to Kyoto next year.",
]


def requests(count: int, max_tokens: int) -> list[CompletionRequest]:
    """Memory-update requests that share the instruction prefix and differ in the dialogue."""
    memory = create_empty_memory(datetime(2024, 1, 1, tzinfo=UTC))
    out = []
    for i in range(count):
        line = LINES[i % len(LINES)] + (f" (note {i})" if i >= len(LINES) else "")
        dialogue = [{"role": "user", "content": line}, {"role": "assistant", "content": "Noted."}]
        prompt = get_prompt("default").render(memory, format_conversation_for_update(dialogue))
        out.append(
            CompletionRequest(
                messages=[{"role": "user", "content": prompt}],
                mode=OutputMode.JSON_SCHEMA,
                schema=contract_schema(),
                params=GenerationParams(max_tokens=max_tokens),
            )
        )
    return out


def reference(llm: Any, prompts: list[list[int]], lengths: list[int], lanes: int) -> float:
    """Seconds llama.cpp's batched decode loop takes for ``prompts``, generating
    ``lengths[i]`` greedy tokens for prompt i, ``lanes`` sequences at a time."""
    import llama_cpp

    params = type(llm.context_params).from_buffer_copy(llm.context_params)
    params.n_ctx = max(len(p) + n for p, n in zip(prompts, lengths, strict=True)) * (lanes + 1)
    params.n_batch = params.n_ubatch = 512
    params.n_seq_max = lanes + 1
    params.kv_unified = False  # one stream per sequence, as memlab's decoder has
    ctx = llama_cpp.llama_init_from_model(llm._model.model, params)
    memory = llama_cpp.llama_get_memory(ctx)
    batch = llama_cpp.llama_batch_init(512, 0, 1)
    n_vocab = llm.n_vocab()

    def decode(items: list[tuple[int, int, int, bool]]) -> None:
        for start in range(0, len(items), 512):
            chunk = items[start : start + 512]
            batch.n_tokens = len(chunk)
            for i, (token, pos, seq, logits) in enumerate(chunk):
                batch.token[i], batch.pos[i], batch.logits[i] = token, pos, logits
                batch.n_seq_id[i], batch.seq_id[i][0] = 1, seq
            if llama_cpp.llama_decode(ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")

    started = time.perf_counter()
    shared = min(_common(prompts[0], p) for p in prompts)
    decode([(t, pos, lanes, False) for pos, t in enumerate(prompts[0][:shared])])
    for group in range(0, len(prompts), lanes):
        seqs = list(range(min(lanes, len(prompts) - group)))
        for seq in seqs:
            llama_cpp.llama_memory_seq_rm(memory, seq, -1, -1)
            llama_cpp.llama_memory_seq_cp(memory, lanes, seq, -1, -1)  # streams copy whole
        rows, pos, left, first = {}, {}, {}, {}
        for seq in seqs:  # each rest of a prompt, then its first greedy token
            tokens = prompts[group + seq]
            decode([(tokens[p], p, seq, p == len(tokens) - 1) for p in range(shared, len(tokens))])
            last = (len(tokens) - shared - 1) % 512
            first[seq] = _argmax(llama_cpp.llama_get_logits_ith(ctx, last), n_vocab)
            pos[seq], left[seq] = len(tokens), lengths[group + seq]
        step = [(first[seq], pos[seq], seq, True) for seq in seqs if left[seq] > 0]
        for _, _, seq, _ in step:
            pos[seq] += 1
            left[seq] -= 1
        decode(step)
        rows = {seq: i for i, (_, _, seq, _) in enumerate(step)}
        while any(left.values()):
            step = []
            for seq in seqs:
                if left[seq] > 0:
                    logits = llama_cpp.llama_get_logits_ith(ctx, rows[seq])
                    token = _argmax(logits, n_vocab)
                    step.append((token, pos[seq], seq, True))
                    pos[seq] += 1
                    left[seq] -= 1
            decode(step)
            rows = {seq: i for i, (_, _, seq, _) in enumerate(step)}
    elapsed = time.perf_counter() - started
    llama_cpp.llama_batch_free(batch)
    llama_cpp.llama_free(ctx)
    return elapsed


def _argmax(logits: Any, n_vocab: int) -> int:
    import numpy as np

    return int(np.argmax(np.ctypeslib.as_array(logits, shape=(n_vocab,))))


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="GGUF path (default: bundled SmolLM2)")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--lanes", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n-ctx", type=int, default=4096)
    args = parser.parse_args(argv)
    work = requests(args.prompts, args.max_tokens)
    common = {"n_threads": args.threads, "n_ctx": args.n_ctx}
    sequential = LocalLlamaBackend(args.model, **common)
    batched = LocalLlamaBackend(args.model, batch=args.lanes, **common)
    sequential.complete(work[0])  # load the model and warm up outside the timing
    started = time.perf_counter()
    seq_replies = [sequential.complete(r) for r in work]
    seq_s = time.perf_counter() - started
    print(f"sequential: {seq_s:.2f} s", flush=True)
    with ThreadPoolExecutor(args.lanes) as pool:
        started = time.perf_counter()
        bat_replies: list[Completion] = list(pool.map(batched.complete, work))
        bat_s = time.perf_counter() - started
    print(f"batched: {bat_s:.2f} s", flush=True)
    llm = batched.llama()
    prompts = [llm.tokenize(_text(llm, r), add_bos=False, special=True) for r in work]
    lengths = [c.completion_tokens for c in bat_replies]
    ref_s = reference(llm, prompts, lengths, args.lanes)
    return report(args, seq_replies, seq_s, bat_replies, bat_s, sum(lengths), ref_s)


def _text(llm: Any, request: CompletionRequest) -> bytes:
    from llama_cpp import llama_chat_format

    formatter = llama_chat_format.Jinja2ChatFormatter(
        template=llm.metadata["tokenizer.chat_template"],
        eos_token=llm._model.token_get_text(llm.token_eos()),
        bos_token=llm._model.token_get_text(llm.token_bos()),
    )
    messages: Any = [dict(m) for m in request.messages]
    return formatter(messages=messages).prompt.encode("utf-8")


def report(
    args: argparse.Namespace,
    seq_replies: list[Completion],
    seq_s: float,
    bat_replies: list[Completion],
    bat_s: float,
    ref_tokens: int,
    ref_s: float,
) -> int:
    seq_rate = sum(c.completion_tokens for c in seq_replies) / seq_s
    bat_rate = sum(c.completion_tokens for c in bat_replies) / bat_s
    ref_rate = ref_tokens / ref_s
    same = sum(a.text == b.text for a, b in zip(seq_replies, bat_replies, strict=True))
    reused = sum(c.cached_prompt_tokens for c in bat_replies)
    prompt = sum(c.prompt_tokens for c in bat_replies)
    vs_ref, vs_seq = bat_rate / ref_rate, bat_rate / seq_rate
    ok_ref, ok_seq = vs_ref >= 0.8, vs_seq >= 1.5
    print(f"{args.prompts} prompts, {args.lanes} lanes, {args.threads} threads, greedy, grammar")
    print(f"{'run':<28}{'seconds':>9}{'tokens/s':>10}")
    print(f"{'sequential (memlab)':<28}{seq_s:>9.2f}{seq_rate:>10.1f}")
    print(f"{'batched x' + str(args.lanes) + ' (memlab)':<28}{bat_s:>9.2f}{bat_rate:>10.1f}")
    print(f"{'llama.cpp batched x' + str(args.lanes):<28}{ref_s:>9.2f}{ref_rate:>10.1f}")
    print(f"batched / llama.cpp   {vs_ref:5.2f}x  goal >= 0.8x  {'PASS' if ok_ref else 'FAIL'}")
    print(f"batched / sequential  {vs_seq:5.2f}x  goal >= 1.5x  {'PASS' if ok_seq else 'FAIL'}")
    print(f"replies equal to sequential: {same}/{len(seq_replies)}")
    print(f"prompt tokens served from the kept prefix: {reused}/{prompt}")
    return 0 if ok_ref and ok_seq else 1


if __name__ == "__main__":
    sys.exit(main())
