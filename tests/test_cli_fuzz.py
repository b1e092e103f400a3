"""The command line against untrusted input: every bad input ends in one clear line.

Each row of ``CASES`` writes its input files into a fresh sandbox directory (the working
directory of the command), runs ``memlab.cli.main.main`` in-process (or the real process for
rows marked ``subprocess``) and asserts:

- the exit code of the row (2 for bad input; 1 where validation failing is the contract);
- a message: one ``error:`` line on stderr for exit 2, bounded lines otherwise, containing
  the row's ``expect`` text;
- no traceback, printed or logged;
- bounded output (a YAML alias bomb or a 50 MB grid must not be echoed);
- nothing created, changed or removed outside the sandbox: the rest of the test's temporary
  directory holds a sentinel file and is compared before and after.

To add a case, append a :class:`Case`. Paths in ``argv`` may use ``{outside}`` (a watched
directory outside the sandbox) and ``{sandbox}``. Rows whose fix lives elsewhere carry
``pending`` with the reason: they are strict xfails, so the fix turns them into failures
that ask for the mark to be removed.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from builders import cache_entries, locomo_sample, one_turn

import memlab
from memlab.cli.main import main

T0 = datetime(2025, 5, 5, 9, 0, tzinfo=UTC)
MAX_STDERR = 4000
MAX_LINE = 2100
SANDBOX_RUN = ["--runs-dir", "runs", "--no-progress"]
# Replays smoke's first owner again (a new run) from the cache recorded by a row's setup.
RERUN = [
    "run",
    "smoke",
    "--cache-dir",
    "cache",
    "--max-owners",
    "1",
    "--name",
    "again",
    *SANDBOX_RUN,
]

FileContent = str | bytes | Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    """One bad input: files to create, the command, and the expected outcome."""

    id: str
    argv: list[str]
    files: dict[str, FileContent] = field(default_factory=dict)
    exit: int = 2
    expect: str = ""
    check: Callable[[Path], None] | None = None
    subprocess: bool = False
    pending: str = ""


# --- inputs -----------------------------------------------------------------------------------


def owner(user_id: Any = "u1", **extra: Any) -> dict[str, Any]:
    return {"user_id": user_id, "sessions": [one_turn("t1", T0, "I like green tea.")], **extra}


def jsonl(*owners: dict[str, Any]) -> str:
    return "".join(json.dumps(o) + "\n" for o in owners)


def deep_tool_args(levels: int) -> str:
    """A dataset line whose tool-call args nest ``levels`` objects (built as text)."""
    data = owner()
    message = data["sessions"][0]["messages"][1]
    message["tool_calls"] = [{"id": "c1", "name": "lookup", "args": {"q": "__DEEP__"}}]
    text = json.dumps(data)
    return text.replace('"__DEEP__"', '{"a":' * levels + "1" + "}" * levels) + "\n"


def alias_bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(8):
        name, prev = chr(98 + i), chr(97 + i)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\nname: bomb\ndataset: smoke\naxes:\n  prompt: *i\n"


def big_grid(path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        handle.write("name: big\ndataset: smoke\naxes:\n  prompt: [default]\n")
        chunk = "# " + "x" * 1022 + "\n"
        for _ in range(50 * 1024):
            handle.write(chunk)


def locomo(**changes: Any) -> str:
    return json.dumps([locomo_sample(**changes)])


def cache_entry_for_smoke(sandbox: Path) -> None:
    """Record the cache of ``memlab run smoke`` into ``cache/`` (scripted model)."""
    assert main(["run", "smoke", "--cache-dir", "cache", "--max-owners", "1", *SANDBOX_RUN]) == 0


def corrupt_entries(content: bytes | None) -> Callable[[Path], None]:
    """Record the smoke cache, then replace every entry (``None``: by a directory)."""

    def make(sandbox: Path) -> None:
        cache_entry_for_smoke(sandbox)
        for entry in cache_entries(sandbox / "cache"):
            entry.unlink()
            if content is None:
                entry.mkdir()
            else:
                entry.write_bytes(content)

    return make


def swapped_entries(sandbox: Path) -> None:
    """Record the smoke cache, then give each entry the completion of another request."""
    cache_entry_for_smoke(sandbox)
    entries = cache_entries(sandbox / "cache")
    assert len(entries) >= 2
    texts = [json.loads(p.read_text("utf-8")) for p in entries]
    for path, data in zip(entries, texts[1:] + texts[:1], strict=True):
        planted = dict(data, completion={**data["completion"], "text": "PLANTED"})
        path.write_text(json.dumps(planted), encoding="utf-8")


def set_aside_and_rerun(sandbox: Path) -> None:
    aside = list((sandbox / "cache").glob("*/*.corrupt-*"))
    assert aside, "corrupt entries must be moved aside, not overwritten"
    assert len(cache_entries(sandbox / "cache")) == len(aside)  # re-recorded
    calls = (sandbox / "runs" / "again" / "calls.jsonl").read_text("utf-8")
    assert "PLANTED" not in calls


def garbled_verdicts(sandbox: Path) -> None:
    """Record the smoke cache, then garble the matcher verdicts saved beside it."""
    cache_entry_for_smoke(sandbox)
    saved = list((sandbox / "cache" / "verdicts").glob("*.json"))
    assert saved
    for path in saved:
        path.write_bytes(b"{not json")


def verdicts_rewritten(sandbox: Path) -> None:
    for path in (sandbox / "cache" / "verdicts").glob("*.json"):
        assert json.loads(path.read_text("utf-8"))["verdicts"]


def output_unchanged(name: str, content: str) -> Callable[[Path], None]:
    def check(sandbox: Path) -> None:
        assert (sandbox / name).read_text("utf-8") == content

    return check


def valid_output(name: str) -> Callable[[Path], None]:
    def check(sandbox: Path) -> None:
        assert main(["datasets", "validate", str(sandbox / name)]) == 0

    return check


def stdout_has(text: str) -> Callable[[Path], None]:
    def check(sandbox: Path) -> None:
        assert text in (sandbox / ".stdout").read_text("utf-8")

    return check


TRAVERSAL = "../../../../../../outside/pwned"
BAD_UTF8 = b'{"user_id": "u\xff\xfe"}\n'
LONG_ID = "x" * 300
LOCOMO_SOURCE = locomo()

# --- the table --------------------------------------------------------------------------------


# fmt: off
def finished_run(edit: Callable[[Path], None] | None = None) -> Callable[[Path], None]:
    """Setup: a real run ``runs/r`` of smoke (scripted), then ``edit(run_dir)``."""

    def setup(sandbox: Path) -> None:
        assert main(["run", "smoke", "--name", "r", "--runs-dir", "runs", "--no-progress"]) == 0
        if edit is not None:
            edit(sandbox / "runs" / "r")

    return setup


def drop_lines(name: str, count: int) -> Callable[[Path], None]:
    def edit(run: Path) -> None:
        lines = (run / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (run / name).write_text("".join(lines[:-count]), encoding="utf-8")

    return edit


def unlink(name: str) -> Callable[[Path], None]:
    return lambda run: (run / name).unlink()


def manifest_lane(run: Path) -> None:
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["lanes"].append("ghost-lane")
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def manifest_format(run: Path) -> None:
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    manifest["run_format"] = 1
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


CASES: list[Case] = [
    # Dataset ids that would become file paths (issue 17 item 1).
    Case("dataset path traversal id: run", ["run", "d.jsonl", *SANDBOX_RUN],
         {"d.jsonl": jsonl(owner(TRAVERSAL))}, expect="user_id"),
    Case("dataset path traversal id: validate", ["datasets", "validate", "d.jsonl"],
         {"d.jsonl": jsonl(owner(TRAVERSAL))}, exit=1, expect="d.jsonl:1: user_id"),
    Case("dataset absolute id: run", ["run", "d.jsonl", *SANDBOX_RUN],
         {"d.jsonl": "__ABSOLUTE__"}, expect="path separator"),
    Case("dataset id with slash (LoCoMo style)", ["datasets", "validate", "d.jsonl"],
         {"d.jsonl": jsonl(owner("conv-26/Caroline"))}, exit=1, expect="path separator"),
    Case("dataset id '..'", ["run", "d.jsonl", *SANDBOX_RUN],
         {"d.jsonl": jsonl(owner(".."))}, expect="user_id"),
    Case("dataset id with NUL", ["datasets", "validate", "d.jsonl"],
         {"d.jsonl": jsonl(owner("a\x00b"))}, exit=1, expect="NUL"),
    Case("dataset id of 300 characters", ["run", "d.jsonl", *SANDBOX_RUN],
         {"d.jsonl": jsonl(owner(LONG_ID))}, expect="300 characters"),
    Case("dataset id that is hidden", ["datasets", "validate", "d.jsonl"],
         {"d.jsonl": jsonl(owner(".hidden"))}, exit=1, expect="starts with '.'"),
    # Dataset files (items 9, 10).
    Case("dataset invalid UTF-8: run", ["run", "d.jsonl", *SANDBOX_RUN],
         {"d.jsonl": BAD_UTF8}, expect="not UTF-8"),
    Case("dataset invalid UTF-8: validate", ["datasets", "validate", "d.jsonl"],
         {"d.jsonl": BAD_UTF8}, exit=1, expect="not UTF-8"),
    Case("dataset tool-call args 900 levels: validate", ["datasets", "validate", "d.jsonl"],
         {"d.jsonl": deep_tool_args(900)}, exit=1, expect="nested more than 100 levels"),
    Case("dataset tool-call args 900 levels: run", ["run", "d.jsonl", *SANDBOX_RUN],
         {"d.jsonl": deep_tool_args(900)}, expect="nested more than 100 levels"),
    Case("dataset line 10,000 levels: run", ["run", "d.jsonl", *SANDBOX_RUN],
         {"d.jsonl": "[" * 10_000 + "]" * 10_000 + "\n"}, expect="nested more than"),
    Case("dataset line 10,000 levels: stats", ["datasets", "stats", "d.jsonl"],
         {"d.jsonl": "[" * 10_000 + "]" * 10_000 + "\n"}, exit=1, expect="nested more than"),
    Case("dataset empty file", ["run", "d.jsonl", *SANDBOX_RUN], {"d.jsonl": ""},
         expect="empty"),
    Case("dataset is a directory", ["run", "d.jsonl", *SANDBOX_RUN],
         {"d.jsonl/x": "x"}, expect="d.jsonl"),
    Case("dataset name with NUL", ["run", "a\x00b", *SANDBOX_RUN], expect="dataset"),
    Case("dataset name of 300 characters", ["run", LONG_ID, *SANDBOX_RUN], expect="dataset"),
    Case("dataset name of 300 characters: validate", ["datasets", "validate", LONG_ID],
         exit=1, expect="dataset"),
    Case("dataset path missing", ["run", "missing.jsonl", *SANDBOX_RUN], expect="not found"),
    Case("dataset stats on binary", ["datasets", "stats", "d.jsonl"],
         {"d.jsonl": bytes(range(256))}, exit=1, expect="d.jsonl:1"),
    # Grid files (item 3).
    Case("grid alias bomb", ["sweep", "g.yaml", *SANDBOX_RUN], {"g.yaml": alias_bomb()},
         expect="once aliases are expanded"),
    Case("grid alias bomb (process)", ["sweep", "g.yaml", *SANDBOX_RUN],
         {"g.yaml": alias_bomb()}, expect="once aliases are expanded", subprocess=True),
    Case("grid 50 MB", ["sweep", "g.yaml", *SANDBOX_RUN], {"g.yaml": big_grid},
         expect="bytes"),
    Case("grid recursive alias", ["sweep", "g.yaml", *SANDBOX_RUN],
         {"g.yaml": "name: r\naxes: &a {prompt: [*a]}\n"}, expect="alias"),
    Case("grid nested 10,000 levels", ["sweep", "g.yaml", *SANDBOX_RUN],
         {"g.yaml": "name: d\nbase: " + "[" * 10_000 + "]" * 10_000 + "\n"},
         expect="levels deep"),
    Case("grid invalid UTF-8", ["sweep", "g.yaml", *SANDBOX_RUN],
         {"g.yaml": b"name: \xff\xfe\n"}, expect="not UTF-8"),
    Case("grid is a list", ["sweep", "g.yaml", *SANDBOX_RUN], {"g.yaml": "- a\n- b\n"},
         expect="mapping"),
    Case("grid unknown axis", ["sweep", "g.yaml", *SANDBOX_RUN],
         {"g.yaml": "name: u\naxes: {colour: [red]}\n"}, expect="unknown axis"),
    Case("grid a million lanes", ["sweep", "g.yaml", *SANDBOX_RUN],
         {"g.yaml": "name: m\naxes:\n  seed: [" + ",".join(map(str, range(1000))) + "]\n"
          "  max_tokens: [" + ",".join(map(str, range(16, 1016))) + "]\n"},
         expect="lanes"),
    Case("grid 1 MB invalid value", ["sweep", "g.yaml", *SANDBOX_RUN],
         {"g.yaml": "name: v\nbase: {max_facts: '" + "9" * 1_000_000 + "'}\n"},
         expect="max_facts"),
    Case("grid thousands of invalid values", ["sweep", "g.yaml", *SANDBOX_RUN],
         {"g.yaml": "name: v\naxes: {max_facts: [" + ",".join(["-1"] * 5000) + "]}\n"},
         expect="max_facts"),
    Case("grid syntax error", ["sweep", "g.yaml", *SANDBOX_RUN],
         {"g.yaml": "name: [unclosed\n"}, expect="line"),
    Case("grid is a directory", ["sweep", "g.yaml", *SANDBOX_RUN], {"g.yaml/x": "x"},
         expect="cannot read"),
    Case("grid missing", ["sweep", "missing.yaml", *SANDBOX_RUN], expect="cannot read"),
    Case("grid path with NUL", ["sweep", "g\x00.yaml", *SANDBOX_RUN], expect="cannot read"),
    Case("grid naming a traversal dataset", ["sweep", "g.yaml", *SANDBOX_RUN],
         {"g.yaml": "name: t\ndataset: d.jsonl\n", "d.jsonl": jsonl(owner(TRAVERSAL))},
         expect="user_id"),
    Case("grid name with path traversal", ["sweep", "g.yaml", *SANDBOX_RUN],
         {"g.yaml": "name: ../../outside/run\n"}, expect="run name"),
    Case("grid empty name", ["sweep", "g.yaml", *SANDBOX_RUN], {"g.yaml": "name: ''\n"},
         expect="run name"),
    # Command-line numbers and names (item 10).
    Case("--workers 0", ["run", "smoke", "--workers", "0", *SANDBOX_RUN], expect="workers"),
    Case("--workers -1", ["run", "smoke", "--workers", "-1", *SANDBOX_RUN], expect="workers"),
    Case("--workers abc", ["run", "smoke", "--workers", "abc", *SANDBOX_RUN],
         expect="whole number"),
    Case("--workers 10^6", ["sweep", "g.yaml", "--workers", "1000000", *SANDBOX_RUN],
         expect="workers"),
    Case("--executor unknown scheme", ["run", "smoke", "--executor", "spark://h:7077",
                                       *SANDBOX_RUN], expect="dask://HOST:PORT"),
    Case("--executor dask-local:0", ["run", "smoke", "--executor", "dask-local:0",
                                     *SANDBOX_RUN], expect="dask-local:N"),
    Case("--executor 1 MB", ["sweep", "g.yaml", "--executor", "dask://" + "h" * 10**6,
                             *SANDBOX_RUN], expect="bad executor"),
    Case("--max-owners 0", ["run", "smoke", "--max-owners", "0", *SANDBOX_RUN],
         expect="max-owners"),
    Case("--max-sessions -5", ["run", "smoke", "--max-sessions", "-5", *SANDBOX_RUN],
         expect="max-sessions"),
    Case("--threshold nan", ["run", "smoke", "--threshold", "nan", *SANDBOX_RUN],
         expect="fact_confidence_threshold"),
    Case("--threshold 5", ["run", "smoke", "--threshold", "5", *SANDBOX_RUN],
         expect="fact_confidence_threshold"),
    Case("--max-facts 5", ["run", "smoke", "--max-facts", "5", *SANDBOX_RUN],
         expect="max_facts"),
    Case("--debounce 0", ["run", "smoke", "--debounce", "0", *SANDBOX_RUN],
         expect="debounce"),
    Case("--max-tokens 1e9", ["run", "smoke", "--max-tokens", "1e9", *SANDBOX_RUN],
         expect="max-tokens"),
    Case("--prompt unknown", ["run", "smoke", "--prompt", "nope\x00" + "p" * 5000,
                              *SANDBOX_RUN], expect="unknown prompt"),
    Case("--name with NUL", ["run", "smoke", "--name", "a\x00b", *SANDBOX_RUN],
         expect="NUL"),
    Case("--name of 300 characters", ["run", "smoke", "--name", LONG_ID, *SANDBOX_RUN],
         expect="300 characters"),
    Case("--name path traversal", ["run", "smoke", "--name", "../../outside/x", *SANDBOX_RUN],
         expect="path separator"),
    Case("--name absolute", ["run", "smoke", "--name", "{outside}/x", *SANDBOX_RUN],
         expect="run name"),
    Case("--runs-dir is a file", ["run", "smoke", "--runs-dir", "f", "--no-progress"],
         {"f": "x"}, expect="not a directory"),
    Case("--runs-dir below a file", ["run", "smoke", "--runs-dir", "f/sub", "--no-progress"],
         {"f": "x"}, expect="not a directory"),
    Case("--cache-dir is a file", ["run", "smoke", "--cache-dir", "f", *SANDBOX_RUN],
         {"f": "x"}, expect="not a directory"),
    Case("--cache-dir is a file (process)", ["run", "smoke", "--cache-dir", "f", *SANDBOX_RUN],
         {"f": "x"}, expect="not a directory", subprocess=True),
    Case("report -o an existing file", ["report", "runs/run", "-o", "f"],
         {"f": "keep"}, expect="not a directory", check=output_unchanged("f", "keep")),
    Case("report of a directory that is no run", ["report", "nothing", "-o", "out"],
         {"nothing/x": "x"}, expect="not a memlab run"),
    Case("report title with markup", ["report", "missing", "-o", "out", "--title", "x"],
         expect="not a memlab run"),
    Case("cache prune --older-than 1000000d", ["cache", "prune", "c", "--older-than",
                                               "1000000d"], {"c/x": "x"}, expect="duration"),
    Case("cache prune --older-than 1e400d", ["cache", "prune", "c", "--older-than",
                                             "9" * 400 + "d"], {"c/x": "x"}, expect="duration"),
    Case("cache prune --unused-since garbage", ["cache", "prune", "c", "--unused-since",
                                                "tomorrow"], {"c/x": "x"}, expect="invalid time"),
    Case("cache prune without a criterion", ["cache", "prune", "c"], {"c/x": "x"},
         expect="criterion"),
    Case("cache stats on a file", ["cache", "stats", "f"], {"f": "x"},
         expect="not a directory"),
    Case("cache stats on a missing directory", ["cache", "stats", "nope"],
         expect="no such directory"),
    Case("unknown option", ["run", "smoke", "--colour", "red"], expect="unrecognized"),
    Case("unknown command", ["frobnicate"], expect="invalid choice"),
    Case("validate reply invalid UTF-8", ["validate", "r.txt"], {"r.txt": b"\xff\xfe{}"},
         expect="cannot read"),
    Case("validate reply 10,000 levels", ["validate", "r.txt"],
         {"r.txt": "[" * 10_000 + "]" * 10_000}, exit=1),
    Case("gate without thresholds", ["gate", "runs/run"], expect="threshold"),
    Case("gate of a 300-character path", ["gate", LONG_ID, "--min-recall", "0.5"],
         expect="too long"),
    Case("report of a 300-character path", ["report", LONG_ID, "-o", "out"], expect="too long"),
    Case("validate a path with NUL", ["validate", "r\x00.txt"], expect="cannot read"),
    Case("--prompt of 300 characters", ["run", "smoke", "--prompt", LONG_ID, *SANDBOX_RUN],
         expect="unknown prompt"),
    Case("prompts show of 300 characters", ["prompts", "show", LONG_ID], expect="prompt"),
    # Response cache entries (item 6): set aside and re-recorded in read-write mode.
    Case("cache entry garbage", RERUN, {"setup": corrupt_entries(b"{not json")}, exit=0,
         check=set_aside_and_rerun),
    Case("saved verdicts garbage", RERUN, {"setup": garbled_verdicts}, exit=0,
         check=verdicts_rewritten),
    Case("cache entry invalid UTF-8", RERUN, {"setup": corrupt_entries(b"\xff")}, exit=0,
         check=set_aside_and_rerun),
    Case("cache entry 10,000 levels", RERUN,
         {"setup": corrupt_entries(b"[" * 10_000 + b"]" * 10_000)}, exit=0,
         check=set_aside_and_rerun),
    Case("cache entries of other requests", RERUN, {"setup": swapped_entries}, exit=0,
         check=set_aside_and_rerun),
    # A failed backend call (here: the cache) fails the run with exit 1 and names the cause.
    Case("cache entry is a directory", RERUN, {"setup": corrupt_entries(None)}, exit=1,
         expect="cannot be read"),
    Case("cache entry corrupt in read-only mode", [*RERUN, "--cache-mode", "read_only"],
         {"setup": corrupt_entries(b"{not json")}, exit=1, expect="is corrupt"),
    Case("cache stats with corrupt entries", ["cache", "stats", "cache"],
         {"setup": corrupt_entries(b"\xff")}, exit=0, check=stdout_has("unreadable entries")),
    # LoCoMo importer (item 9).
    Case("locomo invalid UTF-8", ["datasets", "import-locomo", "l.json", "--out", "o.jsonl"],
         {"l.json": b'[{"sample_id": "\xff"}]'}, expect="not UTF-8"),
    Case("locomo 10,000 levels", ["datasets", "import-locomo", "l.json", "--out", "o.jsonl"],
         {"l.json": "[" * 10_000 + "]" * 10_000}, expect="nested more than"),
    Case("locomo turn not an object", ["datasets", "import-locomo", "l.json", "--out",
                                       "o.jsonl"],
         {"l.json": locomo(**{"conversation.session_1": ["hello", "there"]})},
         expect="session_1[0]: expected a turn object"),
    Case("locomo observations not an object", ["datasets", "import-locomo", "l.json", "--out",
                                               "o.jsonl"],
         {"l.json": locomo(observation=["Ann lives in Lisbon"])}, expect="observation"),
    Case("locomo session observations not an object",
         ["datasets", "import-locomo", "l.json", "--out", "o.jsonl"],
         {"l.json": locomo(**{"observation.session_1_observation": "Ann lives in Lisbon"})},
         expect="session_1_observation"),
    Case("locomo observation is a string", ["datasets", "import-locomo", "l.json", "--out",
                                            "o.jsonl"],
         {"l.json": locomo(**{"observation.session_1_observation.Ann": ["Ann likes tea"]})},
         expect="[text, evidence] pair"),
    Case("locomo integer img_url", ["datasets", "import-locomo", "l.json", "--out", "o.jsonl"],
         {"l.json": locomo(**{"conversation.session_1.1.blip_caption": "a cat",
                              "conversation.session_1.1.img_url": 7})},
         expect="img_url"),
    Case("locomo duplicate sample ids", ["datasets", "import-locomo", "l.json", "--out",
                                         "o.jsonl"],
         {"l.json": json.dumps(json.loads(LOCOMO_SOURCE) * 2)}, expect="duplicate sample id"),
    Case("locomo identical speakers", ["datasets", "import-locomo", "l.json", "--out",
                                       "o.jsonl"],
         {"l.json": locomo(**{"conversation.speaker_b": "Ann"})}, expect="both speakers"),
    Case("locomo --out is the source", ["datasets", "import-locomo", "l.json", "--out",
                                        "./l.json"],
         {"l.json": LOCOMO_SOURCE}, expect="source file",
         check=output_unchanged("l.json", LOCOMO_SOURCE)),
    Case("locomo --out of 300 characters", ["datasets", "import-locomo", "l.json", "--out",
                                            LONG_ID], {"l.json": LOCOMO_SOURCE}, expect="long"),
    Case("locomo --out is a directory", ["datasets", "import-locomo", "l.json", "--out", "o"],
         {"l.json": LOCOMO_SOURCE, "o/x": "x"}, expect="directory"),
    Case("locomo top level object", ["datasets", "import-locomo", "l.json", "--out", "o.jsonl"],
         {"l.json": '{"sample_id": "x"}'}, expect="JSON list"),
    Case("locomo empty list", ["datasets", "import-locomo", "l.json", "--out", "o.jsonl"],
         {"l.json": "[]"}, expect="JSON list"),
    Case("locomo sample not an object", ["datasets", "import-locomo", "l.json", "--out",
                                         "o.jsonl"], {"l.json": "[1, 2]"},
         expect="conversation object"),
    Case("locomo missing date", ["datasets", "import-locomo", "l.json", "--out", "o.jsonl"],
         {"l.json": locomo(**{"conversation.session_1_date_time": None})}, expect="date_time"),
    Case("locomo unknown speaker", ["datasets", "import-locomo", "l.json", "--out", "o.jsonl"],
         {"l.json": locomo(**{"conversation.session_1.0.speaker": "Eve"})},
         expect="unknown speaker"),
    Case("locomo speaker names with path syntax import safely",
         ["datasets", "import-locomo", "l.json", "--out", "o.jsonl"],
         {"l.json": locomo(**{"sample_id": "../x", "conversation.speaker_b": "B/../b",
                              "conversation.session_1.1.speaker": "B/../b"})},
         exit=0, check=valid_output("o.jsonl")),
    # Run directories that disagree with their manifest, and honest failure states (items 4, 5).
    Case("report of a run that stopped", ["report", "runs/r", "-o", "out"],
         {"setup": finished_run(unlink("manifest.json"))}, expect="did not finish"),
    Case("report of a run with 10 calls deleted", ["report", "runs/r", "-o", "out"],
         {"setup": finished_run(drop_lines("calls.jsonl", 2))}, expect="changed after"),
    Case("gate on a run with sessions deleted", ["gate", "runs/r", "--min-recall", "0"],
         {"setup": finished_run(drop_lines("sessions.jsonl", 1))}, expect="changed after"),
    Case("report of a run missing its calls", ["report", "runs/r", "-o", "out"],
         {"setup": finished_run(unlink("calls.jsonl"))}, expect="missing"),
    Case("report of a run naming a lane it lacks", ["report", "runs/r", "-o", "out"],
         {"setup": finished_run(manifest_lane)}, expect="ghost-lane"),
    Case("report of a run of another format", ["report", "runs/r", "-o", "out"],
         {"setup": finished_run(manifest_format)}, expect="run format"),
    Case("read-only cache miss fails the run",
         ["run", "smoke", "--cache-dir", "c", "--cache-mode", "read_only", *SANDBOX_RUN],
         {"c/.keep": ""}, exit=1, expect="backend errors"),
    Case("a run into a directory holding other files keeps them",
         ["run", "smoke", "--name", "keep", *SANDBOX_RUN],
         {"runs/keep/precious.txt": "mine"}, exit=0,
         check=output_unchanged("runs/keep/precious.txt", "mine")),
]
# fmt: on


# --- the runner -------------------------------------------------------------------------------


def _tree(root: Path, skip: Path) -> dict[str, tuple[int, int]]:
    """Every file and directory under ``root`` except ``skip``: (size, mtime_ns)."""
    found: dict[str, tuple[int, int]] = {}
    for directory, dirs, files in os.walk(root):
        if Path(directory) == skip:
            dirs[:] = []
            continue
        for name in [*dirs, *files]:
            path = Path(directory) / name
            if path == skip:
                continue
            stat = path.lstat()
            found[str(path)] = (stat.st_size if name in files else 0, stat.st_mtime_ns)
    return found


def _materialise(case: Case, sandbox: Path, outside: Path) -> None:
    for name, content in case.files.items():
        if name == "setup":
            assert callable(content)
            content(sandbox)
            continue
        path = sandbox / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == "__ABSOLUTE__":
            content = jsonl(owner(str(outside / "absolute")))
        if callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def _run_subprocess(argv: list[str], sandbox: Path) -> tuple[int, str, str]:
    src = Path(memlab.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        [sys.executable, "-m", "memlab", *argv],
        cwd=sandbox,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def _params() -> list[Any]:
    params = []
    for case in CASES:
        marks = [pytest.mark.xfail(reason=case.pending, strict=True)] if case.pending else []
        params.append(pytest.param(case, id=case.id, marks=marks))
    return params


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 60
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", _params())
def test_bad_input_gives_one_clear_line(
    case: Case,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    sandbox, outside = tmp_path / "sandbox", tmp_path / "outside"
    sandbox.mkdir()
    outside.mkdir()
    (outside / "sentinel.txt").write_text("must stay", encoding="utf-8")
    monkeypatch.chdir(sandbox)
    monkeypatch.setenv("MEMLAB_HOME", str(sandbox / "home"))
    _materialise(case, sandbox, outside)
    capsys.readouterr()
    caplog.clear()
    before = _tree(tmp_path, sandbox)

    argv = [a.format(outside=outside, sandbox=sandbox) for a in case.argv]
    if case.subprocess:
        code, out, err = _run_subprocess(argv, sandbox)
    else:
        with caplog.at_level(logging.WARNING):
            code = main(argv)
        out, err = capsys.readouterr()
    (sandbox / ".stdout").write_text(out, encoding="utf-8")

    assert _tree(tmp_path, sandbox) == before, "files outside the sandbox changed"
    assert (outside / "sentinel.txt").read_text(encoding="utf-8") == "must stay"
    assert "Traceback" not in out + err
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert len(err) <= MAX_STDERR
    assert all(len(line) <= MAX_LINE for line in (out + err).splitlines())
    assert code == case.exit, f"exit {code}: {err or out}"
    if case.exit == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        if case.subprocess:  # the real process also shows log lines; one error line
            lines = [line for line in lines if line.startswith("error:")]
        assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert case.expect in out + err
    if case.check is not None:
        case.check(sandbox)
