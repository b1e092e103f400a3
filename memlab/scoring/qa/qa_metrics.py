"""Memory QA in numbers: accuracy per condition and category with intervals, the judge band,
the answer-key ceiling, the causes of wrong answers and what reading costs.

The input is a QA step's answer table (one row per lane, sample, owner, question and
condition: :attr:`memlab.runs.run.Run.qa_answers`). Each answer carries each judge's verdict
against each answer key; an answer is *correct* under a judge when the judge said CORRECT, and
for an adversarial question also when it abstains (its right response is to say it is not
known, or its answer when it has one). The verdict rows themselves, and the answers
left without a verdict, are :mod:`memlab.scoring.qa.qa_verdicts`.

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
from memlab.scoring.qa.qa_causes import CAUSES, cause_of, fate_key, graded_right
from memlab.scoring.qa.qa_verdicts import (
    ANSWER_UNIT,
    HEADLINE_KINDS,
    judges_of,
    verdict_table,
)

__all__ = [
    "JUDGED_COUNTS",
    "PROCEDURE_COUNTS",
    "QA_COUNTS",
    "accuracy_table",
    "cause_table",
    "interval_note",
    "judge_agreement",
    "judge_band",
    "judged_metrics",
    "key_ceiling",
    "qa_cost",
    "qa_session_counts",
    "robust_verdicts",
    "threshold_ratings",
]

QA_COUNTS = count_columns(by="qa")
"""The session-row counts of memory QA (declared in ``COUNT_SPECS``)."""

JUDGED_COUNTS = ("qa_correct", "qa_abstain_correct", "qa_adversarial_correct")
"""The QA counts that depend on the judge (token F1 and BLEU-1 do not)."""

PROCEDURE_COUNTS = tuple(c for c in QA_COUNTS if c.startswith("qa_procedure"))
"""The QA counts of procedure questions: in the session rows only when some were asked."""

_WIDE_INTERVAL = 0.20
_FEW_OWNERS = 20


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
    scores = (
        mine.reindex(columns=[*ANSWER_UNIT, *named])
        .set_index(list(ANSWER_UNIT))
        .rename(columns=named)
    )
    recorded = _mem0_recorded(scores)
    verdicts = verdict_table(mine, judges if judges is not None else judges_of(answers))
    verdicts = verdicts[verdicts["key"] == key]
    joined = verdicts.join(scores, on=list(ANSWER_UNIT))
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
        index=list(ANSWER_UNIT), columns="judge", values="verdict", aggfunc="first", dropna=False
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
    """The headline answers from memory, each with ``right`` under ``judge``, its
    ``cause`` when it is not right (:func:`~memlab.scoring.qa.qa_causes.cause_of`: an answer
    left without a verdict is ``no_verdict``), and ``gold_right`` (the gold memory's answer to
    the same question: right, wrong, or None when not asked or not graded); None when
    ``judge`` graded nothing."""
    mine = answers[answers["kind"].isin(list(HEADLINE_KINDS))]
    verdicts = verdict_table(mine)
    verdicts = verdicts[(verdicts["judge"] == judge) & (verdicts["key"] == "answer")]
    if verdicts.empty:
        return None
    rows = verdicts.set_index(list(ANSWER_UNIT))
    right, status = rows["correct"], rows["status"]
    memory = mine[mine["condition"] == "memory"]
    gold_key = ["lane_id", "sample", "user_id", "question_id"]
    asked_gold = "gold_memory" in set(mine["condition"])
    gold = (
        rows.xs("gold_memory", level="condition")
        if asked_gold
        else pd.DataFrame(columns=["status", "correct"])
    )
    details = [c for c in ("evidence_fates",) if c in memory.columns]
    records = [
        {str(k): v for k, v in found.items()}
        for found in memory[[*ANSWER_UNIT, "fate", *details]].to_dict("records")
    ]
    for record in records:
        unit = tuple(record[c] for c in ANSWER_UNIT)
        record["right"] = bool(right.get(unit, False))
        twin = tuple(record[c] for c in gold_key)
        record["gold_right"] = (
            graded_right(str(gold.at[twin, "status"]), bool(gold.at[twin, "correct"]))
            if twin in gold.index
            else None
        )
        record["cause"] = cause_of(
            str(record["fate"]), record["gold_right"], str(status.get(unit, "no_verdict"))
        )
    return records


def cause_table(answers: pd.DataFrame, judge: str) -> pd.DataFrame:
    """Wrong headline answers from memory under ``judge`` per lane, by cause (columns
    :data:`~memlab.scoring.qa.qa_causes.CAUSES`, then ``wrong`` and ``answered``); repeated
    samples are summed. ``wrong`` counts every answer not right, those left without a verdict
    among them (cause ``no_verdict``): the causes sum to it."""
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
        lane[record["cause"]] += 1
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
        if record["right"] or record["cause"] != "below_threshold":
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
