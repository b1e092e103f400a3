"""Memory-QA comparisons under every judge the runs share: :func:`judge_robustness` says which
differences between configurations are robust to the judge, :func:`compare_under_judges`
merges the paired comparisons of each judge."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeGuard

import pandas as pd

from memlab.reporting.groups import lane_groups
from memlab.reporting.statistics import (
    compared_metrics,
    group_pairs,
)
from memlab.runs.run import Run, RunError
from memlab.scoring.comparing.comparison import Lane, compare, compare_lanes
from memlab.scoring.inference.stats import StatOptions
from memlab.scoring.qa.qa_metrics import (
    judged_metrics,
    robust_verdicts,
)

__all__ = ["compare_under_judges", "judge_robustness"]


def judge_robustness(runs: Sequence[Run], *, allow_mixed: bool = False) -> pd.DataFrame:
    """The report's comparisons of the judged QA rates under every judge the runs share
    (:func:`memlab.scoring.qa.qa_metrics.robust_verdicts`); empty when no group has memory QA
    graded by two judges.

    Each judge's comparison is the report's own: the same pairs per group, the same rates and
    primary metrics, so the same Holm family; only the judge's verdicts differ. A difference
    robust to the judge is then one the headline finds too.
    """
    metrics, primary, options = compared_metrics(runs), runs[0].primary, runs[0].stats
    found: list[pd.DataFrame] = []
    for group in lane_groups(runs):
        pairs, _ = group_pairs(group)
        lanes = [lane for pair in pairs for lane in pair]
        asked = list({id(r): r for r in (lane.run for lane in lanes) if _asked(r)}.values())
        if not pairs or not asked:
            continue

        def table(judge: str, pairs: list[tuple[Lane, Lane]] = pairs) -> pd.DataFrame:
            judged = [(_under(base, judge), _under(cand, judge)) for base, cand in pairs]
            compared = compare_lanes(
                judged, metrics=metrics, primary=primary, options=options, allow_mixed=allow_mixed
            )
            return _judged_rows(compared)

        found.append(_under_every_judge(asked, table))
    found = [f for f in found if not f.empty]
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame()


def compare_under_judges(
    run_a: Run,
    run_b: Run | None = None,
    *,
    baseline_lane: str | None = None,
    metrics: Sequence[str] | None = None,
    primary: Sequence[str] | None = None,
    options: StatOptions | None = None,
    allow_mixed: bool = False,
) -> pd.DataFrame:
    """:func:`memlab.scoring.comparing.comparison.compare` under every judge the runs share, merged
    by
    :func:`memlab.scoring.qa.qa_metrics.robust_verdicts` (a difference is robust to the judge
    only when every judge finds it); empty when they share fewer than two judges. Each judge's
    comparison has the arguments of the headline one (``metrics``, ``primary``), so the same
    Holm family decides it; the judged rates' rows are kept."""

    def table(judge: str) -> pd.DataFrame:
        compared = compare(
            run_a.with_judge(judge),
            run_b.with_judge(judge) if run_b is not None else None,
            baseline_lane=baseline_lane,
            metrics=metrics,
            primary=primary,
            options=options,
            allow_mixed=allow_mixed,
        )
        return _judged_rows(compared)

    return _under_every_judge([run_a] if run_b is None else [run_a, run_b], table)


def _judged_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a comparison whose rate a judge grades."""
    if table.empty:
        return table
    return table[table["metric"].isin(judged_metrics())].reset_index(drop=True)


def _asked(run: Any) -> TypeGuard[Run]:
    return isinstance(run, Run) and not run.qa_answers.empty


def _under_every_judge(runs: Sequence[Run], table: Callable[[str], pd.DataFrame]) -> pd.DataFrame:
    shared = [j for j in runs[0].judges if all(j in run.judges for run in runs)]
    if len(shared) < 2:
        return pd.DataFrame()
    return robust_verdicts({judge: table(judge) for judge in shared})


def _under(lane: Lane, judge: str) -> Lane:
    """``lane`` with its run's QA metrics counted under ``judge`` (a run without memory QA as
    it is: it has no judged rate to count)."""
    if not isinstance(lane.run, Run):
        raise RunError(f"{lane.run.name} is not a run")
    if lane.run.qa_answers.empty:
        return lane
    return Lane(lane.run.with_judge(judge), lane.lane_id)
