"""Local backend throughput through memlab vs raw ``llama_cpp.Llama``, schema-constrained vs
free generation, and cache-hit overhead.

Runs the bundled SmolLM2-135M-Instruct (or ``--model PATH``) on the memory-update prompt, both
through :class:`memlab.backends.llama_local.LocalLlamaBackend` and through a separate raw
``llama_cpp.Llama`` with the same settings, alternating the two, and reads llama.cpp's own
performance counters (prompt evaluation and generation) after every call. Each round uses a
distinct prompt prefix so no call reuses the previous call's KV cache.

Then, in the same run, generation speed by output mode on the same prompts, alternating:
free text, ``json_schema`` through memlab (llama.cpp's GBNF grammar compiled from the contract
schema with the main job's ``schema_bounds``), and, when the ``llguidance`` package is
importable, the same schema enforced by llguidance token masks in a logits processor. Grammar
work happens in sampling, outside llama.cpp's decode counters, so generation tokens/s here is
completion tokens / (wall time - prompt evaluation time). Goal: schema >= 0.8x free.

Usage::

    python benchmarks/backend_bench.py --rounds 3 --max-tokens 64 --threads 2
    python benchmarks/backend_bench.py --mode-rounds 3 --mode-tokens 256 --threads 1
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from memlab.backends.cache import CachedBackend
from memlab.backends.llama_local import DEFAULT_N_CTX, LocalLlamaBackend, default_threads
from memlab.core.contract import SchemaBounds, bounded_schema, contract_schema
from memlab.core.llm import CompletionRequest, GenerationParams, OutputMode

CONVERSATION = (
    "User: I'm a data engineer at Acme and I prefer Python over Java.\n\n"
    "Assistant: Noted. What are you working on this quarter?\n\n"
    "User: Migrating our nightly batch jobs to Airflow before the June audit."
)


def update_prompt() -> str:
    """The default memory-update prompt over an empty memory (a plain fallback otherwise)."""
    try:
        from memlab.core.document import create_empty_memory
        from memlab.core.prompts import get_prompt
    except ImportError:
        return f"Extract memorable facts as JSON from this conversation:\n\n{CONVERSATION}"
    memory = create_empty_memory(datetime(2024, 1, 1, tzinfo=UTC))
    return get_prompt("default").render(memory, CONVERSATION)


def perf_call(llm: Any, call: Callable[[], object]) -> tuple[int, float, int, float]:
    """Run ``call`` and return (prompt tokens, prompt ms, generated tokens, generation ms)."""
    import llama_cpp

    llama_cpp.llama_perf_context_reset(llm.ctx)
    call()
    data = llama_cpp.llama_perf_context(llm.ctx)
    return data.n_p_eval, data.t_p_eval_ms, data.n_eval, data.t_eval_ms


def rate(tokens: int, ms: float) -> float:
    return tokens / (ms / 1000.0) if ms > 0 else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="GGUF path (default: bundled SmolLM2)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--n-ctx", type=int, default=DEFAULT_N_CTX)
    parser.add_argument("--hits", type=int, default=200, help="cache hits to time")
    parser.add_argument("--mode-rounds", type=int, default=3, help="rounds per output mode")
    parser.add_argument("--mode-tokens", type=int, default=256, help="max_tokens per mode call")
    parser.add_argument("--modes-only", action="store_true", help="only the output-mode rows")
    args = parser.parse_args(argv)
    if args.modes_only:
        backend = LocalLlamaBackend(args.model, n_ctx=args.n_ctx, n_threads=args.threads)
        output_modes(backend, update_prompt(), args.mode_rounds, args.mode_tokens)
        return 0

    import llama_cpp

    backend = LocalLlamaBackend(args.model, n_ctx=args.n_ctx, n_threads=args.threads)
    memlab_llm = backend.llama()
    raw = llama_cpp.Llama(
        model_path=str(backend.model_path),
        n_ctx=args.n_ctx,
        n_threads=args.threads,
        n_threads_batch=args.threads,
        verbose=False,
    )
    base_prompt = update_prompt()
    params = GenerationParams(max_tokens=args.max_tokens)
    totals = {"memlab": [0, 0.0, 0, 0.0], "raw": [0, 0.0, 0, 0.0]}

    def run_memlab(prompt: str) -> None:
        messages = [{"role": "user", "content": prompt}]
        backend.complete(CompletionRequest(messages=messages, params=params))

    def run_raw(prompt: str) -> None:
        raw.create_chat_completion(
            messages=[{"role": "user", "content": prompt}],
            temperature=params.temperature,
            max_tokens=params.max_tokens,
            seed=params.seed,
        )

    # Warm-up (page in the weights) for both paths.
    run_memlab("warm-up")
    run_raw("warm-up")
    for round_no in range(args.rounds):
        prompt = f"[round {round_no}] {base_prompt}"
        order = [("memlab", memlab_llm, run_memlab), ("raw", raw, run_raw)]
        if round_no % 2:
            order.reverse()  # alternate so neither path always runs on a warmer CPU
        for label, llm, run in order:
            result = perf_call(llm, functools.partial(run, prompt))
            for i, value in enumerate(result):
                totals[label][i] += value

    print(f"model: {backend.model_path.name}  threads={args.threads}  n_ctx={args.n_ctx}")
    print(f"rounds={args.rounds}  max_tokens={args.max_tokens}")
    print(f"{'path':<8} {'prompt tok/s':>13} {'gen tok/s':>10} {'prompt tok':>11} {'gen tok':>8}")
    rates = {}
    for label, (n_p, t_p, n_g, t_g) in totals.items():
        rates[label] = (rate(int(n_p), t_p), rate(int(n_g), t_g))
        print(
            f"{label:<8} {rates[label][0]:>13.1f} {rates[label][1]:>10.1f} "
            f"{int(n_p):>11d} {int(n_g):>8d}"
        )
    prompt_ratio = rates["memlab"][0] / rates["raw"][0]
    gen_ratio = rates["memlab"][1] / rates["raw"][1]
    verdict = "OK" if min(prompt_ratio, gen_ratio) >= 0.9 else "BELOW GOAL"
    print(
        f"ratio memlab/raw: prompt {prompt_ratio:.3f}  generation {gen_ratio:.3f}  "
        f"(goal >= 0.9: {verdict})"
    )

    output_modes(backend, base_prompt, args.mode_rounds, args.mode_tokens)

    with tempfile.TemporaryDirectory() as cache_dir:
        cached = CachedBackend(backend, cache_dir)
        request = CompletionRequest(
            messages=[{"role": "user", "content": base_prompt}],
            mode=OutputMode.FREE,
            params=GenerationParams(max_tokens=8),
        )
        cached.complete(request)  # record
        timings = []
        for _ in range(args.hits):
            started = time.perf_counter()
            cached.complete(request)
            timings.append(time.perf_counter() - started)
        assert cached.counters.hits == args.hits
        print(
            f"cache hit overhead: median {statistics.median(timings) * 1e6:.0f} us, "
            f"p95 {sorted(timings)[int(0.95 * len(timings)) - 1] * 1e6:.0f} us "
            f"over {args.hits} hits (prompt {len(base_prompt)} chars)"
        )
    return 0


# The main job's bounds (memlab.cli.demo.BOUNDS): every reply closes within about 340 tokens.
BOUNDS = SchemaBounds(summary_chars=60, fact_chars=80, max_new_facts=3, max_removals=2)


def llguidance_processor(llm: Any, schema: dict[str, Any]) -> Callable[[], Any] | None:
    """A factory of llama-cpp-python logits processors enforcing ``schema`` with llguidance
    (compact JSON, like llama.cpp's grammar) for greedy decoding, or None when llguidance is
    not installed."""
    try:
        import llguidance
        import llguidance.llamacpp
        import llguidance.numpy as llg_numpy
    except ImportError:
        return None
    import json

    import numpy as np

    tokenizer = llguidance.llamacpp.lltokenizer_from_vocab(llm._model.vocab)
    sent = {k: v for k, v in schema.items() if k not in ("$schema", "$id")}
    grammar = llguidance.LLMatcher.grammar_from_json_schema(
        json.dumps(sent), defaults={"whitespace_flexible": False}
    )
    n_vocab = llm.n_vocab()

    def make() -> Any:
        matcher = llguidance.LLMatcher(tokenizer, grammar)
        mask = llg_numpy.allocate_token_bitmask(1, n_vocab)
        seen = [-1]

        def process(input_ids: Any, scores: Any) -> Any:
            if seen[0] >= 0:
                for token in input_ids[seen[0] :]:
                    matcher.consume_token(int(token))
            seen[0] = len(input_ids)
            # Greedy decoding (temperature 0) picks the best token: when the grammar accepts
            # it, the full mask would not change the choice, so it is only computed otherwise.
            if matcher.validate_tokens([int(np.argmax(scores))]) == 1:
                return scores
            llg_numpy.fill_next_token_bitmask(matcher, mask)
            allowed = np.unpackbits(mask.view(np.uint8), bitorder="little")[:n_vocab]
            scores[allowed == 0] = -np.inf
            return scores

        return process

    return make


def output_modes(
    backend: LocalLlamaBackend, base_prompt: str, rounds: int, max_tokens: int
) -> None:
    """Generation tokens/s: free vs schema-constrained (GBNF, llguidance), alternating."""
    import llama_cpp

    llm = backend.llama()
    schema = bounded_schema(contract_schema(), BOUNDS)
    params = GenerationParams(max_tokens=max_tokens)
    make_processor = llguidance_processor(llm, schema)

    def memlab_call(mode: OutputMode) -> Callable[[str], int]:
        def call(prompt: str) -> int:
            request = CompletionRequest(
                messages=[{"role": "user", "content": prompt}],
                mode=mode,
                schema=schema if mode is OutputMode.JSON_SCHEMA else None,
                params=params,
            )
            return backend.complete(request).completion_tokens

        return call

    def llguidance_call(prompt: str) -> int:
        assert make_processor is not None
        response = llm.create_chat_completion(
            messages=[{"role": "user", "content": prompt}],
            max_tokens=max_tokens,
            temperature=0.0,
            seed=0,
            logits_processor=llama_cpp.LogitsProcessorList([make_processor()]),
        )
        return int(response["usage"]["completion_tokens"])

    modes: list[tuple[str, Callable[[str], int]]] = [
        ("free", memlab_call(OutputMode.FREE)),
        ("schema (llama.cpp grammar)", memlab_call(OutputMode.JSON_SCHEMA)),
    ]
    if make_processor is not None:
        modes.append(("schema (llguidance)", llguidance_call))
    totals = {name: [0, 0.0] for name, _ in modes}
    for round_no in range(rounds):
        order = modes if round_no % 2 == 0 else list(reversed(modes))
        for name, call in order:
            prompt = f"[mode round {round_no} {name}] {base_prompt}"
            llama_cpp.llama_perf_context_reset(llm.ctx)
            started = time.perf_counter()
            tokens = call(prompt)
            wall_ms = (time.perf_counter() - started) * 1000
            prompt_ms = llama_cpp.llama_perf_context(llm.ctx).t_p_eval_ms
            totals[name][0] += tokens
            totals[name][1] += wall_ms - prompt_ms
    print(f"\ngeneration by output mode (threads={backend.n_threads}, rounds={rounds}, ", end="")
    print(f"max_tokens={max_tokens}, schema bounds {BOUNDS.model_dump()})")
    free_rate = rate(int(totals["free"][0]), totals["free"][1])
    for name, (tokens, ms) in totals.items():
        value = rate(int(tokens), ms)
        ratio = value / free_rate
        goal = "" if name == "free" else f"  (goal >= 0.8x: {'OK' if ratio >= 0.8 else 'BELOW'})"
        print(
            f"  {name:<28} {value:>7.1f} tok/s  {int(tokens):>6d} tokens  {ratio:.2f}x free{goal}"
        )
    if make_processor is None:
        print("  schema (llguidance): not measured, pip install llguidance to compare")


if __name__ == "__main__":
    sys.exit(main())
