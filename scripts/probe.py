"""Probe the memlab command line with random hostile inputs for a while, checking the same
invariants as the fuzz table (tests/test_cli_fuzz.py):

- exit 0, 1 or 2, never a traceback; exit 2 with exactly one ``error:`` line;
- bounded output; nothing outside the sandbox created, changed or removed;
- no secret (the API key, a URL password, its Basic token) in any byte written or shown;
- no run directory written as complete without a finished record for every replay;
- peak RSS under 1 GiB and time under 30 s per command (or twice the time of a plain run,
  measured at the start, on a busy machine).

Each round copies valid seeds (a dataset, a grid, a prompt file, a simulated-model profile,
a LoCoMo sample, calibration pairs, a recorded cache, a finished run) into a fresh sandbox,
damages one of them at random (random bytes, a cut, invalid UTF-8, deep nesting, a huge
file, a link to /dev/zero or outside, a FIFO, a directory in its place, a hostile JSON value
at a random place) or picks a hostile option value or server behaviour, and runs one command
on it as its own process. ``table`` rounds draw a row of the fuzz table's memory QA, tiered
memory, plugin and LoCoMo groups (tests/fuzz_table_more.py) instead: its files and setup,
its command, and its exit code as one more invariant. Violations are printed with what
reproduces them and kept under --keep.

    .venv/bin/python scripts/probe.py --minutes 10            # about 4 rounds a minute
    .venv/bin/python scripts/probe.py --minutes 60 --seed 7 --keep probe-failures
    .venv/bin/python scripts/probe.py --rounds 20 --kinds table   # rows of the fuzz table
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the invariants and the hostile server live there

from builders import locomo_sample  # noqa: E402
from fake_openai import SECRET, HostileServer  # noqa: E402
from fuzz_table import Case, materialise  # noqa: E402
from fuzz_table_more import MORE_CASES  # noqa: E402
from hostile import (  # noqa: E402
    MAX_RSS_BYTES,
    MAX_SECONDS,
    PASSWORD,
    hollow_runs,
    leaks,
    manifests,
    run_process,
    tree,
)

MAX_OUTPUT = 64 * 1024
MAX_LINE = 2100
SERVER_MODES = ("ok", "echo", "not_json", "empty", "wrong_shape", "status:401", "huge:64")
HOSTILE_VALUES: list[Any] = [
    True, None, -1, 0, 10**30, 1e308, "", "x" * 5000, "../../outside/x", "/etc/passwd",
    "a\x00b", "$\\frac{$x", [], {}, [[[[]]]], "0001-01-01T00:00:00+14:00",
    "9999-12-31T20:00:00-14:00", "\ud800", "NaN", {"$ref": "#"},
]  # fmt: skip
OPTION_VALUES = {
    "--workers": ["0", "-1", "1000000", "abc", "1e9"],
    "--resamples": ["-1", "1000000000", "1e9", "0"],
    "--executor": ["dask-local:256", "dask-local:0", "dask://127.0.0.1:1", "spark://x:1"],
    "--max-owners": ["0", "-5", "99999999999999999999"],
    "--threshold": ["nan", "inf", "-0.1", "5"],
}


@dataclass
class Sandbox:
    """One round's directory: the seeds, and the command about to run in it."""

    root: Path
    argv: list[str] = field(default_factory=list)
    server: str = ""
    note: str = ""
    env: dict[str, str] = field(default_factory=dict)
    exit: int | None = None
    """The exit code the round expects (a table row's), or None: any of 0, 1, 2."""

    @property
    def outside(self) -> Path:
        return self.root.parent / "outside"


# --- seeds ------------------------------------------------------------------------------------


