"""What went wrong for one owner of a candidate's replay, as text a prompt writer can act on.

Prompt evolution (:mod:`memlab.reporting.tuning.tune_evolve`) shows a reflection model, per owner,
the failure records a replay already keeps, read through their usual readers:

- the replies that failed the JSON contract (``calls.jsonl`` through :attr:`Run.calls`): the
  parse category, the error and each schema violation's keyword and JSON Pointer;
- the gold facts memory did not hold at the end, each with the last thing that happened to it
  (:func:`memlab.scoring.operations.gold_losses`: never proposed, below the threshold,
  evicted, skipped as a duplicate, wrongly removed), and the stored facts that state no gold
  fact (invented or wrongly worded), both decided by the run's matcher as for recall;
- with memory QA, the questions answered wrong from memory and their cause
  (:func:`memlab.scoring.qa.qa_causes.cause_of` of the answer's recorded fate).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from memlab.matching.base import FactMatcher
from memlab.postrun.rescoring import Replay
from memlab.runs.run import Run
from memlab.scoring.operations import gold_losses
from memlab.scoring.qa.qa_causes import cause_of, graded_right
from memlab.scoring.qa.qa_verdicts import HEADLINE_KINDS, verdict_table

__all__ = ["LOSS_TEXT", "OwnerFeedback", "owner_feedback"]

LOSS_TEXT: dict[str, str] = {
    "never": "never proposed (or proposed in a reply that failed to parse)",
    "threshold": "proposed below the confidence threshold",
    "cap": "evicted by the memory cap",
    "duplicate": "skipped as a duplicate",
    "removed": "wrongly removed",
}
"""How a lost gold fact's fate (:func:`~memlab.scoring.operations.gold_losses`) reads."""

_MAX_LINES = 12  # per kind of record and owner: enough to see a pattern, short enough to read


@dataclass
class OwnerFeedback:
    """The failure records of one owner's replay under one candidate prompt."""

    user_id: str
    problem: str = ""
    """Why the candidate could not be replayed at all (an invalid template), else empty."""
    failed_replies: list[dict[str, Any]] = field(default_factory=list)
    """``{"session", "category", "error", "violations": [{"keyword", "pointer"}]}``."""
    missed: list[dict[str, str]] = field(default_factory=list)
    """``{"gold", "fate"}``: active gold facts memory did not hold at the end."""
    wrongly_stored: list[str] = field(default_factory=list)
    """Stored facts at the end that state no active gold fact."""
    wrong_answers: list[dict[str, str]] = field(default_factory=list)
    """``{"question", "answer", "cause"}``: headline questions answered wrong from memory."""

    def text(self) -> str:
        """The records as lines of plain text (what the reflection model reads)."""
        out: list[str] = [self.problem] if self.problem else []
        for reply in self.failed_replies[:_MAX_LINES]:
            where = "; ".join(f"{v['keyword']} at {v['pointer']}" for v in reply["violations"])
            out.append(
                f"failed reply (session {reply['session']}): {reply['category']}"
                f"{': ' + where if where else ''} ({reply['error']})"
            )
        out += [f"missed gold fact: {m['gold']!r}: {m['fate']}" for m in self.missed[:_MAX_LINES]]
        out += [
            f"stored wrongly (states no gold fact): {s!r}" for s in self.wrongly_stored[:_MAX_LINES]
        ]
        out += [
            f"question answered wrong: {w['question']!r} (answer {w['answer']!r}): {w['cause']}"
            for w in self.wrong_answers[:_MAX_LINES]
        ]
        return "\n".join(out) if out else "no failure recorded"


def owner_feedback(run: Run, replay: Replay, matcher: FactMatcher) -> OwnerFeedback:
    """The failure records of ``replay`` (one owner of ``run``'s one lane)."""
    user = replay.owner.user_id
    found = OwnerFeedback(user)
    found.failed_replies = _failed_replies(run.calls, replay.lane_id, user)
    found.missed, found.wrongly_stored = _facts(replay, matcher)
    found.wrong_answers = _wrong_answers(run, replay)
    return found


def _failed_replies(calls: pd.DataFrame, lane_id: str, user_id: str) -> list[dict[str, Any]]:
    if calls.empty or "parse_ok" not in calls:
        return []
    mine = calls[(calls["lane_id"] == lane_id) & (calls["user_id"] == user_id)]
    failed = mine[mine["reply"].notna() & ~mine["parse_ok"].astype(bool)]
    return [
        {
            "session": int(row["session_index"]),
            "category": str(row["parse_category"]),
            "error": str(row["error"]),
            "violations": [
                {"keyword": str(v.get("keyword", "")), "pointer": str(v.get("pointer", "")) or "/"}
                for v in (row["violations"] or [])
                if isinstance(v, Mapping)
            ],
        }
        for row in failed.to_dict("records")
    ]


def _facts(replay: Replay, matcher: FactMatcher) -> tuple[list[dict[str, str]], list[str]]:
    """The gold facts lost by the end (with their fate) and the stored facts stating none."""
    owner, record = replay.owner, replay.record
    snapshots: Sequence[Mapping[str, Any]] = record.get("snapshots", [])
    if not snapshots:
        return [], []
    fork = record.get("fork")
    losses = gold_losses(
        owner,
        record.get("calls", []),
        matcher.covers,
        start=int(fork.get("at_session", 0)) if isinstance(fork, Mapping) else 0,
    )
    gold: dict[str, str] = {}
    retracted: set[str] = set()
    for session in owner.sessions:
        gold.update({f.id: f.content for f in session.labels.facts})
        retracted.update(session.labels.retracts)
    last = losses[-1] if losses else {}
    missed = [
        {"gold": gold[gid], "fate": LOSS_TEXT.get(fate, fate)}
        for gid, fate in last.items()
        if gid in gold
    ]
    active = [text for gid, text in gold.items() if gid not in retracted]
    stored = [str(f.get("content", "")) for f in snapshots[-1].get("facts", [])]
    wrong = [s for s in stored if not any(matcher.covers(s, g) for g in active)]
    return missed, wrong


def _wrong_answers(run: Run, replay: Replay) -> list[dict[str, str]]:
    answers = run.qa_answers
    if answers.empty:
        return []
    mine = answers[
        (answers["lane_id"] == replay.lane_id)
        & (answers["user_id"] == replay.owner.user_id)
        & answers["kind"].isin(list(HEADLINE_KINDS))
    ]
    verdicts = verdict_table(mine, [run.judge])
    verdicts = verdicts[verdicts["key"] == "answer"]
    graded = {
        (row["condition"], row["session_index"], row["question_id"]): (
            str(row["status"]),
            bool(row["correct"]),
        )
        for row in verdicts.to_dict("records")
    }
    questions = {q.id: q.question for q in replay.owner.questions}
    out = []
    for row in mine[mine["condition"] == "memory"].to_dict("records"):
        key = (row["session_index"], row["question_id"])
        status, right = graded.get(("memory", *key), ("no_verdict", False))
        if right:
            continue
        fate = row.get("fate")
        gold = graded.get(("gold_memory", *key))
        gold_right = graded_right(*gold) if gold is not None else None
        out.append(
            {
                "question": questions.get(str(row["question_id"]), str(row["question_id"])),
                "answer": "" if _missing(row.get("answer")) else str(row["answer"]),
                # An answer left without a verdict has that cause even with no recorded fate.
                "cause": cause_of("unknown" if _missing(fate) else str(fate), gold_right, status),
            }
        )
    return out


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
