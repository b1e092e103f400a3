"""Paired comparisons of configurations on the owners they share.

Two lanes replayed over the same owners are compared owner by owner: for each rate of
:func:`~memlab.scoring.metric_specs.interval_specs` the delta (candidate - baseline), its paired
bootstrap interval, a sign-flip permutation p-value, the Holm-adjusted p-value over every
metric and lane compared in the same call, and the minimum detectable effect
(:mod:`memlab.scoring.stats`). Owners only one side has are left out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from memlab.errors import MemlabError
from memlab.scoring.metric_specs import MetricSpec, interval_specs, metric_spec
from memlab.scoring.metrics import owner_counts
from memlab.scoring.stats import StatOptions, holm, paired_ratio_test, ratio

__all__ = [
    "COMPARE_COLUMNS",
    "CompareError",
    "Lane",
    "ScoredRun",
    "compare",
    "compare_lanes",
    "comparison_text",
    "describe",
    "describe_mde",
    "owner_deltas",
]


class ScoredRun(Protocol):
    """What scoring reads of a run; a sweep's :class:`~memlab.sweeps.run.Run` is one."""

    @property
    def name(self) -> str:
        """The run's name, for tables and messages."""
        ...

    @property
    def lanes(self) -> Mapping[str, Any]:
        """Lane configurations by lane id, in order."""
        ...

    @property
    def calls(self) -> pd.DataFrame:
        """One row per LLM call."""
        ...

    @property
    def sessions(self) -> pd.DataFrame:
        """One row per (lane, owner, session)."""
        ...

    @property
    def prices(self) -> Mapping[str, tuple[float, float]] | None:
        """Price table for the cost columns (``None``: the backends' own)."""
        ...

    @property
    def stats(self) -> StatOptions:
        """Resamples, seed and levels of intervals and comparisons."""
        ...

    def label(self, lane_id: str) -> str:
        """A short label of a lane."""
        ...


class CompareError(MemlabError, ValueError):
    """Two runs or lanes cannot be compared (no shared owners, unknown lane or metric)."""


@dataclass(frozen=True)
class Lane:
    """One lane of one run."""

    run: ScoredRun
    lane_id: str

    @property
    def label(self) -> str:
        """The lane's label within its run."""
        return self.run.label(self.lane_id)


COMPARE_COLUMNS: tuple[str, ...] = (
    "baseline_run",
    "baseline_lane",
    "run",
    "lane",
    "lane_id",
    "metric",
    "title",
    "owners",
    "baseline",
    "value",
    "delta",
    "delta_lo",
    "delta_hi",
    "p_value",
    "p_holm",
    "significant",
    "verdict",
    "mde",
    "owners_better",
    "owners_worse",
)
"""Columns of :func:`compare`: one row per (compared lane, metric)."""


def compare(
    run_a: ScoredRun,
    run_b: ScoredRun | None = None,
    *,
    baseline_lane: str | None = None,
    metrics: Sequence[str] | None = None,
    options: StatOptions | None = None,
) -> pd.DataFrame:
    """Compare run B's lanes with run A's (or run A's lanes with one of its own).

    Args:
        run_a: The baseline run.
        run_b: The candidate run; ``None`` compares every other lane of ``run_a`` with its
            baseline lane.
        baseline_lane: Lane id or label in ``run_a`` to compare against. Default: the first
            lane when ``run_b`` is None or ``run_a`` has one lane; otherwise each lane of
            ``run_b`` is paired with the lane of ``run_a`` that has the same label.
        metrics: Rate columns to compare (default: every rate with an interval).
        options: Resamples, seed, level, alpha and power (default: ``run_a.stats``).

    Returns:
        One row per (lane, metric) with the columns :data:`COMPARE_COLUMNS`; ``delta`` is
        candidate minus baseline, ``significant`` is ``p_holm <= alpha``.
    """
    if run_b is None:
        base = Lane(run_a, _find_lane(run_a, baseline_lane or next(iter(run_a.lanes), "")))
        pairs = [(base, Lane(run_a, lid)) for lid in run_a.lanes if lid != base.lane_id]
    else:
        pairs = _pair_runs(run_a, run_b, baseline_lane)
    return compare_lanes(pairs, metrics=metrics, options=options or run_a.stats)


def _find_lane(run: ScoredRun, wanted: str) -> str:
    for lane_id in run.lanes:
        if wanted in (lane_id, run.label(lane_id)):
            return lane_id
    known = ", ".join(run.label(lid) for lid in run.lanes) or "none"
    raise CompareError(f"run {run.name}: no lane {wanted!r}; lanes: {known}")


