"""The fuzz table: hostile inputs to the command line, one row each (the runner is
``tests/test_cli_fuzz.py``; ``scripts/probe.py`` draws random rows of the same kinds).

Each row writes its input files into a fresh sandbox directory (the working directory of the
command), runs ``memlab`` in-process (or as its own process for rows marked ``subprocess``,
``bomb`` or ``interrupt``), with ``OPENAI_API_KEY`` set to a known secret, and the runner
asserts the row's exit code and message and the invariants of ``tests/hostile.py``:

- the exit code of the row (2 for bad input; 1 where validation failing is the contract or a
  replay did not finish; 130 after Ctrl-C);
- a message: one ``error:`` line on stderr for exit 2, bounded lines otherwise, containing
  the row's ``expect`` text;
- no traceback, printed or logged; bounded output;
- nothing created, changed or removed outside the sandbox (the rest of the test's temporary
  directory, with a sentinel file, is compared before and after);
- no secret in any byte written (sandbox and outside) nor in any output or log line;
- no run directory that says "complete" without a finished record for every replay;
- ``bomb`` rows run as a process whose peak RSS stays under 1 GiB and CPU time under 30 s;
  ``interrupt`` rows get SIGINT once the hostile server holds a request (it never answers),
  and must end with exit 130 within 30 s, before any request timeout could end them.

To add a case, append a :class:`Case` to the group of its kind. Paths in ``argv`` and values
in ``env`` may use ``{outside}`` (a watched directory outside the sandbox), ``{sandbox}``,
``{server}`` (the hostile server's base URL), ``{port}`` and ``{password}``. Rows whose fix
lives elsewhere carry ``pending`` with the reason: they are strict xfails, so the fix turns
them into failures that ask for the mark to be removed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from builders import cache_entries, locomo_sample, one_turn

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
    server: str = ""
    """Mode of the hostile OpenAI-compatible server (``tests/fake_openai.py``) the command
    talks to (``OPENAI_BASE_URL``); ``"a>b"``: the setup runs under mode a, the command
    under mode b."""
    env: dict[str, str] = field(default_factory=dict)
    bomb: bool = False
    """A resource bomb: run as a process; peak RSS < 1 GiB and CPU time < 30 s."""
    interrupt: bool = False
    """Send SIGINT once the server holds a request; exit 130 well before any reply could come."""
    read_only: str = ""
    """A directory (relative to the sandbox) made read-only while the command runs."""

    @property
    def own_process(self) -> bool:
        return self.subprocess or self.bomb or self.interrupt


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
    """Record the smoke cache, then put garbage where the default matcher's verdicts are
    kept beside it (an unreadable file is ignored: it is a cache)."""
    from memlab.matching.matchers import default_matcher
    from memlab.matching.verdict_store import verdicts_path

    cache_entry_for_smoke(sandbox)
    path = verdicts_path(default_matcher(), sandbox / "cache")
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"{not json")


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


def materialise(case: Case, sandbox: Path, outside: Path) -> None:
    """Create the row's files in ``sandbox`` and run its setup (in the sandbox as the working
    directory, as the runner and ``scripts/probe.py`` call it)."""
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
    Case("saved verdicts garbage", RERUN, {"setup": garbled_verdicts}, exit=0),
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


# --- hostile inputs of the second round, one group per kind of failure ------------------------

OPENAI = ["--backend", "openai:probe-model"]
ONE_CALL = ["--max-owners", "1", "--max-sessions", "1"]
SERVER_RUN = ["run", "smoke", *OPENAI, "--cache-dir", "cache", *SANDBOX_RUN]
DEV_ZERO = Path("/dev/zero")


def outside_of(sandbox: Path) -> Path:
    """The watched directory next to the sandbox (see the runner)."""
    return sandbox.parent / "outside"


def run_dir(sandbox: Path) -> Path:
    return sandbox / "runs" / "r"


def lane_dir(sandbox: Path) -> Path:
    (lane,) = (run_dir(sandbox) / "lanes").iterdir()
    return lane


def linked_shard(sandbox: Path) -> None:
    """A cache holding a foreign file in a two-letter directory and a shard that is a link to
    a directory outside with a JSON file in it (the first probe's example)."""
    victim = outside_of(sandbox) / "V"
    victim.mkdir()
    (victim / "important.json").write_text("{}", encoding="utf-8")
    (sandbox / "C" / "en").mkdir(parents=True)
    (sandbox / "C" / "en" / "messages.json").write_text("{}", encoding="utf-8")
    (sandbox / "C" / "zz").symlink_to(victim)


def shards_moved_outside(sandbox: Path) -> None:
    """Record the smoke cache, then move each shard outside and link it back."""
    cache_entry_for_smoke(sandbox)
    for shard in sorted((sandbox / "cache").iterdir()):
        moved = outside_of(sandbox) / f"shard-{shard.name}"
        shard.rename(moved)
        shard.symlink_to(moved)


def entries_replaced(make: Callable[[Path], None]) -> Callable[[Path], None]:
    """Record the smoke cache, then replace every entry with what ``make`` creates there."""

    def setup(sandbox: Path) -> None:
        cache_entry_for_smoke(sandbox)
        for entry in cache_entries(sandbox / "cache"):
            entry.unlink()
            make(entry)

    return setup


def link_to(target: Path | Callable[[Path], Path]) -> Callable[[Path], None]:
    """A maker of a symbolic link to ``target`` (or to ``target(path)``)."""

    def make(path: Path) -> None:
        path.symlink_to(target(path) if callable(target) else target)

    return make


def moved_outside(path: Path) -> Path:
    """Where a file moved outside the sandbox goes: a copy of it, made now."""
    sandbox = next(p for p in path.parents if p.name == "sandbox")
    copy = outside_of(sandbox) / f"{path.parent.name}-{path.name}"
    if not copy.exists():
        copy.write_text(json.dumps({"format": 1, "note": "outside"}), encoding="utf-8")
    return copy


def fifo(path: Path) -> None:
    os.mkfifo(path)


def lane_linked_outside(run: Path) -> None:
    (lane,) = (run / "lanes").iterdir()
    moved = run.parents[2] / "outside" / "lane"
    lane.rename(moved)
    lane.symlink_to(moved)


def owner_record(content: str | Callable[[Path], None]) -> Callable[[Path], None]:
    """Replace every owner record of the run with ``content`` (or what a maker creates)."""

    def edit(run: Path) -> None:
        for record in sorted(run.glob("lanes/*/owners/*.json")):
            record.unlink()
            if callable(content):
                content(record)
            else:
                record.write_text(content, encoding="utf-8")

    return edit


def run_file(name: str, make: Callable[[Path], None]) -> Callable[[Path], None]:
    """Replace the run's ``name`` with what ``make`` creates there."""

    def edit(run: Path) -> None:
        (run / name).unlink()
        make(run / name)

    return edit


def manifest_with(**changes: Any) -> Callable[[Path], None]:
    def edit(run: Path) -> None:
        manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
        manifest.update(changes)
        (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")

    return edit


def failed_run_first(sandbox: Path) -> None:
    """The run against the server's first (broken) mode: it must fail, not complete."""
    assert main(SERVER_RUN) == 1


def math_prompt_run(sandbox: Path) -> None:
    (sandbox / "p.yaml").write_text(
        '"$\\\\frac{$x": "Memory: {current_memory}\\nConversation: {conversation}"\n',
        encoding="utf-8",
    )
    argv = ["run", "smoke", "--prompts", "p.yaml", "--prompt", "$\\frac{$x", "--name", "r"]
    assert main([*argv, *SANDBOX_RUN]) == 0


def at(moment: str) -> str:
    """A dataset line whose every timestamp is ``moment``."""
    data = owner()
    session = data["sessions"][0]
    session["started_at"] = moment
    for message in session["messages"]:
        message["timestamp"] = moment
    return jsonl(data)


def same_sessions(count: int) -> str:
    """One owner with ``count`` sessions of the same conversation (the simulated model cannot
    tell them apart)."""
    sessions = [one_turn(f"t{i}", T0 + timedelta(days=i), "Hi.") for i in range(count)]
    return jsonl({"user_id": "u1", "sessions": sessions})


def kept(*names: str) -> Callable[[Path], None]:
    def check(sandbox: Path) -> None:
        for name in names:
            assert (sandbox / name).exists(), f"{name} was removed"

    return check


def entries_kept(sandbox: Path) -> None:
    assert cache_entries(sandbox / "cache"), "read-only entries were removed"
    assert "removed 0 entries" in (sandbox / ".stdout").read_text("utf-8")


def records_rewritten(sandbox: Path) -> None:
    """The replayed owner's record is a regular file again (replayed, not read through a
    FIFO or a link)."""
    records = sorted(run_dir(sandbox).glob("lanes/*/owners/*.json"))
    assert any(r.is_file() and not r.is_symlink() for r in records)


def incomplete_run(sandbox: Path) -> None:
    manifest = json.loads((sandbox / "runs" / "run" / "manifest.json").read_text("utf-8"))
    assert manifest["complete"] is False


def resumable(sandbox: Path) -> None:
    assert (sandbox / "runs" / "run" / "grid.yaml").is_file()
    assert not (sandbox / "runs" / "run" / "manifest.json").exists()


PROFILE_INF = "name: p\nwording: {verbatim: .inf}\n"
PROFILE_BOOL = "name: p\nconfidence: {true: 1.0}\n"
EDGE_EARLY = "0001-01-01T00:00:00+14:00"
EDGE_LATE = "9999-12-31T20:00:00-14:00"
GRID_NO_OWNERS = "name: n\ndataset: smoke\nowners: []\n"
GRID_BOOL = "name: b\ndataset: smoke\nbase: {fact_confidence_threshold: true}\n"

# fmt: off
CASES += [
    # 1. Containment: nothing outside the cache or the run directory is read, written or
    #    deleted through a link, and prune deletes only files memlab wrote.
    Case("cache prune --model nothing keeps foreign files and links",
         ["cache", "prune", "C", "--model", "nothing"], {"setup": linked_shard}, exit=0,
         expect="removed 0 entries", check=kept("C/en/messages.json")),
    Case("cache prune --all keeps foreign files and links", ["cache", "prune", "C", "--all"],
         {"setup": linked_shard}, exit=0, expect="removed 0 entries",
         check=kept("C/en/messages.json")),
    Case("cache stats counts no foreign file", ["cache", "stats", "C"],
         {"setup": linked_shard}, exit=0, expect="entries:  0"),
    Case("cache shard linked outside is not written through", RERUN,
         {"setup": shards_moved_outside}, exit=1, expect="symbolic link"),
    Case("cache hit through a linked entry touches nothing outside", RERUN,
         {"setup": entries_replaced(link_to(moved_outside))}, exit=0,
         check=set_aside_and_rerun),
    Case("run directory lane linked outside is not written through",
         ["run", "smoke", "--name", "r", *SANDBOX_RUN],
         {"setup": finished_run(lane_linked_outside)}, expect="symbolic link"),
    Case("report reads no owner record through a link", ["report", "runs/r", "runs/r", "-o", "o"],
         {"setup": finished_run(owner_record(link_to(moved_outside)))},
         expect="symbolic link"),
    # 2. No success without results: a 200 that is not a chat completion fails the run,
    #    and the rerun replays it.
    Case("HTTP 200 that is not JSON", SERVER_RUN, server="not_json", exit=1,
         expect="not a chat completion", check=incomplete_run),
    Case("HTTP 200 with an empty body", SERVER_RUN, server="empty", exit=1,
         expect="body is empty", check=incomplete_run),
    Case("HTTP 200 with the wrong shape", SERVER_RUN, server="wrong_shape", exit=1,
         expect="no 'choices'", check=incomplete_run),
    Case("rerun after the server is fixed replays the failed owners", SERVER_RUN,
         {"setup": failed_run_first}, server="not_json>ok", exit=0,
         check=stdout_has("earlier replay had backend errors (2)")),
    # 3. Secrets: keys echoed by the server, in error bodies, in the base URL.
    Case("server echoes the key inside a valid reply", SERVER_RUN, server="echo", exit=0),
    Case("server echoes the key in a 401", SERVER_RUN, server="status:401", exit=1,
         expect="401"),
    Case("server echoes the key in 500s while retried", [*SERVER_RUN, *ONE_CALL],
         server="status:500", exit=1, expect="500"),
    Case("base URL with user:password", SERVER_RUN, server="status:401", exit=1,
         env={"OPENAI_BASE_URL": "http://probe-user:{password}@127.0.0.1:{port}/v1"},
         expect="401"),
    # 4. Resource bombs: devices, FIFOs, huge replies and numbers, each bounded.
    Case("cache entries linked to /dev/zero", RERUN,
         {"setup": entries_replaced(link_to(DEV_ZERO))}, exit=0, bomb=True),
    Case("cache entries are FIFOs", RERUN, {"setup": entries_replaced(fifo)}, exit=0,
         bomb=True),
    Case("cache stats with entries linked to /dev/zero", ["cache", "stats", "cache"],
         {"setup": entries_replaced(link_to(DEV_ZERO))}, exit=0, bomb=True),
    Case("cache prune with entries linked to /dev/zero", ["cache", "prune", "cache", "--all"],
         {"setup": entries_replaced(link_to(DEV_ZERO))}, exit=0, bomb=True),
    Case("report with sessions.jsonl linked to /dev/zero", ["report", "runs/r", "-o", "o"],
         {"setup": finished_run(run_file("sessions.jsonl", link_to(DEV_ZERO)))},
         expect="symbolic link", bomb=True),
    Case("gate with calls.jsonl linked to /dev/zero", ["gate", "runs/r", "--min-recall", "0"],
         {"setup": finished_run(run_file("calls.jsonl", link_to(DEV_ZERO)))},
         expect="symbolic link", bomb=True),
    Case("compare with an owner record linked to /dev/zero", ["compare", "runs/r", "runs/r"],
         {"setup": finished_run(owner_record(link_to(DEV_ZERO)))}, exit=0, bomb=True),
    Case("rescore with owner records linked to /dev/zero", ["rescore", "runs/r"],
         {"setup": finished_run(owner_record(link_to(DEV_ZERO)))}, expect="symbolic link",
         bomb=True),
    Case("report with a manifest file entry naming /dev/zero", ["report", "runs/r", "-o", "o"],
         {"setup": finished_run(manifest_with(files={"../../../../../../dev/zero": {}}))},
         expect="'files' must record", bomb=True),
    Case("report with the manifest a FIFO", ["report", "runs/r", "-o", "o"],
         {"setup": finished_run(run_file("manifest.json", fifo))}, expect="FIFO", bomb=True),
    Case("rerun of a run whose owner records are FIFOs", ["run", "smoke", "--name", "r",
                                                          "--max-owners", "1", *SANDBOX_RUN],
         {"setup": finished_run(owner_record(fifo))}, exit=0, subprocess=True,
         check=records_rewritten),
    Case("rerun of a run whose owner records link to /dev/zero",
         ["run", "smoke", "--name", "r", "--max-owners", "1", *SANDBOX_RUN],
         {"setup": finished_run(owner_record(link_to(DEV_ZERO)))}, expect="symbolic link",
         subprocess=True),
    Case("run of /dev/zero as a dataset", ["run", "/dev/zero", *SANDBOX_RUN],
         expect="dataset", bomb=True),
    Case("run of a FIFO as a dataset", ["run", "d.jsonl", *SANDBOX_RUN], {"d.jsonl": fifo},
         expect="FIFO", bomb=True),
    Case("sweep of /dev/zero as a grid", ["sweep", "/dev/zero", *SANDBOX_RUN],
         expect="device", bomb=True),
    Case("prompt file is a FIFO", ["run", "smoke", "--prompt", "./p.txt", *SANDBOX_RUN],
         {"p.txt": fifo}, expect="FIFO", bomb=True),
    Case("prompt file linked to /dev/zero", ["run", "smoke", "--prompt", "./p.txt",
                                             *SANDBOX_RUN],
         {"p.txt": link_to(DEV_ZERO)}, expect="device", bomb=True),
    Case("reply file is /dev/zero", ["validate", "/dev/zero"], expect="device", bomb=True),
    Case("pairs file is /dev/zero", ["matcher", "calibrate", "--pairs", "/dev/zero"],
         expect="device", bomb=True),
    Case("a 300 MB reply", [*SERVER_RUN, *ONE_CALL], server="huge:300", exit=1,
         expect="larger than", bomb=True),
    Case("--resamples 10^9", ["compare", "runs/r", "--resamples", "1000000000"],
         expect="resamples", bomb=True),
    Case("--executor dask-local:256", ["run", "smoke", "--executor", "dask-local:256",
                                       *SANDBOX_RUN], expect="CPUs", bomb=True),
    # 5. No tracebacks: odd names, malformed records, signals, non-Dask services, the
    #    calendar's edges, read-only directories, undecodable pairs.
    Case("report of a prompt named in mathtext", ["report", "runs/r", "-o", "o"],
         {"setup": math_prompt_run}, exit=0),
    Case("report of an owner record {}", ["report", "runs/r", "runs/r", "-o", "o"],
         {"setup": finished_run(owner_record("{}"))}, expect="owner record"),
    Case("report of an owner record that is garbage", ["report", "runs/r", "runs/r", "-o", "o"],
         {"setup": finished_run(owner_record("{garbage"))}, expect="owner record"),
    Case("report of an owner record with a list as final_memory",
         ["report", "runs/r", "runs/r", "-o", "o"],
         {"setup": finished_run(owner_record(json.dumps(
             {"user_id": "ana", "calls": [], "snapshots": [], "final_memory": []})))},
         expect="final_memory"),
    Case("Ctrl-C against an unresponsive server", ["run", "smoke", *OPENAI, *SANDBOX_RUN],
         server="hang", interrupt=True, exit=130, expect="interrupted", check=resumable),
    Case("Ctrl-C on a local Dask cluster", ["run", "smoke", *OPENAI, "--executor",
                                            "dask-local:1", *SANDBOX_RUN],
         server="hang", interrupt=True, exit=130, expect="interrupted", check=resumable),
    Case("dask:// to a web server", ["run", "smoke", "--executor", "dask://127.0.0.1:{port}",
                                     *SANDBOX_RUN],
         server="ok", expect="not a Dask scheduler"),
    Case("timestamp at the calendar's start: validate", ["datasets", "validate", "d.jsonl"],
         {"d.jsonl": at(EDGE_EARLY)}, exit=1, expect="edge of the calendar"),
    Case("timestamp at the calendar's end: run", ["run", "d.jsonl", *SANDBOX_RUN],
         {"d.jsonl": at(EDGE_LATE)}, expect="edge of the calendar"),
    Case("rescore of a read-only run", ["rescore", "runs/r"], {"setup": finished_run()},
         read_only="runs/r", expect="writable"),
    Case("calibrate pairs of invalid UTF-8", ["matcher", "calibrate", "--pairs", "p.jsonl"],
         {"p.jsonl": b'{"id": "\xff"}\n'}, expect="UTF-8"),
    Case("calibrate pairs nested 10,000 levels", ["matcher", "calibrate", "--pairs", "p.jsonl"],
         {"p.jsonl": "[" * 10_000 + "]" * 10_000 + "\n"}, expect="nested more than"),
    Case("calibrate a labelling sheet of invalid UTF-8",
         ["matcher", "calibrate", "--pairs", "s.csv"], {"s.csv": b"id,kind\n\xff\xfe,x\n"},
         expect="UTF-8"),
    # 6. Failure is never reported as success.
    Case("cache prune --all of a read-only cache", ["cache", "prune", "cache", "--all"],
         {"setup": cache_entry_for_smoke}, read_only="cache", exit=1,
         expect="could not remove", check=entries_kept),
    Case("grid with owners: []", ["sweep", "g.yaml", *SANDBOX_RUN], {"g.yaml": GRID_NO_OWNERS},
         expect="owners"),
    Case("manifest with files: {}", ["report", "runs/r", "-o", "o"],
         {"setup": finished_run(manifest_with(files={}))}, expect="'files' must record"),
    Case("manifest naming an owner outside the run", ["report", "runs/r", "-o", "o"],
         {"setup": finished_run(manifest_with(owners=["../../../outside/x"]))},
         expect="cannot be a file name"),
    # 7. Strict numbers and bounded simulator messages.
    Case("simulated profile with an infinite weight", ["run", "smoke", "--backend",
                                                       "sim:p.yaml", *SANDBOX_RUN],
         {"p.yaml": PROFILE_INF}, expect="finite"),
    Case("simulated profile with true as a confidence", ["run", "smoke", "--backend",
                                                         "sim:p.yaml", *SANDBOX_RUN],
         {"p.yaml": PROFILE_BOOL}, expect="confidence"),
    Case("grid threshold true", ["sweep", "g.yaml", *SANDBOX_RUN], {"g.yaml": GRID_BOOL},
         expect="fact_confidence_threshold"),
    Case("simulated model on 300 identical sessions", ["run", "d.jsonl", "--backend",
                                                       "sim:chatty", *SANDBOX_RUN],
         {"d.jsonl": same_sessions(300)}, exit=1, expect="and 297 more"),
]
# fmt: on
