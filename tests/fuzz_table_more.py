"""Fuzz-table rows for memory QA, the tiered memory, plugins and the LoCoMo importer (the
runner, ``tests/test_cli_fuzz.py``, and ``scripts/probe.py`` read :data:`MORE_CASES` beside
``fuzz_table.CASES``; the row format and the invariants are described there).

Kinds (``KINDS`` maps each row id to one): ``qa`` (bad questions, the ``memlab qa`` command,
hostile answer servers), ``tiered`` (bad tiered settings, corrupt or planted stores),
``plugins`` (packages planted on ``PYTHONPATH`` with a ``memlab.plugins`` entry point; run as
processes) and ``locomo`` (the importer and the answer-key audit).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from builders import locomo_sample
from fuzz_table import (
    DEV_ZERO,
    SANDBOX_RUN,
    Case,
    fifo,
    jsonl,
    link_to,
    output_unchanged,
    owner,
)

from memlab.cli.main import main

# --- memory QA ---------------------------------------------------------------------------------

QA = ["qa", "runs/r", "--conditions", "memory", "--judges", "lenient", "--no-progress"]
QA_SIM = [*QA, "--answer-backend", "sim:careful"]
QA_SERVER = [*QA, "--answer-backend", "openai:probe-model"]


def personas_run(sandbox: Path) -> None:
    """Setup: ``runs/r``, personas' first owner over 3 sessions (simulated model)."""
    argv = ["run", "personas", "--name", "r", "--max-owners", "1", "--max-sessions", "3"]
    assert main([*argv, "--backend", "sim:careful", *SANDBOX_RUN]) == 0


def smoke_run(sandbox: Path) -> None:
    assert main(["run", "smoke", "--name", "r", *SANDBOX_RUN]) == 0


def question(**changes: Any) -> dict[str, Any]:
    """A valid question of :func:`fuzz_table.owner` (one session) with ``changes``."""
    q: dict[str, Any] = {
        "id": "q1",
        "question": "What does the user like?",
        "answer": "green tea",
        "category": "preference",
        "kind": "answerable",
        "after_session": 0,
    }
    q.update(changes)
    return {k: v for k, v in q.items() if v is not None}


def asked(*questions: Any) -> str:
    return jsonl(owner(questions=list(questions)))


VALIDATE = ["datasets", "validate", "d.jsonl"]
LONG_TEXT = "x" * 1001
TEN_MB = "word " * 2_000_000

