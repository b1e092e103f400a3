"""Local backend throughput through memlab vs raw ``llama_cpp.Llama``, schema-constrained vs
free generation, and cache-hit overhead.

Runs the bundled SmolLM2-135M-Instruct (or ``--model PATH``) on the memory-update prompt, both
through :class:`memlab.backends.local.llama_local.LocalLlamaBackend` and through a separate raw
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
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from memlab.backends.caching.cache import CachedBackend
from memlab.backends.local.llama_local import DEFAULT_N_CTX, LocalLlamaBackend, default_threads
from memlab.core.jsondoc.contract import (
    SchemaBounds,
    bounded_schema,
    contract_schema,
    validate_update,
)
from memlab.core.pipeline.llm import CompletionRequest, GenerationParams, OutputMode

CONVERSATION = (
    "User: I'm a data engineer at Acme and I prefer Python over Java.\n\n"
    "Assistant: Noted. What are you working on this quarter?\n\n"
    "User: Migrating our nightly batch jobs to Airflow before the June audit."
)


def update_prompt() -> str:
    """The default memory-update prompt over an empty memory (a plain fallback otherwise)."""
    try:
        from memlab.core.jsondoc.document import create_empty_memory
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


# The main job's bounds (memlab.cli.experiment.demo.BOUNDS): every reply closes within about 340
# tokens.
BOUNDS = SchemaBounds(summary_chars=60, fact_chars=80, max_new_facts=3, max_removals=2)


def check_contract(text: str) -> None:
    """A finished constrained reply is strict JSON that keeps the contract, or the run stops
    (a reply cut by ``max_tokens`` is not checked)."""
    violations = validate_update(json.loads(text))
    if violations:
        raise RuntimeError(f"a constrained reply broke the contract: {violations[0]}: {text!r}")


def output_modes(
    backend: LocalLlamaBackend, base_prompt: str, rounds: int, max_tokens: int
) -> None:
    """Generation tokens/s: free vs schema-constrained (GBNF, llguidance), alternating."""
    import llama_cpp

    llm = backend.llama()
    schema = bounded_schema(contract_schema(), BOUNDS)
    # The same loaded model, its json_schema replies enforced by llguidance's token masks.
    guided = LocalLlamaBackend(
        backend.model_path,
        n_ctx=backend.n_ctx,
        n_threads=backend.n_threads,
        constraint="llguidance",
    )

    def memlab_call(mode: OutputMode, on: LocalLlamaBackend = backend) -> Callable[[str, int], int]:
        def call(prompt: str, tokens: int) -> int:
            request = CompletionRequest(
                messages=[{"role": "user", "content": prompt}],
                mode=mode,
                schema=schema if mode is OutputMode.JSON_SCHEMA else None,
                params=GenerationParams(max_tokens=tokens),
            )
            completion = on.complete(request)
            if mode is OutputMode.JSON_SCHEMA and completion.finish_reason == "stop":
                check_contract(completion.text)
            return completion.completion_tokens

        return call

    modes: list[tuple[str, Callable[[str, int], int]]] = [
        ("free", memlab_call(OutputMode.FREE)),
        ("schema (llama.cpp grammar)", memlab_call(OutputMode.JSON_SCHEMA)),
    ]
    if importlib.util.find_spec("llguidance") is not None:
        modes.append(("schema (llguidance)", memlab_call(OutputMode.JSON_SCHEMA, guided)))
    for name, call in modes:  # not timed: llguidance reads the vocabulary once (1-4 s)
        call(f"[warm-up {name}] {base_prompt}", 8)
    totals = {name: [0, 0.0, 0.0] for name, _ in modes}  # tokens, generation ms, decode ms
    for round_no in range(rounds):
        order = modes if round_no % 2 == 0 else list(reversed(modes))
        for name, call in order:
            prompt = f"[mode round {round_no} {name}] {base_prompt}"
            llama_cpp.llama_perf_context_reset(llm.ctx)
            started = time.perf_counter()
            tokens = call(prompt, max_tokens)
            wall_ms = (time.perf_counter() - started) * 1000
            perf = llama_cpp.llama_perf_context(llm.ctx)
            totals[name][0] += tokens
            totals[name][1] += wall_ms - perf.t_p_eval_ms
            totals[name][2] += perf.t_eval_ms
    print(f"\ngeneration by output mode (threads={backend.n_threads}, rounds={rounds}, ", end="")
    print(f"max_tokens={max_tokens}, schema bounds {BOUNDS.model_dump()}, load {_load()})")
    print("  (sampling: ms per token outside llama.cpp's decode, where constraints cost;")
    print("  at the same decode: the ratio with every mode's decode at this run's mean per token,")
    print("  which a loaded machine's swings between calls do not move)")
    all_tokens = sum(t[0] for t in totals.values())
    decode = sum(t[2] for t in totals.values()) / all_tokens if all_tokens else float("nan")
    free_rate = rate(int(totals["free"][0]), totals["free"][1])
    free_sampling = (totals["free"][1] - totals["free"][2]) / max(totals["free"][0], 1)
    for name, (tokens, ms, decode_ms) in totals.items():
        value = rate(int(tokens), ms)
        ratio = value / free_rate
        sampling = (ms - decode_ms) / tokens if tokens else float("nan")
        same_decode = (decode + free_sampling) / (decode + sampling)
        goal = "" if name == "free" else f"  (goal >= 0.8x: {'OK' if ratio >= 0.8 else 'BELOW'})"
        print(
            f"  {name:<28} {value:>7.1f} tok/s  {int(tokens):>6d} tokens  "
            f"sampling {sampling:5.2f} ms/token  {ratio:.2f}x free{goal}  "
            f"at the same decode {same_decode:.2f}x"
        )
    if len(modes) < 3:
        print("  schema (llguidance): not measured, pip install 'memlab[local]' to compare")


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