def make_seeds(into: Path) -> float:
    """Valid inputs every round starts from (a finished run and a recorded cache included);
    returns the seconds the seed run took (how fast this machine is right now)."""
    into.mkdir(parents=True)
    shutil.copy(ROOT / "datasets" / "smoke.jsonl", into / "d.jsonl")
    (into / "g.yaml").write_text(
        "name: g\ndataset: d.jsonl\nprompts: [p.txt]\nbase: {prompt: p}\n"
        "axes: {fact_confidence_threshold: [0.6, 0.8]}\n",
        encoding="utf-8",
    )
    (into / "p.txt").write_text(
        "Memory:\n{current_memory}\nConversation:\n{conversation}\nReply with JSON.\n",
        encoding="utf-8",
    )
    (into / "profile.yaml").write_text(
        "name: probe\npropose_rate: 0.9\nconfidence: {0.9: 0.5, 0.6: 0.5}\n"
        "failures: {fenced: 0.1}\n",
        encoding="utf-8",
    )
    (into / "locomo.json").write_text(json.dumps([locomo_sample()]), encoding="utf-8")
    pairs = (ROOT / "datasets" / "matching" / "pairs.jsonl").read_text("utf-8").splitlines()
    (into / "pairs.jsonl").write_text("\n".join(pairs[:20]) + "\n", encoding="utf-8")
    (into / "reply.txt").write_text(
        '{"user": {}, "history": {}, "newFacts": [], "factsToRemove": []}', encoding="utf-8"
    )
    done = run_process(
        [
            "run",
            "d.jsonl",
            "--name",
            "r",
            "--runs-dir",
            "runs",
            "--cache-dir",
            "cache",
            "--no-progress",
        ],
        into,
        {"OPENAI_API_KEY": SECRET, "MEMLAB_HOME": str(into / "home")},
    )
    if done.code != 0:
        raise SystemExit(f"probe: cannot make the seed run: {done.err}")
    return float(done.seconds)


# --- damage -----------------------------------------------------------------------------------


def _json_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _json_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:20]):
            found += _json_paths(item, (*path, index))
    return found


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    value[path[0]] = _set(value[path[0]], path[1:], new)
    return value


def hostile_json(text: str, rng: random.Random) -> str:
    """``text`` (JSON, or JSON lines) with a hostile value at a random place."""
    lines = text.splitlines() or [text]
    k = rng.randrange(len(lines))
    try:
        value = json.loads(lines[k])
    except ValueError:
        return text + "\x00"
    path = rng.choice(_json_paths(value))
    lines[k] = json.dumps(_set(value, path, rng.choice(HOSTILE_VALUES)))
    return "\n".join(lines) + "\n"


def damage(path: Path, rng: random.Random, outside: Path) -> str:
    """Damage one file in a random way; return what was done."""
    how = rng.choice(
        ["bytes", "cut", "utf8", "deep", "huge", "zero", "fifo", "outside", "directory", "value"]
    )
    data = path.read_bytes() if path.is_file() else b""
    if how in ("zero", "fifo", "outside", "directory"):
        path.unlink(missing_ok=True)
    if how == "bytes":
        path.write_bytes(rng.randbytes(rng.choice([1, 100, 10_000])))
    elif how == "cut":
        path.write_bytes(data[: rng.randrange(len(data) + 1)])
    elif how == "utf8":
        at = rng.randrange(len(data) + 1)
        path.write_bytes(data[:at] + b"\xff\xfe" + data[at:])
    elif how == "deep":
        path.write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    elif how == "huge":
        with path.open("wb") as out:
            out.write(data[:100])
            out.write(b" " * (rng.choice([5, 70]) * 1024 * 1024))
    elif how == "zero":
        path.symlink_to("/dev/zero")
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "outside":
        target = outside / f"victim-{path.name}"
        target.write_bytes(data or b"{}")
        path.symlink_to(target)
    elif how == "directory":
        path.mkdir()
    else:
        path.write_text(hostile_json(data.decode("utf-8", "replace"), rng), encoding="utf-8")
    return f"{how} {path.name}"


# --- rounds -----------------------------------------------------------------------------------

RUN = ["--runs-dir", "runs", "--no-progress"]


def round_dataset(box: Sandbox, rng: random.Random) -> None:
    box.note = damage(box.root / "d.jsonl", rng, box.outside)
    box.argv = rng.choice(
        [["run", "d.jsonl", *RUN], ["datasets", "validate", "d.jsonl"],
         ["datasets", "stats", "d.jsonl"], ["run", "d.jsonl", "--backend", "sim:chatty", *RUN]]
    )  # fmt: skip


def round_grid(box: Sandbox, rng: random.Random) -> None:
    target = rng.choice(["g.yaml", "p.txt"])
    box.note = damage(box.root / target, rng, box.outside)
    box.argv = ["sweep", "g.yaml", *RUN]


def round_profile(box: Sandbox, rng: random.Random) -> None:
    box.note = damage(box.root / "profile.yaml", rng, box.outside)
    box.argv = ["run", "d.jsonl", "--backend", "sim:profile.yaml", *RUN]