# fmt: off
QA_CASES: list[Case] = [
    Case("qa question of 1001 characters: validate", VALIDATE,
         {"d.jsonl": asked(question(question=LONG_TEXT))}, exit=1,
         expect="questions[0].question: is 1001 characters"),
    Case("qa answer of 1001 characters: validate", VALIDATE,
         {"d.jsonl": asked(question(answer=LONG_TEXT))}, exit=1,
         expect="questions[0].answer: is 1001 characters"),
    Case("qa wrong answer of 1001 characters: validate", VALIDATE,
         {"d.jsonl": asked(question(wrong_answer=LONG_TEXT))}, exit=1,
         expect="questions[0].wrong_answer"),
    Case("qa audited original answer of 1001 characters: validate", VALIDATE,
         {"d.jsonl": asked(question(audit={"error_type": "X", "original_answer": LONG_TEXT}))},
         exit=1, expect="questions[0].audit.original_answer"),
    Case("qa gold answer of 10 MB: validate", VALIDATE,
         {"d.jsonl": asked(question(answer=TEN_MB))}, exit=1,
         expect="is 10000000 characters", bomb=True),
    Case("qa question of 1001 characters: run", ["run", "d.jsonl", *SANDBOX_RUN],
         {"d.jsonl": asked(question(question=LONG_TEXT))}, expect="questions[0].question"),
    Case("qa unknown kind", VALIDATE, {"d.jsonl": asked(question(kind="maybe"))}, exit=1,
         expect="questions[0].kind"),
    Case("qa after_session true", VALIDATE, {"d.jsonl": asked(question(after_session=True))},
         exit=1, expect="questions[0].after_session"),
    Case("qa after_session out of range", VALIDATE,
         {"d.jsonl": asked(question(after_session=9))}, exit=1, expect="out of range"),
    Case("qa duplicate question ids", VALIDATE, {"d.jsonl": asked(question(), question())},
         exit=1, expect="duplicate question id"),
    Case("qa abstain question with an answer", VALIDATE,
         {"d.jsonl": asked(question(kind="abstain"))}, exit=1, expect="abstain"),
    Case("qa evidence naming no gold fact", VALIDATE,
         {"d.jsonl": asked(question(evidence={"facts": ["nope"]}))}, exit=1,
         expect="unknown gold fact id"),
    Case("qa questions not a list", VALIDATE, {"d.jsonl": jsonl(owner(questions={"q": 1}))},
         exit=1, expect="questions"),
    Case("qa on a run whose dataset has no questions", QA_SIM, {"setup": smoke_run},
         expect="no questions"),
    Case("qa on a run cut by --max-sessions asks the questions it can", QA_SIM,
         {"setup": personas_run}, exit=0),
    Case("qa unknown condition", [*QA_SIM, "--conditions", "memory,psychic"],
         {"setup": personas_run}, expect="conditions"),
    Case("qa unknown judge prompt", [*QA_SIM[:-2], "--judges", "nope", *QA_SIM[-2:]],
         {"setup": personas_run}, expect="nope"),
    Case("qa answer prompt is a FIFO", [*QA_SIM, "--answer-prompt", "./a.txt"],
         {"setup": personas_run, "a.txt": fifo}, expect="FIFO", bomb=True),
    Case("qa answer prompt linked to /dev/zero", [*QA_SIM, "--answer-prompt", "./a.txt"],
         {"setup": personas_run, "a.txt": link_to(DEV_ZERO)}, expect="device", bomb=True),
    Case("qa --workers 0", [*QA_SIM, "--workers", "0"], {"runs/r/x": "x"}, expect="workers"),
    Case("qa of a directory that is no run", ["qa", "nothing", "--answer-backend", "sim:x"],
         {"nothing/x": "x"}, expect="not a memlab run"),
    Case("qa without settings", QA, {"setup": personas_run}, expect="no QA settings"),
    Case("qa seed true in a grid", ["sweep", "g.yaml", *SANDBOX_RUN],
         {"g.yaml": "name: q\nqa: {answer_backend: 'sim:careful', seed: true}\n"},
         expect="qa.seed"),
    Case("qa max_tokens 10^6 in a grid", ["sweep", "g.yaml", *SANDBOX_RUN],
         {"g.yaml": "name: q\nqa: {answer_backend: 'sim:careful', max_tokens: 1000000}\n"},
         expect="qa.max_tokens"),
    Case("qa answers of 10 MB from the server are failed calls", QA_SERVER,
         {"setup": personas_run}, server="long:10", exit=1, expect="more than the 65536",
         bomb=True),
]

# --- the tiered memory ------------------------------------------------------------------------

TIERED_GRID = (
    "name: t\ndataset: smoke\nmax_owners: 1\nbase: {memory: tiered, backend: 'sim:careful'}\n"
)
SWEEP = ["sweep", "g.yaml", *SANDBOX_RUN]


def tiered_run(edit: Callable[[Path], None]) -> Callable[[Path], None]:
    """Setup: a tiered sweep of smoke's first owner, its records removed (the rerun replays
    it), then ``edit(stores directory)``."""

    def setup(sandbox: Path) -> None:
        (sandbox / "g.yaml").write_text(TIERED_GRID, encoding="utf-8")
        assert main(SWEEP) == 0
        (lane,) = (sandbox / "runs" / "t" / "lanes").iterdir()
        for record in (lane / "owners").glob("*.json"):
            record.unlink()
        edit(lane / "stores")

    return setup


def replaced(name: str, make: Callable[[Path], None] | bytes) -> Callable[[Path], None]:
    def edit(stores: Path) -> None:
        path = stores / name
        path.unlink(missing_ok=True)
        if callable(make):
            make(path)
        else:
            path.write_bytes(make)

    return edit


