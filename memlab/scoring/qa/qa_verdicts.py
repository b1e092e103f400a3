"""Memory QA's verdict rows: one row per answer, judge and answer key, with how it was decided.

An answer is *correct* under a judge when the judge said CORRECT, and for an adversarial
question also when it abstains. Every answer has its rows, graded or not: a failed answer call,
a judge call that failed or a reply that named no single verdict is a wrong answer that is
counted (:data:`VERDICT_STATUSES`), and :func:`error_counts` and :func:`errors_sentence` say
how many there are before any accuracy is read. The rates built on these rows are in
:mod:`memlab.scoring.qa.qa_metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from memlab.datasets.questions import UNJUDGED_KINDS

__all__ = [
    "ANSWER_UNIT",
    "HEADLINE_KINDS",
    "UNGRADED_STATUSES",
    "VERDICT_STATUSES",
    "error_counts",
    "errors_sentence",
    "judges_of",
    "verdict_table",
]

HEADLINE_KINDS: tuple[str, ...] = ("answerable",)
"""Question kinds in the headline accuracy (abstain and adversarial are reported apart)."""

ANSWER_UNIT = ("lane_id", "sample", "user_id", "question_id", "condition")
"""The columns that name one answer (a verdict row adds its judge and answer key)."""

VERDICT_STATUSES: tuple[str, ...] = ("judged", "no_verdict", "answer_error", "abstained")
"""How a verdict row was decided: ``judged`` (the judge said CORRECT or WRONG),
``no_verdict`` (the judge's call failed or its reply named no single verdict),
``answer_error`` (the answer call failed: nothing to grade), ``abstained`` (an abstention on
an answerable question: wrong without a judge). Every status but ``judged`` counts wrong."""

UNGRADED_STATUSES: tuple[str, ...] = ("no_verdict", "answer_error")
"""The statuses of an answer nothing graded: counted wrong, though no one found it wrong (an
abstention is wrong by rule, so it is graded)."""


def verdict_table(answers: pd.DataFrame, judges: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per answer, judge (``judges``, default :func:`judges_of`) and answer key:
    ``verdict`` (1.0, 0.0, or NaN when the judge decided nothing), ``correct`` (see the
    module docstring) and ``status`` (:data:`VERDICT_STATUSES`). An answer a key did not
    change is graded once; its ``original`` verdict is the ``answer`` one. Every answer has
    its rows, graded or not: a failed call or an unreadable verdict is a wrong answer that is
    counted, never one that disappears. Procedure answers, which no judge grades, have none."""
    columns = [*ANSWER_UNIT, "session_index", "category", "kind", "judge", "key", "verdict"]
    columns += ["correct", "status"]
    keep = [*ANSWER_UNIT, "session_index", "category", "kind"]
    names = list(judges) if judges is not None else judges_of(answers)
    rows: list[dict[str, Any]] = []
    judged = answers[~answers["kind"].isin(UNJUDGED_KINDS)]
    # Tables built by hand may lack the call's error and the abstention: none of either.
    present = judged.reindex(columns=[*keep, "abstained", "error", "verdicts"])
    for found in present.to_dict("records"):
        record = {str(k): v for k, v in found.items()}
        verdicts = record.pop("verdicts") or {}
        failed = isinstance(record.pop("error"), str)
        abstained = record.pop("abstained") is True
        # An adversarial question's right response may also be to say it is not known.
        declined = record["kind"] == "adversarial" and abstained
        for judge in names:
            by_key = verdicts.get(judge, {})
            for key in ("answer", "original"):
                value = by_key.get(key, by_key.get("answer"))
                status = _status(value, failed, abstained and not by_key, record["kind"])
                rows.append(
                    {
                        **record,
                        "judge": judge,
                        "key": key,
                        "verdict": 0.0 if status == "abstained" else _number(value),
                        "correct": value is True or declined,
                        "status": status,
                    }
                )
    return pd.DataFrame(rows, columns=columns)


def _number(value: bool | None) -> float:
    return math.nan if value is None else float(bool(value))


def _status(value: bool | None, failed: bool, unjudged_abstention: bool, kind: str) -> str:
    if value is not None:
        return "judged"
    if failed:
        return "answer_error"
    if unjudged_abstention and kind in HEADLINE_KINDS:
        return "abstained"
    return "no_verdict"


def error_counts(answers: pd.DataFrame, judges: Sequence[str]) -> dict[str, int]:
    """How many answers (every condition and kind) lack what grading needs: ``answers``,
    ``answer_errors`` (the answer call failed) and, per judge, ``judge_errors:<judge>``
    (answered, but that judge's call failed or its reply named no single verdict against
    the file's key). Each of them counts as a wrong answer wherever accuracy is computed."""
    counts = {"answers": len(answers), "answer_errors": int(answers["error"].notna().sum())}
    if answers.empty:
        return counts | {f"judge_errors:{judge}": 0 for judge in judges}
    verdicts = verdict_table(answers, judges)
    verdicts = verdicts[(verdicts["key"] == "answer") & (verdicts["status"] == "no_verdict")]
    for judge in judges:
        counts[f"judge_errors:{judge}"] = int((verdicts["judge"] == judge).sum())
    return counts


def errors_sentence(counts: dict[str, int]) -> str:
    """One line naming the answers without a verdict or an answer ("" when there are none):
    what a user reads before any accuracy, since each of them is counted wrong."""
    total = counts["answers"]
    parts = [
        f"{value} of {total} answers have no verdict from judge {name.split(':', 1)[1]} "
        "(its call failed or its reply named no single verdict)"
        for name, value in counts.items()
        if name.startswith("judge_errors:") and value
    ]
    if counts["answer_errors"]:
        parts.append(f"{counts['answer_errors']} of {total} answer calls failed")
    if not parts:
        return ""
    return "; ".join(parts) + ": each counts as a wrong answer"


def judges_of(answers: pd.DataFrame) -> list[str]:
    """The judges that graded ``answers``, in the order they appear."""
    seen: dict[str, None] = {}
    for verdicts in answers.get("verdicts", []):
        seen.update(dict.fromkeys(verdicts or {}))
    return list(seen)