def round_cache(box: Sandbox, rng: random.Random) -> None:
    entries = sorted((box.root / "cache").glob("*/*.json"))
    box.note = damage(rng.choice(entries), rng, box.outside)
    if rng.random() < 0.2:  # a shard directory that is a link out of the cache
        shard = rng.choice(sorted((box.root / "cache").iterdir()))
        moved = box.outside / f"shard-{shard.name}"
        shard.rename(moved)
        shard.symlink_to(moved)
        box.note += f", shard {shard.name} linked outside"
    box.argv = rng.choice(
        [["run", "d.jsonl", "--cache-dir", "cache", "--name", "again", *RUN],
         ["run", "d.jsonl", "--cache-dir", "cache", "--cache-mode", "read_only", *RUN],
         ["cache", "stats", "cache"], ["cache", "prune", "cache", "--all"],
         ["cache", "prune", "cache", "--model", "nothing"]]
    )  # fmt: skip


def round_run(box: Sandbox, rng: random.Random) -> None:
    run = box.root / "runs" / "r"
    files = [p for p in run.rglob("*") if p.is_file() and not p.name.endswith(".lock")]
    box.note = damage(rng.choice(files), rng, box.outside)
    box.argv = rng.choice(
        [["report", "runs/r", "runs/r", "-o", "out"], ["gate", "runs/r", "--min-recall", "0"],
         ["compare", "runs/r", "runs/r"], ["rescore", "runs/r"],
         ["run", "d.jsonl", "--name", "r", *RUN]]
    )  # fmt: skip


def round_files(box: Sandbox, rng: random.Random) -> None:
    name, argv = rng.choice(
        [("reply.txt", ["validate", "reply.txt"]),
         ("pairs.jsonl", ["matcher", "calibrate", "--pairs", "pairs.jsonl"]),
         ("locomo.json", ["datasets", "import-locomo", "locomo.json", "--out", "l.jsonl"])]
    )  # fmt: skip
    box.note = damage(box.root / name, rng, box.outside)
    box.argv = argv


def round_options(box: Sandbox, rng: random.Random) -> None:
    option = rng.choice(sorted(OPTION_VALUES))
    value = rng.choice(OPTION_VALUES[option])
    box.note = f"{option} {value}"
    if option == "--resamples":
        box.argv = [rng.choice(["compare", "gate"]), "runs/r", option, value]
        if box.argv[0] == "gate":
            box.argv += ["--min-recall", "0"]
    else:
        box.argv = ["run", "d.jsonl", option, value, *RUN]


def round_server(box: Sandbox, rng: random.Random) -> None:
    box.server = rng.choice(SERVER_MODES)
    box.note = f"server {box.server}"
    box.argv = ["run", "d.jsonl", "--backend", "openai:probe", "--cache-dir", "cache2", *RUN]


def _table_rows() -> list[Case]:
    """The rows a round can replay: pending rows fail by design, Ctrl-C rows need the
    runner's timing."""
    return [case for case in MORE_CASES if not case.pending and not case.interrupt]


def round_table(box: Sandbox, rng: random.Random) -> None:
    """A row of the fuzz table's newer groups, set up in the sandbox (its setup runs here,
    in the sandbox, like the runner's)."""
    case = rng.choice(_table_rows())
    for seed in list(box.root.iterdir()):  # the row starts from an empty sandbox, as in tests
        if seed.is_dir() and not seed.is_symlink():
            shutil.rmtree(seed)
        else:
            seed.unlink()
    values = {"outside": box.outside, "sandbox": box.root, "password": PASSWORD}
    box.note = f"table row {case.id!r}"
    box.server = case.server.split(">")[-1]
    box.env = {name: value.format(**values) for name, value in case.env.items()}
    box.exit = case.exit
    home, cwd = os.environ.get("MEMLAB_HOME"), Path.cwd()
    os.environ["MEMLAB_HOME"] = str(box.root / "home")
    try:
        os.chdir(box.root)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            materialise(case, box.root, box.outside)
    finally:
        os.chdir(cwd)
        if home is None:
            os.environ.pop("MEMLAB_HOME", None)
        else:
            os.environ["MEMLAB_HOME"] = home
    box.argv = [arg.format(**values) for arg in case.argv]


ROUNDS: dict[str, Callable[[Sandbox, random.Random], None]] = {
    "dataset": round_dataset,
    "grid": round_grid,
    "profile": round_profile,
    "cache": round_cache,
    "run": round_run,
    "files": round_files,
    "options": round_options,
    "server": round_server,
    "table": round_table,
}


