"""Procedure questions in the memory-QA section and in ``memlab qa``'s output.

A ``procedure`` question asks the agent to carry out a labelled procedure; memory QA asks it
of each lane's memory and scores the reply by the steps it names in order
(:mod:`memlab.qa.procedure_scores`), never by a judge. The table shows, per lane, the
summary's ``qa_procedure_step_accuracy`` and ``qa_procedure_recall`` (declared in
:mod:`memlab.scoring.metric_specs`) with their 95% intervals over owners, so the report, the
CLI and ``memlab compare`` read one number. When the run asked them under other conditions
too (``none``, ``full_context``, ``gold_memory``: the baselines and the ceiling), a column per
condition gives its step-order accuracy the same way (the mean over questions, owners'
samples averaged first, the 95% interval over owners).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from memlab.datasets.questions import UNJUDGED_KINDS
from memlab.runs.run import Run
from memlab.scoring.inference.stat_options import StatOptions
from memlab.scoring.inference.stats import bootstrap, ratio_estimator
from memlab.scoring.metric_specs import metric_spec

__all__ = ["PROCEDURE_METRICS", "procedure_table"]

PROCEDURE_METRICS: tuple[str, ...] = ("qa_procedure_step_accuracy", "qa_procedure_recall")
"""The summary metrics of procedure questions, in the table's column order."""


def _shown(row: Mapping[str, Any], column: str) -> str:
    spec = metric_spec(column)
    value = row.get(column, math.nan)
    if pd.isna(value):
        return "-"
    lo, hi = (float(row.get(f"{column}{end}", math.nan)) for end in ("_lo", "_hi"))
    return f"{spec.fmt(value)} {spec.fmt_bounds(lo, hi, points=True)}"


def _accuracy(block: pd.DataFrame, options: StatOptions | None) -> str:
    """The mean step-order accuracy of ``block``'s replies with its interval over owners."""
    per_sample = block.assign(n=1.0, acc=block["step_accuracy"].fillna(0.0).astype(float))
    sums = per_sample.groupby(["user_id", "sample"], sort=True)[["acc", "n"]].sum()
    owners = sums.groupby(level="user_id", sort=True).mean()
    found = bootstrap(ratio_estimator(owners["acc"], owners["n"]), options)
    spec = metric_spec(PROCEDURE_METRICS[0])
    return f"{spec.fmt(found.estimate)} {spec.fmt_bounds(found.lo, found.hi, points=True)}"


def procedure_table(run: Run) -> pd.DataFrame:
    """Per lane whose memory was asked procedure questions: ``lane_id``, ``questions`` (per
    sample), each of :data:`PROCEDURE_METRICS` under its title, as ``57.4% [39.6, 77.7]``
    (the run summary's value and interval), and the step-order accuracy under each other
    condition asked (module docstring); empty when none was asked."""
    answers = run.qa_answers
    procedures = answers[answers["kind"].isin(UNJUDGED_KINDS)]
    asked = procedures[procedures["condition"] == "memory"]
    if asked.empty:
        return pd.DataFrame()
    summary = run.summary
    title = metric_spec(PROCEDURE_METRICS[0]).title
    others = [c for c in dict.fromkeys(procedures["condition"]) if c != "memory"]
    rows = []
    for lane, block in asked.groupby("lane_id", sort=False):
        row = {str(k): v for k, v in summary.loc[str(lane)].items()}
        questions = len(block) / block["sample"].nunique()
        shown = {metric_spec(c).title: _shown(row, c) for c in PROCEDURE_METRICS}
        mine = procedures[procedures["lane_id"] == lane]
        for condition in others:
            done = mine[mine["condition"] == condition]
            shown[f"{title}, {condition}"] = _accuracy(done, run.stats) if len(done) else "-"
        rows.append({"lane_id": lane, "questions": f"{questions:g}", **shown})
    return pd.DataFrame(rows)