def _pair_runs(
    run_a: ScoredRun, run_b: ScoredRun, baseline_lane: str | None) -> list[tuple[Lane, Lane]]:
    if baseline_lane is not None or len(run_a.lanes) == 1:
        base = Lane(run_a, _find_lane(run_a, baseline_lane or next(iter(run_a.lanes))))
        return [(base, Lane(run_b, lid)) for lid in run_b.lanes]
    by_label = {run_a.label(lid): lid for lid in run_a.lanes}
    pairs = []
    for lane_id in run_b.lanes:
        label = run_b.label(lane_id)
        if label not in by_label:
            raise CompareError(
                f"run {run_b.name}: lane {label!r} has no lane of the same label in "
                f"{run_a.name}; pass baseline_lane (--baseline-lane) to compare every lane "
                "with one lane"
            )
        pairs.append((Lane(run_a, by_label[label]), Lane(run_b, lane_id)))
    return pairs


def _pick_metrics(metrics: Sequence[str] | None) -> list[MetricSpec]:
    rates = interval_specs()
    if metrics is None:
        return list(rates)
    chosen = []
    for name in metrics:
        try:
            spec = metric_spec(name)
        except KeyError:
            spec = None
        if spec is None or not spec.interval:
            known = ", ".join(s.column for s in rates)
            raise CompareError(f"cannot compare {name!r}: not a rate; rates: {known}")
        chosen.append(spec)
    return chosen


def _counts(run: ScoredRun, cache: dict[int, pd.DataFrame]) -> pd.DataFrame:
    if id(run) not in cache:
        sessions = run.sessions
        nested = "sample" if "sample" in sessions.columns else None
        cache[id(run)] = owner_counts(run.calls, sessions, prices=run.prices, nested=nested)
    return cache[id(run)]


def _lane_counts(lane: Lane, cache: dict[int, pd.DataFrame]) -> pd.DataFrame:
    counts = _counts(lane.run, cache)
    if counts.empty:
        return counts
    mine = counts.index.get_level_values("lane_id") == lane.lane_id
    return counts[mine].droplevel("lane_id")


def compare_lanes(
    pairs: Sequence[tuple[Lane, Lane]],
    *,
    metrics: Sequence[str] | None = None,
    options: StatOptions | None = None,
) -> pd.DataFrame:
    """Compare each ``(baseline, candidate)`` pair; Holm's correction spans all rows.

    ``verdict`` is ``better`` or ``worse`` when significant, else ``no significant
    difference``; ``not applicable`` when the rate is undefined on both sides (no retracted
    facts in the data), ``not computable`` when only the candidate's is (it stored nothing
    to measure precision on), ``not comparable`` when only the baseline's is.
    """
    options = options or StatOptions()
    specs = _pick_metrics(metrics)
    cache: dict[int, pd.DataFrame] = {}
    rows: list[dict[str, Any]] = []
    for base, cand in pairs:
        rows += _compare_pair(base, cand, specs, options, cache)
    table = pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))
    if table.empty:
        return table
    table["p_holm"] = holm(table["p_value"].to_numpy(dtype=float))
    table["significant"] = table["p_holm"] <= options.alpha
    table["verdict"] = [_verdict(metric_spec(str(r["metric"])), r) for _, r in table.iterrows()]
    return table


def _verdict(spec: MetricSpec, row: pd.Series) -> str:
    """``better``/``worse`` when significant; else why not (see :func:`compare_lanes`)."""
    base, value, delta = float(row["baseline"]), float(row["value"]), float(row["delta"])
    if math.isnan(base) and math.isnan(value):
        return "not applicable"
    if math.isnan(value):
        return "not computable"
    if math.isnan(base) or math.isnan(delta):
        return "not comparable"
    if not bool(row["significant"]):
        return "no significant difference"
    return "better" if (delta > 0) == spec.higher_is_better else "worse"