def stores_moved_outside(stores: Path) -> None:
    moved = stores.parents[5] / "outside" / "stores"
    stores.rename(moved)
    stores.symlink_to(moved)


def stores_a_file(stores: Path) -> None:
    for path in stores.iterdir():
        path.unlink()
    stores.rmdir()
    stores.write_text("x", encoding="utf-8")


def tiered_grid(options: str, memory: str = "tiered") -> dict[str, str]:
    grid = f"name: t\ndataset: smoke\nbase: {{memory: {memory}, tiered: {options}}}\n"
    return {"g.yaml": grid}


TIERED_CASES: list[Case] = [
    Case("tiered stores/ linked outside", SWEEP, {"setup": tiered_run(stores_moved_outside)},
         expect="symbolic link"),
    Case("tiered database is a directory", SWEEP,
         {"setup": tiered_run(replaced("ana.sqlite", lambda p: p.mkdir()))},
         expect="a directory where the replay keeps its store"),
    Case("tiered database is garbage: rebuilt", SWEEP,
         {"setup": tiered_run(replaced("ana.sqlite", b"not a database"))}, exit=0),
    Case("tiered database write-ahead log is garbage: rebuilt", SWEEP,
         {"setup": tiered_run(replaced("ana.sqlite-wal", b"\xff" * 100))}, exit=0),
    Case("tiered database is a FIFO: rebuilt", SWEEP,
         {"setup": tiered_run(replaced("ana.sqlite", fifo))}, exit=0, bomb=True),
    Case("tiered database linked to /dev/zero: rebuilt", SWEEP,
         {"setup": tiered_run(replaced("ana.sqlite", link_to(DEV_ZERO)))}, exit=0, bomb=True),
    Case("tiered store file is garbage: rebuilt", SWEEP,
         {"setup": tiered_run(replaced("ana.json", b"{garbage"))}, exit=0),
    Case("tiered store file linked to /dev/zero", SWEEP,
         {"setup": tiered_run(replaced("ana.json", link_to(DEV_ZERO)))},
         expect="symbolic link", bomb=True),
    Case("tiered stores/ is a file", SWEEP, {"setup": tiered_run(stores_a_file)},
         expect="stores"),
    Case("tiered working_tokens 10^30", SWEEP, tiered_grid(f"{{working_tokens: {10**30}}}"),
         expect="working_tokens"),
    Case("tiered working_tokens 1.0e+30", SWEEP, tiered_grid("{working_tokens: 1.0e+30}"),
         expect="working_tokens"),
    Case("tiered recall_k true", SWEEP, tiered_grid("{recall_k: true}"), expect="recall_k"),
    Case("tiered recall_k 10^6", SWEEP, tiered_grid("{recall_k: 1000000}"), expect="recall_k"),
    Case("tiered importance_threshold 1.5", SWEEP, tiered_grid("{importance_threshold: 1.5}"),
         expect="importance_threshold"),
    Case("tiered decay_per_day 1", SWEEP, tiered_grid("{decay_per_day: 1.0}"),
         expect="decay_per_day"),
    Case("tiered summary_tokens 0", SWEEP, tiered_grid("{summary_tokens: 0}"),
         expect="summary_tokens"),
    Case("tiered compress_min 10^9", SWEEP, tiered_grid("{compress_min: 1000000000}"),
         expect="compress_min"),
    Case("tiered unknown option", SWEEP, tiered_grid("{working_tokenz: 5}"),
         expect="working_tokenz"),
    Case("tiered options on a deerflow lane", SWEEP, tiered_grid("{recall_k: 5}", "deerflow"),
         expect="tiered"),
    Case("tiered options not a mapping", SWEEP, tiered_grid("[1, 2]"), expect="tiered"),
    Case("schema_bounds fact_chars true", SWEEP,
         {"g.yaml": "name: s\nbase: {output_mode: json_schema, "
                    "schema_bounds: {fact_chars: true}}\n"},
         expect="schema_bounds.fact_chars"),
    Case("schema_bounds summary_chars 10^9", SWEEP,
         {"g.yaml": "name: s\nbase: {output_mode: json_schema, "
                    "schema_bounds: {summary_chars: 1000000000}}\n"},
         expect="schema_bounds.summary_chars"),
]