# --- checking ---------------------------------------------------------------------------------


def violations(
    box: Sandbox, done: Any, before: dict[str, Any], claims: dict[str, bytes], seconds: float
) -> list[str]:
    """The invariants a finished command broke."""
    found: list[str] = []
    text = done.out + done.err
    if done.code not in (0, 1, 2) or (box.exit is not None and done.code != box.exit):
        found.append(f"exit {done.code}" + (f" (the row says {box.exit})" if box.exit else ""))
    if "Traceback" in text:
        found.append("traceback")
    errors = [line for line in done.err.splitlines() if line.startswith("error:")]
    if done.code == 2 and len(errors) != 1:
        found.append(f"{len(errors)} error lines with exit 2")
    if len(text) > MAX_OUTPUT or any(len(line) > MAX_LINE for line in text.splitlines()):
        found.append("unbounded output")
    if tree(box.root.parent, box.root) != before:
        found.append("changed outside the sandbox")
    if leaks(box.root.parent, [done.out, done.err]):
        found.append("secret written or shown")
    if hollow_runs(box.root, claims):
        found.append("complete run without results")
    if done.rss_bytes >= MAX_RSS_BYTES:
        found.append(f"peak RSS {done.rss_bytes // 2**20} MiB")
    if done.seconds >= seconds:
        found.append(f"{done.seconds:.0f} s")
    return found


def play(
    seeds: Path, work: Path, kind: str, rng: random.Random, keep: Path | None, seconds: float
) -> list[str]:
    """One round: copy the seeds, damage, run, check; the violations found."""
    base = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=work))
    box = Sandbox(base / "sandbox")
    shutil.copytree(seeds, box.root, symlinks=True)
    box.outside.mkdir()
    (box.outside / "sentinel.txt").write_text("must stay", encoding="utf-8")
    ROUNDS[kind](box, rng)
    env = {"OPENAI_API_KEY": SECRET, "MEMLAB_HOME": str(box.root / "home"), **box.env}
    before, claims = tree(base, box.root), manifests(box.root)
    if box.server:
        with HostileServer(box.server) as server:
            port = server.httpd.server_address[1]
            env["OPENAI_BASE_URL"] = f"http://probe-user:{PASSWORD}@127.0.0.1:{port}/v1"
            done = run_process(box.argv, box.root, env, timeout=90)
    else:
        done = run_process(box.argv, box.root, env, timeout=90)
    found = violations(box, done, before, claims, seconds)
    if found:
        print(f"VIOLATION [{kind}] {box.note}: memlab {' '.join(box.argv)}: {'; '.join(found)}")
        print(f"  exit {done.code}; stderr: {done.err[-500:]!r}")
        if keep is not None:
            shutil.copytree(base, keep / base.name, symlinks=True, ignore_dangling_symlinks=True)
    shutil.rmtree(base, ignore_errors=True)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to probe")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: time)")
    parser.add_argument("--keep", type=Path, help="copy sandboxes that broke an invariant here")
    parser.add_argument("--rounds", type=int, default=0, help="stop after this many rounds")
    parser.add_argument(
        "--kinds", default=",".join(ROUNDS), help="comma-separated round kinds (default: all)"
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time())
    kinds = sorted({kind.strip() for kind in args.kinds.split(",") if kind.strip()})
    if not kinds or not set(kinds) <= set(ROUNDS):
        parser.error(f"--kinds: choose from {', '.join(ROUNDS)}")
    rng = random.Random(seed)
    deadline = time.monotonic() + args.minutes * 60
    played: Counter[str] = Counter()
    broken: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="memlab-probe-") as work_dir:
        work = Path(work_dir)
        # On a busy machine a plain run takes longer: the time bound follows the seed run.
        seconds = max(MAX_SECONDS, 2 * make_seeds(work / "seeds"))
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
        while time.monotonic() < deadline and (
            not args.rounds or sum(played.values()) < args.rounds
        ):
            kind = rng.choice(kinds)
            played[kind] += 1
            for problem in play(work / "seeds", work, kind, rng, args.keep, seconds):
                broken[problem.split(" ")[0]] += 1
    total = sum(played.values())
    print(f"probe seed {seed}: {total} rounds ({dict(sorted(played.items()))}); "
          f"violations: {sum(broken.values())} {dict(broken) or ''}")  # fmt: skip
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