def _compare_pair(
    base: Lane,
    cand: Lane,
    specs: Sequence[MetricSpec],
    options: StatOptions,
    cache: dict[int, pd.DataFrame],
) -> list[dict[str, Any]]:
    counts_a, counts_b = _lane_counts(base, cache), _lane_counts(cand, cache)
    shared = counts_a.index.intersection(counts_b.index)
    if len(shared) == 0:
        raise CompareError(
            f"{cand.run.name}: {cand.label} and {base.run.name}: {base.label} share no owners; "
            "compare runs of the same dataset"
        )
    present = [s for s in specs if all(c in counts_a and c in counts_b for c in s.sources)]
    if not present:
        return []
    a, b = counts_a.loc[shared], counts_b.loc[shared]
    num_cols = [s.sources[0] for s in present]
    den_cols = [s.sources[1] for s in present]
    arrays = [f[c].to_numpy(dtype=float) for f in (a, b) for c in (num_cols, den_cols)]
    empty = np.array([s.empty for s in present])
    test = paired_ratio_test(
        (arrays[0], arrays[1]), (arrays[2], arrays[3]), empty=empty, options=options
    )
    per_owner = ratio(arrays[2], arrays[3], empty) - ratio(arrays[0], arrays[1], empty)
    rows = []
    for i, spec in enumerate(present):
        sign = 1.0 if spec.higher_is_better else -1.0
        improvement = per_owner[:, i] * sign
        rows.append(
            {
                "baseline_run": base.run.name,
                "baseline_lane": base.label,
                "run": cand.run.name,
                "lane": cand.label,
                "lane_id": cand.lane_id,
                "metric": spec.column,
                "title": spec.title,
                "owners": test.owners,
                "baseline": float(ratio(arrays[0][:, i].sum(), arrays[1][:, i].sum(), spec.empty)),
                "value": float(ratio(arrays[2][:, i].sum(), arrays[3][:, i].sum(), spec.empty)),
                "delta": float(test.delta[i]),
                "delta_lo": float(test.lo[i]),
                "delta_hi": float(test.hi[i]),
                "p_value": float(test.p_value[i]),
                "mde": float(test.mde[i]),
                "owners_better": int((improvement > 0).sum()),
                "owners_worse": int((improvement < 0).sum()),
            }
        )
    return rows


def owner_deltas(baseline: Lane, candidate: Lane, metric: str) -> pd.DataFrame:
    """Per shared owner: the metric under each lane and the delta (candidate - baseline).

    An owner's own rate can be undefined (NaN) where the run-level rate is not, e.g. the
    precision of an owner with no stored facts; the run-level rate pools the counts.
    """
    spec = _pick_metrics([metric])[0]
    cache: dict[int, pd.DataFrame] = {}
    a, b = _lane_counts(baseline, cache), _lane_counts(candidate, cache)
    shared = a.index.intersection(b.index)
    out = pd.DataFrame(index=shared)
    for name, frame in (("baseline", a), ("candidate", b)):
        num, den = (frame.loc[shared, c].to_numpy(dtype=float) for c in spec.sources)
        out[name] = ratio(num, den, spec.empty)
    out["delta"] = out["candidate"] - out["baseline"]
    return out


def _fmt_p(p: float) -> str:
    if math.isnan(p):
        return "p = -"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def describe(row: pd.Series | dict[str, Any], *, holm_p: bool = True) -> str:
    """One comparison row in words: ``+6.2 pts [2.1, 10.4], p = 0.004, significant``."""
    spec = metric_spec(str(row["metric"]))
    delta = float(row["delta"])
    if math.isnan(delta):
        return str(row.get("verdict", "not computable"))
    text = (
        f"{spec.fmt_delta(delta)} "
        f"{spec.fmt_bounds(float(row['delta_lo']), float(row['delta_hi']), points=True)}, "
        f"{_fmt_p(float(row['p_value']))}"
    )
    p_holm = float(row["p_holm"])
    if holm_p and not math.isnan(p_holm) and p_holm != float(row["p_value"]):
        text += f" (Holm {_fmt_p(p_holm).removeprefix('p ').removeprefix('= ')})"
    return text + (", significant" if bool(row["significant"]) else ", not significant")


def describe_mde(row: pd.Series | dict[str, Any]) -> str:
    """The minimum detectable effect of a comparison row, in the metric's unit."""
    spec = metric_spec(str(row["metric"]))
    mde = float(row["mde"])
    if math.isinf(mde):
        return f"none with {int(row['owners'])} owners"
    if math.isnan(mde):
        return "-"
    return spec.fmt_delta(mde).lstrip("+")


def comparison_text(table: pd.DataFrame) -> pd.DataFrame:
    """A :func:`compare` table as display strings, one row per (lane, metric).

    Columns: ``configuration``, ``metric`` (its title), ``baseline``, ``value``,
    ``delta [95% CI], p`` (:func:`describe`), ``verdict``, ``MDE (80% power)`` and
    ``owners better / worse``. The CLI prints it; the reports show it.
    """
    rows = []
    for _, row in table.iterrows():
        spec = metric_spec(str(row["metric"]))
        rows.append(
            {
                "configuration": f"{row['run']}: {row['lane']}",
                "metric": spec.title,
                "baseline": spec.fmt(row["baseline"]),
                "value": spec.fmt(row["value"]),
                "delta [95% CI], p": describe(row),
                "verdict": str(row["verdict"]),
                "MDE (80% power)": describe_mde(row),
                "owners better / worse": f"{row['owners_better']} / {row['owners_worse']}",
            }
        )
    return pd.DataFrame(rows)
