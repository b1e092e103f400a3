"""Memory QA in numbers: accuracy per condition and category with intervals, the judge band,
the answer-key ceiling, the causes of wrong answers and what reading costs.

The input is a QA step's answer table (one row per lane, sample, owner, question and
condition: :attr:`memlab.runs.run.Run.qa_answers`). Each answer carries each judge's verdict
against each answer key; an answer is *correct* under a judge when the judge said CORRECT, and
for an adversarial question also when it abstains (its right response is to say it is not
known, or its answer when it has one).

- The *headline* set is the ``answerable`` questions; ``abstain`` and ``adversarial``
  questions are counted apart (``qa_abstain_*``, ``qa_adversarial_*``) and never mixed in.
  ``procedure`` questions have no verdict: every judged count and table leaves them out, and
  their answers from memory are counted by step-order accuracy (``qa_procedure_*``, from the
  rows' ``step_accuracy`` and ``steps_named``: :mod:`memlab.qa.procedure_scores`).
- Rates are ratios of per-owner sums with bootstrap intervals over owners
  (:func:`memlab.scoring.inference.stats.bootstrap_ratios`); repeated samples of an owner are
  averaged first, as everywhere in memlab.
- :func:`qa_session_counts` puts the ``memory`` condition's counts under one judge into the
  session rows (declared in :data:`~memlab.scoring.count_specs.COUNT_SPECS`), so that the
  summary, ``memlab compare`` and the gate treat QA accuracy like every other rate.
- :func:`judge_band`: accuracy under each judge, the band (min-max over judges), the share of
  verdicts that flip between two judges and Cohen's kappa between them.
- :func:`key_ceiling`: with an audited answer key, the best score a perfect answerer gets
  against the original key per category (1 - share of answers the audit changed), scores
  against both keys, and a warning when a score exceeds the ceiling of its key.
- :func:`cause_table`: wrong answers from memory by cause (:mod:`memlab.scoring.qa.qa_causes`).
- :func:`qa_cost`: read-side tokens and latency per question, write-side tokens per
  conversation.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from memlab.datasets.questions import UNJUDGED_KINDS
from memlab.matching.calibration import KindCounts
from memlab.qa.answering import SCORES
from memlab.scoring.count_specs import count_columns
from memlab.scoring.inference.stats import StatOptions, bootstrap_ratios
from memlab.scoring.metric_specs import interval_specs
from memlab.scoring.qa.qa_causes import CAUSES, cause_of, fate_key

__all__ = [
    "HEADLINE_KINDS",
    "JUDGED_COUNTS",
    "PROCEDURE_COUNTS",
    "QA_COUNTS",
    "VERDICT_STATUSES",
    "accuracy_table",
    "cause_table",
    "error_counts",
    "errors_sentence",
    "interval_note",
    "judge_agreement",
    "judge_band",
    "judged_metrics",
    "judges_of",
    "key_ceiling",
    "qa_cost",
    "qa_session_counts",
    "robust_verdicts",
    "threshold_ratings",
    "verdict_table",
]

HEADLINE_KINDS: tuple[str, ...] = ("answerable",)
"""Question kinds in the headline accuracy (abstain and adversarial are reported apart)."""

QA_COUNTS = count_columns(by="qa")
"""The session-row counts of memory QA (declared in ``COUNT_SPECS``)."""

JUDGED_COUNTS = ("qa_correct", "qa_abstain_correct", "qa_adversarial_correct")
"""The QA counts that depend on the judge (token F1 and BLEU-1 do not)."""

PROCEDURE_COUNTS = tuple(c for c in QA_COUNTS if c.startswith("qa_procedure"))
"""The QA counts of procedure questions: in the session rows only when some were asked."""

_UNIT = ("lane_id", "sample", "user_id", "question_id", "condition")
_WIDE_INTERVAL = 0.20
_FEW_OWNERS = 20


VERDICT_STATUSES: tuple[str, ...] = ("judged", "no_verdict", "answer_error", "abstained")
"""How a verdict row was decided: ``judged`` (the judge said CORRECT or WRONG),
``no_verdict`` (the judge's call failed or its reply named no single verdict),
``answer_error`` (the answer call failed: nothing to grade), ``abstained`` (an abstention on
an answerable question: wrong without a judge). Every status but ``judged`` counts wrong."""


def verdict_table(answers: pd.DataFrame, judges: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per answer, judge (``judges``, default :func:`judges_of`) and answer key:
    ``verdict`` (1.0, 0.0, or NaN when the judge decided nothing), ``correct`` (see the
    module docstring) and ``status`` (:data:`VERDICT_STATUSES`). An answer a key did not
    change is graded once; its ``original`` verdict is the ``answer`` one. Every answer has
    its rows, graded or not: a failed call or an unreadable verdict is a wrong answer that is
    counted, never one that disappears. Procedure answers, which no judge grades, have none."""
    columns = [*_UNIT, "session_index", "category", "kind", "judge", "key", "verdict"]
    columns += ["correct", "status"]
    keep = [*_UNIT, "session_index", "category", "kind"]
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


def judged_metrics() -> list[str]:
    """The rates whose value depends on the judge (those counting judged answers)."""
    return [s.column for s in interval_specs() if set(s.sources) & set(JUDGED_COUNTS)]


def robust_verdicts(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per compared lane and metric, whether a comparison's verdict holds under every judge.

    Args:
        tables: Judge name -> its :func:`memlab.scoring.comparing.comparison.compare` table (the
            same pairs and metrics, each run counted under that judge).

    Returns:
        One row per (run, lane, metric) with the verdict under each judge (``verdict:<judge>``)
        and ``judge_robust``: ``robust to the judge: better`` (or ``worse``) when every judge
        gives that significant verdict, ``no difference under any judge`` when none finds
        one, else ``depends on the judge``.
    """
    keys = ["baseline_run", "baseline_lane", "run", "lane", "metric"]
    merged: pd.DataFrame | None = None
    for judge, table in tables.items():
        part = table[[*keys, "verdict"]].rename(columns={"verdict": f"verdict:{judge}"})
        merged = part if merged is None else merged.merge(part, on=keys, how="outer")
    if merged is None:
        return pd.DataFrame(columns=[*keys, "judge_robust"])
    verdict_columns = [f"verdict:{judge}" for judge in tables]
    merged["judge_robust"] = [
        _robustness(list(row)) for row in merged[verdict_columns].itertuples(index=False)
    ]
    return merged


def _robustness(verdicts: list[object]) -> str:
    distinct = set(verdicts)
    if len(distinct) > 1:
        return "depends on the judge"
    verdict = str(verdicts[0])
    if verdict in ("better", "worse"):
        return f"robust to the judge: {verdict}"
    if verdict == "no significant difference":
        return "no difference under any judge"
    return verdict


def qa_session_counts(answers: pd.DataFrame, judge: str, key: str = "answer") -> pd.DataFrame:
    """Per (lane, owner, session, sample): the ``memory`` condition's QA counts under
    ``judge`` graded against ``key`` (columns :data:`QA_COUNTS`; those of
    :data:`PROCEDURE_COUNTS` only when a procedure question was asked)."""
    unit = ["lane_id", "user_id", "session_index", "sample"]
    memory = answers[answers["condition"] == "memory"]
    procedures = memory[memory["kind"].isin(UNJUDGED_KINDS)]
    judged = _judged_counts(memory[~memory["kind"].isin(UNJUDGED_KINDS)], judge, key, unit)
    if procedures.empty:
        return judged
    accuracy = procedures.reindex(columns=["step_accuracy"])["step_accuracy"]
    named = procedures.reindex(columns=["steps_named"])["steps_named"]
    steps = procedures[unit].assign(
        qa_procedures=1,
        qa_procedure_steps=accuracy.fillna(0.0).to_numpy(dtype=float),
        qa_procedure_recalled=[int(isinstance(n, list) and bool(n)) for n in named],
    )
    steps = steps.groupby(unit, sort=False).sum().reset_index()
    if judged.empty:  # procedure questions only
        return steps.assign(**dict.fromkeys(judged.columns.difference(unit), 0))
    both = judged.merge(steps, on=unit, how="outer")
    filled = [c for c in QA_COUNTS if c in both.columns]
    both[filled] = both[filled].fillna(0)
    return both


def _judged_counts(mine: pd.DataFrame, judge: str, key: str, unit: list[str]) -> pd.DataFrame:
    """:func:`qa_session_counts` of the judged answers ``mine`` (every count but
    :data:`PROCEDURE_COUNTS`)."""
    if mine.empty:
        return pd.DataFrame(columns=[*unit, *(c for c in QA_COUNTS if c not in PROCEDURE_COUNTS)])
    verdicts = verdict_table(mine, [judge])
    verdicts = verdicts[verdicts["key"] == key]
    # One verdict row per answer (verdict_table has a row for every answer and judge).
    right = verdicts["correct"].to_numpy(dtype=bool)
    missing = (verdicts["status"] == "no_verdict").to_numpy()
    kind = mine["kind"].to_numpy()
    headline = np.isin(kind, HEADLINE_KINDS)
    frame = mine[unit].assign(
        qa_questions=1,
        qa_answerable=headline.astype(int),
        qa_correct=(headline & right).astype(int),
        qa_f1=np.where(headline, mine["f1"].fillna(0.0).to_numpy(dtype=float), 0.0),
        qa_bleu1=np.where(headline, mine["bleu1"].fillna(0.0).to_numpy(dtype=float), 0.0),
        qa_abstain=(kind == "abstain").astype(int),
        qa_abstain_correct=((kind == "abstain") & right).astype(int),
        qa_adversarial=(kind == "adversarial").astype(int),
        qa_adversarial_correct=((kind == "adversarial") & right).astype(int),
        qa_read_tokens=(mine["prompt_tokens"] + mine["completion_tokens"]).to_numpy(dtype=int),
        qa_read_latency_s=mine["latency_s"].to_numpy(dtype=float),
        qa_judge_errors=missing.astype(int),
        qa_answer_errors=mine["error"].notna().astype(int).to_numpy(),
    )
    return frame.groupby(unit, sort=False).sum().reset_index()


def _per_owner(
    verdicts: pd.DataFrame, group: Sequence[str], values: dict[str, pd.Series]
) -> pd.DataFrame:
    """Per (group, owner): sums of ``values`` per sample, averaged over the owner's samples."""
    frame = verdicts[[*group, "user_id", "sample"]].assign(n=1, **values)
    sums = frame.groupby([*group, "user_id", "sample"], sort=False).sum()
    return sums.groupby(level=[*group, "user_id"], sort=False).mean()


def accuracy_table(
    answers: pd.DataFrame,
    *,
    by: Sequence[str] = ("lane_id", "condition"),
    kinds: Sequence[str] = HEADLINE_KINDS,
    key: str = "answer",
    judges: Sequence[str] | None = None,
    options: StatOptions | None = None,
) -> pd.DataFrame:
    """Accuracy under each judge, token F1, BLEU-1 and mem0's F1, per group of ``by``, with
    95% bootstrap intervals over owners.

    Columns: ``by``, ``judge``, ``owners``, ``questions`` (answers, averaged over samples),
    ``accuracy``, ``f1``, ``bleu1`` and ``mem0_f1`` (each +``_lo``/``_hi``; ``mem0_f1`` NaN
    for answers recorded before it was), ``judge_errors`` (answers the judge gave no verdict
    on) and ``answer_errors`` (answers whose call failed), both counted wrong and in
    ``questions``.
    """
    group = list(by)
    columns = (
        [*group, "judge", "owners", "questions"]
        + [f"{m}{s}" for m in ("accuracy", *SCORES) for s in ("", "_lo", "_hi")]
        + ["judge_errors", "answer_errors"]
    )
    mine = answers[answers["kind"].isin(list(kinds))]
    if mine.empty:
        return pd.DataFrame(columns=columns)
    named = {f"{m}{_suffix(key)}": m for m in SCORES}
    scores = mine.reindex(columns=[*_UNIT, *named]).set_index(list(_UNIT)).rename(columns=named)
    recorded = _mem0_recorded(scores)
    verdicts = verdict_table(mine, judges if judges is not None else judges_of(answers))
    verdicts = verdicts[verdicts["key"] == key]
    joined = verdicts.join(scores, on=list(_UNIT))
    values = {
        "correct": joined["correct"].astype(float),
        # A failed answer scores 0, as it counts wrong.
        **{m: joined[m].astype(float).fillna(0.0) for m in SCORES},
        "judge_errors": (joined["status"] == "no_verdict").astype(float),
        "answer_errors": (joined["status"] == "answer_error").astype(float),
    }
    owners = _per_owner(joined, [*group, "judge"], values)
    metrics = ("accuracy", *SCORES)
    rows = []
    for labels, counts in owners.groupby(level=[*group, "judge"], sort=False):
        numerators = counts[["correct", *SCORES]].to_numpy(dtype=float)
        denominators = np.repeat(counts[["n"]].to_numpy(dtype=float), len(metrics), axis=1)
        found = bootstrap_ratios(numerators, denominators, options=options)
        row = dict(zip([*group, "judge"], labels, strict=True))
        row.update(owners=len(counts), questions=float(counts["n"].sum()))
        for i, metric in enumerate(metrics):
            row[metric] = float(found.estimate[i])
            row[f"{metric}_lo"], row[f"{metric}_hi"] = float(found.lo[i]), float(found.hi[i])
        if not recorded:
            row.update(dict.fromkeys(("mem0_f1", "mem0_f1_lo", "mem0_f1_hi"), math.nan))
        row["judge_errors"] = float(counts["judge_errors"].sum())
        row["answer_errors"] = float(counts["answer_errors"].sum())
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def _mem0_recorded(scores: pd.DataFrame) -> bool:
    """Whether the answers record mem0's F1: a table written before it was has none, while
    every answer with a token F1 has one in a table written since."""
    return not (scores["f1"].notna() & scores["mem0_f1"].isna()).any()


def _suffix(key: str) -> str:
    return "" if key == "answer" else f"_{key}"


def judge_agreement(
    answers: pd.DataFrame, *, kinds: Sequence[str] = HEADLINE_KINDS
) -> pd.DataFrame:
    """Per (lane, condition) and pair of judges: answers graded by both, the share of
    verdicts that flip between them and Cohen's kappa (answers with no verdict from either
    are left out)."""
    columns = [
        "lane_id",
        "condition",
        "judge_a",
        "judge_b",
        "graded",
        "flips",
        "flip_rate",
        "kappa",
    ]
    verdicts = verdict_table(answers[answers["kind"].isin(list(kinds))])
    # Only verdicts a judge gave: an abstention decided without a judge agrees by rule.
    verdicts = verdicts[(verdicts["key"] == "answer") & (verdicts["status"] == "judged")]
    if verdicts.empty:
        return pd.DataFrame(columns=columns)
    wide = verdicts.pivot_table(
        index=list(_UNIT), columns="judge", values="verdict", aggfunc="first", dropna=False
    )
    judges = [j for j in judges_of(answers) if j in wide.columns]
    rows = []
    for (lane, condition), block in wide.groupby(level=["lane_id", "condition"], sort=False):
        for a, b in itertools.combinations(judges, 2):
            both = block[[a, b]].dropna()
            counts = KindCounts()
            for first, second in both.to_numpy(dtype=float):
                counts.add(bool(first), bool(second))
            rows.append(
                {
                    "lane_id": lane,
                    "condition": condition,
                    "judge_a": a,
                    "judge_b": b,
                    "graded": counts.pairs,
                    "flips": counts.true_rejected + counts.wrong_accepted,
                    "flip_rate": 1 - counts.agreement if counts.pairs else math.nan,
                    "kappa": counts.kappa,
                }
            )
    return pd.DataFrame(rows, columns=columns)


def judge_band(
    answers: pd.DataFrame,
    *,
    kinds: Sequence[str] = HEADLINE_KINDS,
    options: StatOptions | None = None,
) -> pd.DataFrame:
    """Per (lane, condition): accuracy under each judge (``accuracy:<judge>``), the band
    (``band_lo``/``band_hi``: min and max over judges, ``band``: their difference), and the
    largest flip rate and smallest kappa over pairs of judges."""
    table = accuracy_table(answers, kinds=kinds, options=options)
    agreement = judge_agreement(answers, kinds=kinds)
    rows = []
    for (lane, condition), block in table.groupby(["lane_id", "condition"], sort=False):
        scores = dict(zip(block["judge"], block["accuracy"], strict=True))
        pairs = agreement[(agreement["lane_id"] == lane) & (agreement["condition"] == condition)]
        row: dict[str, Any] = {"lane_id": lane, "condition": condition}
        row.update({f"accuracy:{judge}": value for judge, value in scores.items()})
        row["band_lo"], row["band_hi"] = min(scores.values()), max(scores.values())
        row["band"] = row["band_hi"] - row["band_lo"]
        row["flip_rate"] = float(pairs["flip_rate"].max()) if len(pairs) else math.nan
        row["kappa"] = float(pairs["kappa"].min()) if len(pairs) else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def key_ceiling(answers: pd.DataFrame, *, options: StatOptions | None = None) -> pd.DataFrame:
    """Per lane, condition, judge and answer key, over the headline set (``category``
    ``all``) and per category: the key's ceiling and the accuracy against it, with
    ``over_ceiling`` True when the accuracy exceeds the ceiling. Empty when no question was
    audited.

    ``key`` names each answer key for what it is. A run of the audited key is graded against
    ``audited`` (the file's answers) and ``original`` (the answers before the audit); a run of
    the original key that records the audit, against ``original`` only. A perfect answerer is
    right by the audit, so it is wrong by the original key on each question whose audited
    answer differs: the original key's ceiling is 1 - (those questions / questions), the
    audited key's 1. Columns: ``lane_id``, ``condition``, ``category``, ``judge``, ``key``,
    ``questions``, ``changed`` (questions whose audited answer differs), ``ceiling``,
    ``accuracy``, ``over_ceiling``.
    """
    columns = ["lane_id", "condition", "category", "judge", "key", "questions", "changed"]
    columns += ["ceiling", "accuracy", "over_ceiling"]
    mine = answers[answers["kind"].isin(list(HEADLINE_KINDS))]
    if mine.empty or "audited" not in mine.columns or not mine["audited"].fillna(False).any():
        return pd.DataFrame(columns=columns)
    changed = mine["answer_changed"].fillna(False).astype(bool)
    recorded = mine["audit_differs"] if "audit_differs" in mine.columns else changed
    mine = mine.assign(differs=recorded.fillna(False).astype(bool) | changed, overall="all")
    # The file's answers are the original ones where the audit differs and did not change them.
    original_run = bool((mine["differs"] & ~changed).any())
    keys = {"answer": "original"} if original_run else {"answer": "audited", "original": "original"}
    frames = []
    for by in (["lane_id", "condition"], ["lane_id", "condition", "category"]):
        for key, name in keys.items():
            table = accuracy_table(mine, by=by, key=key, options=options).assign(key=name)
            if "category" not in by:
                table["category"] = "all"
            frames.append(table[["lane_id", "condition", "category", "judge", "key", "accuracy"]])
    table = pd.concat(frames, ignore_index=True)
    share = pd.concat(
        [
            mine.groupby(["lane_id", "condition", level])["differs"].agg(["size", "sum", "mean"])
            for level in ("overall", "category")
        ]
    )
    share.index = share.index.set_names(["lane_id", "condition", "category"])
    samples = mine.groupby(["lane_id", "condition"])["sample"].nunique()
    found = share.reindex(pd.MultiIndex.from_frame(table[["lane_id", "condition", "category"]]))
    per_sample = samples.reindex(pd.MultiIndex.from_frame(table[["lane_id", "condition"]]))
    table["questions"] = found["size"].to_numpy() / per_sample.to_numpy()
    table["changed"] = (found["sum"].to_numpy() / per_sample.to_numpy()).round().astype(int)
    table["ceiling"] = np.where(table["key"] == "original", 1 - found["mean"].to_numpy(), 1.0)
    table["over_ceiling"] = table["accuracy"] > table["ceiling"] + 1e-12
    return table[columns]


def _memory_answers(answers: pd.DataFrame, judge: str) -> list[dict[str, Any]] | None:
    """The headline answers from memory, each with ``right`` under ``judge`` and
    ``gold_right`` (the gold memory's answer to the same question: right, wrong, or None when
    not asked or not graded); None when ``judge`` graded nothing."""
    mine = answers[answers["kind"].isin(list(HEADLINE_KINDS))]
    verdicts = verdict_table(mine)
    verdicts = verdicts[(verdicts["judge"] == judge) & (verdicts["key"] == "answer")]
    if verdicts.empty:
        return None
    right = verdicts.set_index(list(_UNIT))["correct"]
    memory = mine[mine["condition"] == "memory"]
    gold_key = ["lane_id", "sample", "user_id", "question_id"]
    asked_gold = "gold_memory" in set(mine["condition"])
    gold = right.xs("gold_memory", level="condition") if asked_gold else pd.Series(dtype=bool)
    details = [c for c in ("evidence_fates",) if c in memory.columns]
    records = [
        {str(k): v for k, v in found.items()}
        for found in memory[[*_UNIT, "fate", *details]].to_dict("records")
    ]
    for record in records:
        record["right"] = bool(right.get(tuple(record[c] for c in _UNIT), False))
        gold_right = gold.get(tuple(record[c] for c in gold_key))
        record["gold_right"] = None if gold_right is None else bool(gold_right)
    return records


def cause_table(answers: pd.DataFrame, judge: str) -> pd.DataFrame:
    """Wrong headline answers from memory under ``judge`` per lane, by cause (columns
    :data:`~memlab.scoring.qa.qa_causes.CAUSES`, then ``wrong`` and ``answered``); repeated
    samples are summed."""
    columns = ["lane_id", *CAUSES, "wrong", "answered"]
    records = _memory_answers(answers, judge)
    if records is None:
        return pd.DataFrame(columns=columns)
    rows: dict[str, dict[str, int]] = {}
    for record in records:
        lane = rows.setdefault(record["lane_id"], dict.fromkeys([*CAUSES, "wrong", "answered"], 0))
        lane["answered"] += 1
        if record["right"]:
            continue
        lane[cause_of(str(record["fate"]), record["gold_right"])] += 1
        lane["wrong"] += 1
    return pd.DataFrame([{"lane_id": k, **v} for k, v in rows.items()], columns=columns)


def threshold_ratings(answers: pd.DataFrame, judge: str) -> pd.DataFrame:
    """Per lane and rating, the evidence facts of wrong headline answers from memory under
    ``judge`` whose cause is below the threshold, with the values that kept them out
    (``rating``: e.g. ``importance 0.5 ≤ 0.7`` for a tiered memory's key point; ``proposed
    below the threshold`` where the records give none); ``evidence`` counts them."""
    columns = ["lane_id", "rating", "evidence"]
    counts: dict[tuple[str, str], int] = {}
    for record in _memory_answers(answers, judge) or []:
        if record["right"] or record["fate"] != "below_threshold":
            continue
        for fate in (record.get("evidence_fates") or {}).values():
            if fate_key(str(fate)) == "below_threshold":
                rating = str(fate)[len("below_threshold") :].strip(" ()")
                key = (str(record["lane_id"]), rating or "proposed below the threshold")
                counts[key] = counts.get(key, 0) + 1
    rows = [{"lane_id": lane, "rating": r, "evidence": n} for (lane, r), n in counts.items()]
    return pd.DataFrame(rows, columns=columns)


def qa_cost(answers: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """Per lane and condition: read-side tokens (answer prompt + reply) and latency per
    question, context tokens per question, and the lane's write-side tokens (memory updates)
    per conversation (an owner's replay, averaged over samples)."""
    read = answers.assign(read_tokens=answers["prompt_tokens"] + answers["completion_tokens"])
    table = (
        read.groupby(["lane_id", "condition"], sort=False)
        .agg(
            questions=("question_id", "size"),
            read_tokens_per_question=("read_tokens", "mean"),
            context_tokens_per_question=("context_tokens", "mean"),
            read_latency_s_per_question=("latency_s", "mean"),
            cached=("cached", "mean"),
        )
        .reset_index()
    )
    if calls.empty:
        table["write_tokens_per_conversation"] = math.nan
        return table
    unit = ["lane_id", "user_id"] + (["sample"] if "sample" in calls.columns else [])
    tokens = calls.assign(tokens=calls["prompt_tokens"] + calls["completion_tokens"])
    per_owner = tokens.groupby(unit)["tokens"].sum().groupby(level="lane_id").mean()
    table["write_tokens_per_conversation"] = table["lane_id"].map(per_owner)
    return table


def interval_note(table: pd.DataFrame, owners: int) -> str:
    """A plain sentence when the intervals of ``table`` (an :func:`accuracy_table`) are too
    wide to separate most differences ("" when they are not)."""
    if table.empty or "accuracy_lo" not in table.columns:
        return ""
    widths = (table["accuracy_hi"] - table["accuracy_lo"]).dropna()
    if widths.empty:
        return (
            f"With {owners} owner(s) there is no interval at all: every difference here "
            "is anecdotal."
        )
    median = float(widths.median())
    if owners >= _FEW_OWNERS and median < _WIDE_INTERVAL:
        return ""
    return (
        f"With {owners} owners (conversations) the 95% intervals are wide: a median width of "
        f"{median * 100:.0f} points. Differences smaller than that, most per-category ones "
        "among them, are inside the noise; more owners narrow them, more questions per owner "
        "much less."
    )
