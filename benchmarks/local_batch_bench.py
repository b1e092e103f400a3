"""Batched local decoding: a 4-lane sweep's tokens/s vs one call at a time vs llama.cpp's own
batched decode, side by side in one run.

Runs the bundled SmolLM2-135M-Instruct (or ``--model PATH``) on memory-update prompts (the
default prompt over an empty memory and a different one-line conversation each, the memory
contract's grammar, greedy), four ways (rows):

* **sequential**: :class:`memlab.backends.local.llama_local.LocalLlamaBackend` called one request
  after another (today's path for a sweep's lanes on the local model);
* **batched**: the same backend with ``batch=LANES`` called from LANES threads, as a sweep's
  workers call it (the scheduler decodes them together, the shared prefix kept);
* **llama.cpp reference, grammar**: the low-level batched decode loop with none of memlab's
  work (no chat formatting, no scheduler): the shared prefix evaluated once and copied to
  each sequence, each sequence's rest evaluated, then as many tokens per sequence as the
  batched run generated for the same prompt, LANES sequences per ``llama_decode``, each
  sequence sampled by llama.cpp's grammar sampler (the grammar memlab compiles from the
  memory contract) then greedy: the same work as memlab's batched path, like for like.
  Its context is set up as memlab's decoder sets up its own: a KV stream per sequence
  (``kv_unified=False``; one unified cache made every step dearer, docs/local-model.md),
  n_ctx = longest prompt plus reply times (LANES + 1), n_batch = n_ubatch = 512, the shared
  prefix evaluated in a sequence of its own and copied whole into each sequence's stream
  (``llama_memory_seq_cp`` copies only whole sequences between streams), and the grammar
  checked on the best token first (the whole vocabulary
  only when the grammar rules that token out; the same greedy token);
* **llama.cpp reference, no grammar**: the same loop with a plain argmax (what
  ``llama-batched-bench`` measures, on this workload): the ceiling without a constraint.

``--repeats N`` runs the four rows N times, interleaved, the order rotated by one each time
(sequential, batched, references; then batched, references, sequential; ...), so that a change
in the machine's load falls on every row alike; each row's median is reported and the goals
are judged on the ratios of the medians. Each row also reports the process CPU seconds it
used (every thread of the process) and CPU / wall: on an idle 2-core machine with 2 threads
that is near 2, and the further below it, the more the other jobs on the machine took. The
batched decoder and the reference loop's context are created outside the timing, and every
batched run starts from a fresh decoder (no prefix kept from the run before).

Every row says whether its replies are grammar-constrained. Aggregate tokens/s is generated
tokens / wall seconds over the whole run (prompt evaluation included). Goals: batched >= 0.8x
the reference with the grammar (like for like) and >= 1.5x sequential; the ratio to the
reference without a grammar is printed beside them, not a goal. The script also checks that
every batched reply equals the sequential one for the same prompt and prints the prompt
tokens the kept prefix saved. Exits with status 1 when a goal is missed.

``--constraint llguidance`` enforces the same grammar in memlab's rows with llguidance's token
masks ("llg" in the grammar column) instead of llama.cpp's grammar sampler.

Usage::

    python benchmarks/local_batch_bench.py                  # 8 prompts, 4 lanes, 2 threads
    python benchmarks/local_batch_bench.py --prompts 4 --max-tokens 32
    python benchmarks/local_batch_bench.py --prompts 4 --max-tokens 16 --repeats 2
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memlab.backends.decoding.grammar import compile_grammar
from memlab.backends.local.llama_batch import close_decoders, shared_decoder
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


ROWS = ("sequential", "batched", "reference_grammar", "reference_plain")


@dataclass
class Sample:
    """One timed run of a row: wall and process CPU seconds, tokens generated."""

    wall: float
    cpu: float
    tokens: int


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


def reference(
    llm: Any, prompts: list[list[int]], lengths: list[int], lanes: int, grammar: str | None
) -> Sample:
    """Wall and CPU seconds llama.cpp's batched decode loop takes for ``prompts`` (its
    context created outside the timing, as memlab's decoder is) and the tokens it generated:
    ``lengths[i]`` greedy tokens for prompt i (fewer if the grammar ends it), ``lanes``
    sequences at a time, each constrained by ``grammar`` (GBNF) when given."""
    import llama_cpp

    params = type(llm.context_params).from_buffer_copy(llm.context_params)
    params.n_ctx = max(len(p) + n for p, n in zip(prompts, lengths, strict=True)) * (lanes + 1)
    params.n_batch = params.n_ubatch = 512
    params.n_seq_max = lanes + 1
    params.kv_unified = False  # a KV stream per sequence, as memlab's decoder has
    ctx = llama_cpp.llama_init_from_model(llm._model.model, params)
    memory = llama_cpp.llama_get_memory(ctx)
    batch = llama_cpp.llama_batch_init(512, 0, 1)
    n_vocab = llm.n_vocab()
    vocab = llm._model.vocab

    def sampler() -> Any:
        chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        if grammar is not None:
            constraint = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
            llama_cpp.llama_sampler_chain_add(chain, constraint)
        llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_greedy())
        return chain

    def pick(chain: Any, row: int) -> int:
        logits = llama_cpp.llama_get_logits_ith(ctx, row)
        token = _argmax(logits, n_vocab)
        if grammar is None:  # a plain argmax, as llama-batched-bench
            return token
        # The best token if the grammar allows it, else the full pass (as memlab's decoder).
        candidate = llama_cpp.llama_token_data(token, logits[token], 0.0)
        one = llama_cpp.llama_token_data_array(ctypes.pointer(candidate), 1, -1, False)
        constraint = llama_cpp.llama_sampler_chain_get(chain, 0)
        llama_cpp.llama_sampler_apply(constraint, ctypes.byref(one))
        if candidate.logit == float("-inf"):
            token = int(llama_cpp.llama_sampler_sample(chain, ctx, row))
        else:
            llama_cpp.llama_sampler_accept(chain, token)
        return -1 if llama_cpp.llama_vocab_is_eog(vocab, token) else token

    def decode(items: list[tuple[int, int, int, bool]]) -> None:
        for start in range(0, len(items), 512):
            chunk = items[start : start + 512]
            batch.n_tokens = len(chunk)
            for i, (token, pos, seq, logits) in enumerate(chunk):
                batch.token[i], batch.pos[i], batch.logits[i] = token, pos, logits
                batch.n_seq_id[i], batch.seq_id[i][0] = 1, seq
            if llama_cpp.llama_decode(ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")

    wall, cpu = time.perf_counter(), time.process_time()
    generated = 0
    shared = min(_common(prompts[0], p) for p in prompts)
    decode([(t, pos, lanes, False) for pos, t in enumerate(prompts[0][:shared])])
    for group in range(0, len(prompts), lanes):
        seqs = list(range(min(lanes, len(prompts) - group)))
        for seq in seqs:
            llama_cpp.llama_memory_seq_rm(memory, seq, -1, -1)
            llama_cpp.llama_memory_seq_cp(memory, lanes, seq, -1, -1)  # the prefix, whole
        rows, pos, left, first = {}, {}, {}, {}
        chains = {seq: sampler() for seq in seqs}
        for seq in seqs:  # each rest of a prompt, then its first greedy token
            tokens = prompts[group + seq]
            decode([(tokens[p], p, seq, p == len(tokens) - 1) for p in range(shared, len(tokens))])
            first[seq] = pick(chains[seq], (len(tokens) - shared - 1) % 512)
            pos[seq], left[seq] = len(tokens), lengths[group + seq] if first[seq] >= 0 else 0
        step = [(first[seq], pos[seq], seq, True) for seq in seqs if left[seq] > 0]
        generated += len(step)
        for _, _, seq, _ in step:
            pos[seq] += 1
            left[seq] -= 1
        decode(step)
        rows = {seq: i for i, (_, _, seq, _) in enumerate(step)}
        while any(left.values()):
            step = []
            for seq in seqs:
                if left[seq] > 0:
                    token = pick(chains[seq], rows[seq])
                    if token < 0:  # the grammar ended the reply
                        left[seq] = 0
                        continue
                    step.append((token, pos[seq], seq, True))
                    pos[seq] += 1
                    left[seq] -= 1
            generated += len(step)
            if step:
                decode(step)
            rows = {seq: i for i, (_, _, seq, _) in enumerate(step)}
        for chain in chains.values():
            llama_cpp.llama_sampler_free(chain)
    done = Sample(time.perf_counter() - wall, time.process_time() - cpu, generated)
    llama_cpp.llama_batch_free(batch)
    llama_cpp.llama_free(ctx)
    return done


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
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="run the four rows this many times, interleaved, the order rotated each time; "
        "the goals are judged on each row's median",
    )
    parser.add_argument(
        "--constraint",
        choices=["grammar", "llguidance"],
        default="grammar",
        help="what enforces the grammar in memlab's rows (the llama.cpp rows use its sampler)",
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    work = requests(args.prompts, args.max_tokens)
    common: dict[str, Any] = {
        "n_threads": args.threads,
        "n_ctx": args.n_ctx,
        "constraint": args.constraint,
    }
    sequential = LocalLlamaBackend(args.model, **common)
    batched = LocalLlamaBackend(args.model, batch=args.lanes, **common)
    sequential.complete(work[0])  # load the model and warm up outside the timing
    llm = batched.llama()
    prompts = [llm.tokenize(chat_text(llm, r), add_bos=False, special=True) for r in work]
    grammar = compile_grammar(contract_schema())
    replies: dict[str, list[Completion]] = {}
    samples: dict[str, list[Sample]] = {row: [] for row in ROWS}
    loads = [os.getloadavg()[0]]

    def run(row: str) -> Sample:
        if row == "batched":
            # A fresh decoder, created outside the timing (a sweep creates it once): every
            # repeat starts without a kept prefix, as the reference loop does.
            close_decoders()
            assert batched.batch is not None
            shared_decoder(llm, args.n_ctx, args.threads, batched.batch)
        # The reference generates as many tokens per prompt as the batched run did (the
        # first rotation runs batched before the references).
        lengths = [c.completion_tokens for c in replies.get("batched", [])]
        wall, cpu = time.perf_counter(), time.process_time()
        if row == "sequential":
            out = [sequential.complete(r) for r in work]
        elif row == "batched":
            with ThreadPoolExecutor(args.lanes) as pool:
                out = list(pool.map(batched.complete, work))
        else:
            constraint = grammar if row == "reference_grammar" else None
            return reference(llm, prompts, lengths, args.lanes, constraint)
        sample = Sample(
            time.perf_counter() - wall,
            time.process_time() - cpu,
            sum(c.completion_tokens for c in out),
        )
        replies.setdefault(row, out)
        return sample

    for repeat in range(args.repeats):
        shift = repeat % len(ROWS)
        for row in ROWS[shift:] + ROWS[:shift]:
            samples[row].append(run(row))
            last = samples[row][-1]
            print(f"{row}: {last.wall:.2f} s wall, {last.cpu:.2f} s CPU", flush=True)
        loads.append(os.getloadavg()[0])
    return report(args, replies["sequential"], replies["batched"], samples, loads)


def chat_text(llm: Any, request: CompletionRequest) -> bytes:
    """The prompt text of ``request`` under the model's chat template."""
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
    bat_replies: list[Completion],
    samples: dict[str, list[Sample]],
    loads: list[float],
) -> int:
    """Print each row's median and the goals judged on the medians' ratios."""
    rate = {row: statistics.median(s.tokens / s.wall for s in samples[row]) for row in ROWS}
    same = sum(a.text == b.text for a, b in zip(seq_replies, bat_replies, strict=True))
    reused = sum(c.cached_prompt_tokens for c in bat_replies)
    prompt = sum(c.prompt_tokens for c in bat_replies)
    vs_ref = rate["batched"] / rate["reference_grammar"]
    vs_seq = rate["batched"] / rate["sequential"]
    vs_plain = rate["batched"] / rate["reference_plain"]
    ok_ref, ok_seq = vs_ref >= 0.8, vs_seq >= 1.5
    lanes = str(args.lanes)
    # The grammar column: llama.cpp's grammar sampler ("yes") or llguidance's masks.
    engine = "yes" if args.constraint == "grammar" else "llg"
    print(
        f"{args.prompts} prompts, {args.lanes} lanes, {args.threads} threads, greedy, "
        f"{args.repeats} repeat(s) interleaved, medians"
    )
    print(
        "load average (1 min) at the start and after each repeat: "
        + ", ".join(f"{x:.1f}" for x in loads)
    )
    print(
        f"{'run':<28}{'grammar':>8}{'wall s':>9}{'CPU s':>8}{'CPU/wall':>9}"
        f"{'tokens':>7}{'tokens/s':>10}"
    )
    names = {
        "sequential": ("sequential (memlab)", engine),
        "batched": (f"batched x{lanes} (memlab)", engine),
        "reference_grammar": (f"llama.cpp batched x{lanes}", "yes"),
        "reference_plain": (f"llama.cpp batched x{lanes}", "no"),
    }
    for row in ROWS:
        name, grammar = names[row]
        wall = statistics.median(s.wall for s in samples[row])
        cpu = statistics.median(s.cpu for s in samples[row])
        tokens = samples[row][0].tokens
        print(
            f"{name:<28}{grammar:>8}{wall:>9.2f}{cpu:>8.2f}{cpu / wall:>9.2f}"
            f"{tokens:>7}{rate[row]:>10.1f}"
        )
    ok = {True: "PASS", False: "FAIL"}
    print(f"goal: batched / llama.cpp (both constrained) {vs_ref:5.2f}x >= 0.8x {ok[ok_ref]}")
    print(f"goal: batched / sequential (same constraint) {vs_seq:5.2f}x >= 1.5x {ok[ok_seq]}")
    print(f"info: batched / llama.cpp without grammar    {vs_plain:5.2f}x (not like for like)")
    print(f"replies equal to sequential: {same}/{len(seq_replies)}")
    print(f"prompt tokens served from the kept prefix: {reused}/{prompt}")
    return 0 if ok_ref and ok_seq else 1


if __name__ == "__main__":
    sys.exit(main())
