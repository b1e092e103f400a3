"""The forgetting operating curve: per configuration, the share of labelled answers its memory
still gives after later sessions, against the memory's size.

Per lane, from the answers :func:`memlab.postrun.retention.ask_retention` asked (each
answerable question after every session following its evidence) and the memory's size after
every session (:func:`memlab.postrun.consolidation.memory_sizes`), with 95% intervals over
owners (repeated samples of an owner averaged first, as everywhere in memlab; the interval's
method, or none on too few owners, as :mod:`memlab.scoring.inference.coverage` decides):

- ``retained``: answers correct under the run's judge (answer key) / answers asked;
- ``memory_tokens``: the memory's size in cl100k tokens per owner, averaged over the
  owner's sessions (what the memory carries along the way, not only at the end).

A configuration is compared with a reference one (the seed's defaults) on the intervals:
``vs_reference`` is ``above`` when its ``retained`` interval lies wholly above the
reference's, ``below`` when wholly below, else ``overlaps`` (``-`` when either has no
interval). It is *selected* when its retained share is not below the reference's
(``above`` or ``overlaps``) and its memory is smaller (``memory_tokens`` below the
reference's): the memory keeps at least what the reference keeps while staying smaller.
It is *on the frontier* when no other configuration retains more with a memory no larger.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from memlab.scoring.inference.stat_options import StatOptions
from memlab.scoring.inference.stats import Estimator, bootstrap, ratio_estimator
from memlab.scoring.qa.qa_verdicts import verdict_table

__all__ = [
    "COUNT_COLUMNS",
    "RETENTION_COLUMNS",
    "compare_retention",
    "retention_counts",
    "retention_table",
    "retention_table_of_counts",
]

COUNT_COLUMNS: tuple[str, ...] = (
    "lane_id",
    "sample",
    "user_id",
    "session_index",
    "asked",
    "retained",
)
"""The columns of :func:`retention_counts`: per (lane, sample, owner, session asked after),
the answers asked and those correct under the judge."""

RETENTION_COLUMNS: tuple[str, ...] = (
    "lane_id",
    "owners",
    "asked",
    "retained",
    "retained_lo",
    "retained_hi",
    "retained_method",
    "memory_tokens",
    "memory_tokens_lo",
    "memory_tokens_hi",
)
"""The columns of :func:`retention_table`."""


def _owner_sums(frame: pd.DataFrame, values: list[str], how: str) -> pd.DataFrame:
    """Per (lane, owner): ``values`` summed (or averaged) per sample, then averaged."""
    per_sample = frame.groupby(["lane_id", "user_id", "sample"], sort=True)[values].agg(how)
    return per_sample.groupby(level=["lane_id", "user_id"], sort=True).mean()


def retention_counts(answers: pd.DataFrame, judge: str) -> pd.DataFrame:
    """Per (lane, sample, owner, session asked after): :data:`COUNT_COLUMNS`, the answers
    asked and those ``judge`` found correct (answer key), in first-seen order."""
    if answers.empty:
        return pd.DataFrame(columns=list(COUNT_COLUMNS))
    verdicts = verdict_table(answers)
    verdicts = verdicts[(verdicts["judge"] == judge) & (verdicts["key"] == "answer")]
    unit = ["lane_id", "sample", "user_id", "question_id", "session_index"]
    right = verdicts.set_index(unit)["correct"]
    found = right.reindex(pd.MultiIndex.from_frame(answers[unit])).fillna(False)
    per_answer = answers[list(COUNT_COLUMNS[:4])].assign(
        retained=found.to_numpy(dtype=int), asked=1
    )
    counts = per_answer.groupby(list(COUNT_COLUMNS[:4]), sort=False)[["asked", "retained"]].sum()
    return counts.reset_index()[list(COUNT_COLUMNS)]


def _mean(values: np.ndarray) -> Estimator:
    """The mean over owners (not a rate: the bootstrap interval, never the exact one)."""
    columns = np.column_stack([values, np.ones(len(values))])
    return Estimator(columns, lambda sums: sums[:, 0] / sums[:, 1])


def retention_table(
    answers: pd.DataFrame,
    sizes: pd.DataFrame,
    judge: str,
    *,
    options: StatOptions | None = None,
) -> pd.DataFrame:
    """One row per lane (in ``sizes``' order): :data:`RETENTION_COLUMNS` (module docstring).

    Args:
        answers: The answer rows asked (``memory`` condition, answerable questions).
        sizes: Per (``lane_id``, ``sample``, ``user_id``, ``session_index``): the memory's
            ``memory_tokens``.
        judge: The judge whose verdicts count.
        options: Resamples, seed and level of the intervals.
    """
    return retention_table_of_counts(retention_counts(answers, judge), sizes, options=options)


def retention_table_of_counts(
    counts: pd.DataFrame, sizes: pd.DataFrame, *, options: StatOptions | None = None
) -> pd.DataFrame:
    """:func:`retention_table` from the answers' :func:`retention_counts` (rows asking
    nothing are ignored), as a run keeps them."""
    if sizes.empty:
        return pd.DataFrame(columns=list(RETENTION_COLUMNS))
    tokens = _owner_sums(sizes, ["memory_tokens"], "mean")
    counts = counts[counts["asked"] > 0]
    sums = (
        _owner_sums(
            counts.astype({"asked": float, "retained": float}), ["retained", "asked"], "sum"
        )
        if len(counts)
        else None
    )
    rows: list[dict[str, Any]] = []
    for lane_id in dict.fromkeys(sizes["lane_id"]):
        owners = tokens.xs(lane_id, level="lane_id")
        size = bootstrap(_mean(owners["memory_tokens"].to_numpy(dtype=float)), options)
        row: dict[str, Any] = {
            "lane_id": lane_id,
            "owners": len(owners),
            "asked": 0.0,
            "retained": math.nan,
            "retained_lo": math.nan,
            "retained_hi": math.nan,
            "retained_method": "-",
            "memory_tokens": size.estimate,
            "memory_tokens_lo": size.lo,
            "memory_tokens_hi": size.hi,
        }
        if sums is not None and lane_id in sums.index.get_level_values("lane_id"):
            mine = sums.xs(lane_id, level="lane_id")
            kept = bootstrap(ratio_estimator(mine["retained"], mine["asked"]), options)
            row.update(
                asked=float(mine["asked"].sum()),
                retained=kept.estimate,
                retained_lo=kept.lo,
                retained_hi=kept.hi,
                retained_method=kept.method,
            )
        rows.append(row)
    return pd.DataFrame(rows, columns=list(RETENTION_COLUMNS))


def _versus(row: pd.Series, reference: pd.Series) -> str:
    bounds = [row["retained_lo"], row["retained_hi"], reference["retained_lo"]]
    bounds.append(reference["retained_hi"])
    if any(math.isnan(float(b)) for b in bounds):
        return "-"
    if row["retained_lo"] > reference["retained_hi"]:
        return "above"
    if row["retained_hi"] < reference["retained_lo"]:
        return "below"
    return "overlaps"


def compare_retention(table: pd.DataFrame, reference: str) -> pd.DataFrame:
    """``table`` (:func:`retention_table`) with ``vs_reference``, ``selected`` and
    ``frontier`` against the lane ``reference`` (module docstring).

    Raises:
        KeyError: ``reference`` is not a lane of the table.
    """
    if reference not in set(table["lane_id"]):
        raise KeyError(f"reference lane {reference!r} is not in the table")
    ref = table[table["lane_id"] == reference].iloc[0]
    out = table.copy()
    out["vs_reference"] = [
        "reference" if r["lane_id"] == reference else _versus(r, ref) for _, r in table.iterrows()
    ]
    smaller = out["memory_tokens"] < ref["memory_tokens"]
    out["selected"] = out["vs_reference"].isin(["above", "overlaps"]) & smaller
    kept, size = out["retained"].to_numpy(float), out["memory_tokens"].to_numpy(float)
    out["frontier"] = [
        bool(np.isfinite(k))
        and not bool(((kept > k) & (size <= s)).any() or ((kept >= k) & (size < s)).any())
        for k, s in zip(kept, size, strict=True)
    ]
    return out
