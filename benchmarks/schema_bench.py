"""The "valid?" check on valid values: fastjsonschema beside jsonschema, in one run.

Every line of the bundled ``personas`` dataset and a set of valid memory updates are checked
against their schemas by both validators, the two taking turns in rounds so that a change in
the machine's load touches both alike; the table gives the lowest round's time per value and
the ratio jsonschema / fast. The import time of each validator (a new process, ``python -X
importtime``) is printed too: a command that meets only valid values imports the fast one.

It decides whether memlab keeps its fast check beside jsonschema
(:mod:`memlab.core.jsondoc.schema_check`): kept while the ratio is at least ``--goal`` (3). Usage::

    python benchmarks/schema_bench.py              # a few seconds
    python benchmarks/schema_bench.py --rounds 9

The exit status is 1 when a ratio is below the goal (the fast check no longer pays for itself).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from memlab.core.jsondoc.contract import contract_schema, minimal_update
from memlab.core.jsondoc.schema_check import CompiledSchema
from memlab.datasets.loader import dataset_schema

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]


def _updates() -> list[dict[str, Any]]:
    """Valid memory updates: the minimal one, and ones with facts and removals."""
    fact = {"content": "Prefers green tea", "category": "preference", "confidence": 0.9}
    out = [minimal_update()]
    for n in range(1, 6):
        update = minimal_update()
        update["newFacts"] = [{**fact, "content": f"{fact['content']} {i}"} for i in range(n)]
        update["factsToRemove"] = [f"fact_{i:08x}" for i in range(n)]
        out.append(update)
    return out


def _best(check: Callable[[Any], bool], values: Sequence[Any], repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        for value in values:
            if not check(value):
                raise AssertionError("a value the benchmark takes as valid was rejected")
    return (time.perf_counter() - started) / (repeat * len(values))


def _import_seconds(module: str) -> float:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [line for line in done.stderr.splitlines() if line.rstrip().endswith(f"| {module}")]
    return int(lines[-1].split("|")[1]) / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--goal", type=float, default=3.0)
    args = parser.parse_args(argv)
    lines = (ROOT / "datasets" / "personas.jsonl").read_text(encoding="utf-8").splitlines()
    cases = {
        "personas line": (dataset_schema(), [json.loads(line) for line in lines if line]),
        "memory update": (contract_schema(), _updates()),
    }
    print(f"{'value':<16}{'n':>5}{'fast µs':>10}{'jsonschema µs':>15}{'ratio':>8}")
    missed = False
    for label, (schema, values) in cases.items():
        fast = CompiledSchema(schema)
        reference = Draft202012Validator(schema)
        repeat = max(1, 2000 // len(values))
        times: dict[str, list[float]] = {"fast": [], "jsonschema": []}
        for _ in range(args.rounds):  # taking turns; the lowest round of each is kept
            times["fast"].append(_best(fast.compiled_check, values, repeat))
            times["jsonschema"].append(_best(reference.is_valid, values, repeat))
        ours, theirs = min(times["fast"]), min(times["jsonschema"])
        ratio = theirs / ours
        missed = missed or ratio < args.goal
        print(f"{label:<16}{len(values):>5}{ours * 1e6:>10.1f}{theirs * 1e6:>15.1f}{ratio:>7.1f}x")
    for module in ("fastjsonschema", "jsonschema"):
        print(f"import {module}: {_import_seconds(module):.3f} s")
    print(f"goal: jsonschema / fast >= {args.goal:g} on each row: {'MISS' if missed else 'PASS'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