# --- plugins ----------------------------------------------------------------------------------

PLUGIN_ENV = {"PYTHONPATH": "{sandbox}/site"}


def plugin(name: str, body: str) -> dict[str, str]:
    """A package ``evilplug`` on ``site/`` whose ``memlab.plugins`` entry point ``name`` is
    ``evilplug:register`` (``body``: the module's source)."""
    info = "site/evilplug-0.1.dist-info"
    return {
        "site/evilplug.py": body,
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: evilplug\nVersion: 0.1\n",
        f"{info}/entry_points.txt": f"[memlab.plugins]\n{name} = evilplug:register\n",
    }


RAISES = "def register():\n    raise ValueError('broken plugin')\n"
EXITS = "import sys\n\ndef register():\n    sys.exit(3)\n"
INTERRUPTS = "def register():\n    raise KeyboardInterrupt\n"
IMPORT_FAILS = "import no_such_module_anywhere\n\ndef register():\n    pass\n"
TAKES_SIM = (
    "from memlab.backends.registry import BACKENDS\n\n"
    "def register():\n    BACKENDS.register('sim', object())\n"
)
RUN_SMOKE = ["run", "smoke", "--max-owners", "1", *SANDBOX_RUN]

PLUGIN_CASES: list[Case] = [
    Case("plugin whose register raises", ["plugins"], plugin("evil", RAISES), exit=1,
         expect="failed to load", env=PLUGIN_ENV, subprocess=True),
    Case("plugin whose module fails to import", ["plugins"], plugin("evil", IMPORT_FAILS),
         exit=1, expect="failed to load", env=PLUGIN_ENV, subprocess=True),
    Case("plugin whose register raises: a run still works", RUN_SMOKE,
         plugin("evil", RAISES), exit=0, env=PLUGIN_ENV, subprocess=True),
    Case("plugin whose register calls sys.exit", RUN_SMOKE, plugin("evil", EXITS), exit=0,
         expect="evilplug", env=PLUGIN_ENV, subprocess=True),
    Case("plugin whose register raises KeyboardInterrupt", RUN_SMOKE,
         plugin("evil", INTERRUPTS), exit=0, expect="evilplug", env=PLUGIN_ENV,
         subprocess=True),
    Case("plugin sorting first registers the built-in sim",
         [*RUN_SMOKE, "--backend", "sim:careful"],
         plugin("aaa", TAKES_SIM), exit=0, expect="sim", env=PLUGIN_ENV, subprocess=True),
]

# --- the LoCoMo importer ----------------------------------------------------------------------

SMALL_QA = [
    {"question": "Where did Ann move?", "answer": "Lisbon", "evidence": ["D1:1"], "category": 4},
    {"question": "What did Bob say?", "answer": "Nice", "evidence": ["D1:2"], "category": 4},
]
SOURCE = json.dumps([{**locomo_sample(), "qa": SMALL_QA}])
IMPORT = ["datasets", "import-locomo", "l/locomo10.json", "--out", "o.jsonl"]
AUDITED = [*IMPORT, "--answer-key", "audited"]


def finding(n: int = 0, **changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "question_id": f"locomo_0_qa{n}",
        "question": SMALL_QA[n]["question"],
        "category": 4,
        "error_type": "HALLUCINATION",
        "correct_answer": "Porto",
        "correct_evidence": ["D1:1"],
    }
    entry.update(changes)
    return entry


def source_and_audit(audit: Any, source: str = SOURCE) -> dict[str, Any]:
    text = audit if isinstance(audit, bytes | str) or callable(audit) else json.dumps(audit)
    return {"l/locomo10.json": source, "l/audit/errors.json": text}


def hard_link_to_audit(sandbox: Path) -> None:
    os.link(sandbox / "l" / "audit" / "errors.json", sandbox / "hard.json")


def qa_source(**item: Any) -> str:
    return json.dumps([{**locomo_sample(), "qa": [{**SMALL_QA[0], **item}]}])


AUDIT_TEXT = json.dumps([finding()])

