"""How close ``--dry-run`` comes to the calls and tokens a sweep then makes.

A loopback OpenAI-compatible server started by the script stands in for a priced model
(``openai:gpt-4o-mini``): it answers a memory update by storing every user line of the
conversation as a fact, a QA answer with the first words of the question, and a judge with a
verdict; it counts tokens its own way (words and punctuation marks, not characters) and
reports as provider-cached the prompt tokens of a 1,024-character prefix it has seen before.

1. **warm-up**: a sweep of the first ``--warm`` owners of ``personas`` (2 lanes, memory QA)
   records replies in a response cache (another run directory);
2. **dry run**: :func:`memlab.sweeps.dry_run.dry_run` of the sweep of ``--owners`` owners
   with that cache: the warm-up's owners are cache hits, the rest calls;
3. **real run**: the same sweep; the server counts the requests it answered and the tokens it
   reported.

Printed: estimated and actual calls, prompt, completion and total tokens, the ratios, and the
expected cost against the cost the run's calls had. Goal: every ratio within 10% of 1
(exit 1 otherwise).

    .venv/bin/python benchmarks/dry_run_accuracy.py        # about 20 s
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from memlab.backends.costs.pricing import call_cost, model_price
from memlab.backends.scripted import user_lines_reply
from memlab.core.pipeline.llm import CompletionRequest
from memlab.grids.grid import Grid
from memlab.sweeps.driver import sweep
from memlab.sweeps.dry_run import dry_run

__all__ = ["main"]

_TOKEN = re.compile(r"\w+|[^\w\s]")
_PREFIX = 1024
MODEL = "gpt-4o-mini"


def _tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def _reply(messages: list[dict[str, str]]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in messages)
    if "newFacts" in text:
        return user_lines_reply(CompletionRequest(messages=messages))
    if "CORRECT" in text and "WRONG" in text:
        return '{"label": "CORRECT"}'
    last = str(messages[-1].get("content", "")) if messages else ""
    return " ".join(last.split()[-12:])


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_tokens = 0
        self.prefixes: set[str] = set()

    def reset(self) -> None:
        with self.lock:
            self.requests = self.prompt_tokens = self.completion_tokens = self.cached_tokens = 0

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        messages = body.get("messages", [])
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        text = _reply(messages)
        prompt_tokens, completion_tokens = _tokens(prompt), _tokens(text)
        prefix = prompt[:_PREFIX]
        with self.server.lock:
            cached = (
                _tokens(prefix) if len(prefix) == _PREFIX and prefix in self.server.prefixes else 0
            )
            self.server.prefixes.add(prefix)
            self.server.requests += 1
            self.server.prompt_tokens += prompt_tokens
            self.server.completion_tokens += completion_tokens
            self.server.cached_tokens += cached
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }
        data = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": MODEL,
                "choices": [choice],
                "usage": usage,
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return


def _grid(owners: int) -> Grid:
    return Grid.from_mapping(
        {
            "name": "dry-run-accuracy",
            "dataset": "personas",
            "max_owners": owners,
            "base": {"backend": f"openai:{MODEL}", "max_tokens": 512},
            "axes": {"output_mode": ["free", "json_object"]},
            "qa": {"answer_backend": f"openai:{MODEL}", "judges": ["lenient"]},
        },
        source="dry_run_accuracy",
    )


def main(argv: list[str] | None = None) -> int:
    """Run the three steps; print the table; 1 when a ratio is outside 0.9-1.1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--owners", type=int, default=14)
    parser.add_argument("--warm", type=int, default=4)
    args = parser.parse_args(argv)
    server = _Server()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ["OPENAI_BASE_URL"] = server.url
    os.environ["OPENAI_API_KEY"] = "sk-loopback"
    try:
        with tempfile.TemporaryDirectory(prefix="memlab-dry-bench-") as tmp:
            work = Path(tmp)
            cache, runs = work / "cache", work / "runs"
            common: dict[str, Any] = {"runs_dir": runs, "cache_dir": cache, "progress": False}
            sweep("personas", _grid(args.warm), run_name="warm", **common)
            grid = _grid(args.owners)
            estimate = dry_run("personas", grid, runs_dir=runs, run_name="full", cache_dir=cache)
            server.reset()
            sweep("personas", grid, run_name="full", **common)
            actual = {
                "calls": server.requests,
                "prompt tokens": server.prompt_tokens,
                "completion tokens": server.completion_tokens,
            }
            cached = server.cached_tokens
    finally:
        server.shutdown()
    print("\n".join(estimate.lines()))
    est = {
        "calls": float(estimate.calls),
        "prompt tokens": estimate.prompt_tokens,
        "completion tokens": estimate.completion_tokens,
    }
    est["tokens"] = est["prompt tokens"] + est["completion tokens"]
    actual["tokens"] = actual["prompt tokens"] + actual["completion tokens"]
    price = model_price(f"openai:{MODEL}", MODEL)
    spent = call_cost(price, actual["prompt tokens"], actual["completion tokens"], cached)
    print(f"\n{'measure':<18} {'estimated':>12} {'actual':>12} {'ratio':>7}  goal 0.90-1.10")
    failed = False
    for name, value in est.items():
        ratio = value / actual[name] if actual[name] else float("inf")
        ok = 0.9 <= ratio <= 1.1
        failed |= not ok
        verdict = "PASS" if ok else "FAIL"
        print(f"{name:<18} {value:>12,.0f} {actual[name]:>12,} {ratio:>7.3f}  {verdict}")
    cost = estimate.cost()
    ratio = cost / spent if spent else 0.0
    print(f"{'USD':<18} {cost:>12.4f} {spent:>12.4f} {ratio:>7.3f}  (info)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