LOCOMO_CASES: list[Case] = [
    Case("locomo --out is the audit read beside the source",
         ["datasets", "import-locomo", "l/locomo10.json", "--out", "l/audit/errors.json",
          "--answer-key", "audited"],
         source_and_audit(AUDIT_TEXT), expect="is the audit file",
         check=output_unchanged("l/audit/errors.json", AUDIT_TEXT)),
    Case("locomo --out is a hard link to the audit",
         [*AUDITED[:4], "hard.json", *AUDITED[5:]],
         {**source_and_audit(AUDIT_TEXT), "setup": hard_link_to_audit},
         expect="is the audit file", check=output_unchanged("hard.json", AUDIT_TEXT)),
    Case("locomo --out is a link to the source", [*IMPORT[:4], "s.json"],
         {"l/locomo10.json": SOURCE, "s.json": link_to(lambda p: p.parent / "l" / "locomo10.json")},
         expect="is the source file", check=output_unchanged("l/locomo10.json", SOURCE)),
    Case("locomo audit evidence junk", AUDITED,
         source_and_audit([finding(correct_evidence=["D1:1", "junk"])]),
         expect="[0].correct_evidence: 'junk' names no turn"),
    Case("locomo audit evidence D99:999", AUDITED,
         source_and_audit([finding(correct_evidence=["D99:999"])]), expect="names no turn"),
    Case("locomo audit not a list", AUDITED, source_and_audit({"a": 1}),
         expect="JSON list of findings"),
    Case("locomo audit entry not an object", AUDITED, source_and_audit([7]),
         expect="expected an object"),
    Case("locomo audit question id malformed", AUDITED,
         source_and_audit([finding(question_id="qa0")]), expect="locomo_<conversation>"),
    Case("locomo audit category 9", AUDITED, source_and_audit([finding(category=9)]),
         expect="category"),
    Case("locomo audit entry twice", AUDITED, source_and_audit([finding(), finding()]),
         expect="audited twice"),
    Case("locomo audit of another source", AUDITED,
         source_and_audit([finding(question="Who is Eve?")]), expect="another version"),
    Case("locomo audit missing", AUDITED, {"l/locomo10.json": SOURCE},
         expect="answer-key audit not found"),
    Case("locomo audit invalid UTF-8", AUDITED, source_and_audit(b'[{"question": "\xff"}]'),
         expect="audit"),
    Case("locomo audit 10,000 levels", AUDITED,
         source_and_audit("[" * 10_000 + "]" * 10_000), expect="audit"),
    Case("locomo audit is a FIFO", AUDITED, source_and_audit(fifo), expect="FIFO", bomb=True),
    Case("locomo audit linked to /dev/zero", AUDITED, source_and_audit(link_to(DEV_ZERO)),
         expect="device", bomb=True),
    Case("locomo audit corrected answer of 2000 characters", AUDITED,
         source_and_audit([finding(correct_answer="y" * 2000)]), expect="answer"),
    Case("locomo qa answer of 5000 characters", IMPORT,
         {"l/locomo10.json": qa_source(answer="z" * 5000)}, expect="answer"),
    Case("locomo qa item not an object", IMPORT,
         {"l/locomo10.json": json.dumps([{**locomo_sample(), "qa": ["Where?"]}])},
         expect="expected an object with a question"),
    Case("locomo qa category 7", IMPORT, {"l/locomo10.json": qa_source(category=7)},
         expect="category"),
    # The original key records the audit beside LoCoMo's answers (for the ceiling).
    Case("locomo --audit with the original key", [*IMPORT, "--audit", "l/audit/errors.json"],
         source_and_audit(AUDIT_TEXT), exit=0, expect="audit recorded"),
]

MORE_CASES: list[Case] = QA_CASES + TIERED_CASES + PLUGIN_CASES + LOCOMO_CASES
KINDS: dict[str, str] = {
    **{c.id: "qa" for c in QA_CASES},
    **{c.id: "tiered" for c in TIERED_CASES},
    **{c.id: "plugins" for c in PLUGIN_CASES},
    **{c.id: "locomo" for c in LOCOMO_CASES},
}
# fmt: on
