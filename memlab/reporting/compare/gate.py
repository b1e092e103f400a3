"""A CI gate over a run: thresholds on headline metrics, and no significant regressions.

Thresholds are named after the metric specs (:data:`memlab.scoring.metric_specs.METRIC_SPECS`):
``max_parse_failure``, ``min_recall``, ... and every configuration of the run must meet them,
on the metric's value or, with ``use_bound``, on the pessimistic end of its 95% interval.
Against a baseline run, :func:`check_regressions` fails a metric only when the paired test
finds it significantly worse: the metrics checked are the comparison's primary family
(Holm's step-down over them and every lane, :mod:`memlab.scoring.comparing.comparison`); by default
the run's primary metrics (its grid's ``primary:``, else those the specs declare). A comparison that
cannot say whether the candidate regressed (:mod:`memlab.scoring.comparing.inconclusive`: the
backend ignores the prompts compared, too few owners for the tolerance, unreadable judge verdicts,
replies failing to parse on both sides, a primary metric not comparable) fails too, one
:class:`Inconclusive` per reason, unless the caller allows inconclusive comparisons.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from memlab.errors import MemlabError
from memlab.runs.run import Run
from memlab.scoring.comparing.comparison import compare, describe
from memlab.scoring.comparing.inconclusive import (
    Reason,
    Undetectable,
    inconclusive_reasons,
    undetectable,
)
from memlab.scoring.inference.coverage import too_few_text
from memlab.scoring.inference.estimators import estimator
from memlab.scoring.inference.stats import StatOptions, bootstrap
from memlab.scoring.metric_model import MetricSpec
from memlab.scoring.metric_specs import gate_specs, metric_spec, primary_metrics

__all__ = [
    "DEFAULT_TOLERANCE",
    "GateFailure",
    "Inconclusive",
    "Regression",
    "ThresholdError",
    "Thresholds",
    "Undetectable",
    "check_gate",
    "check_regressions",
    "tolerances_for",
]


class ThresholdError(MemlabError, ValueError):
    """A gate threshold that is unknown, not a finite number, or outside the metric's range."""


def _checked(name: str, spec: MetricSpec, value: Any) -> float:
    flag = spec.flag or name
    low, high = spec.valid
    span = f"from {low:g} to {high:g}" if math.isfinite(high) else f"of at least {low:g}"
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    shown = f"{value:g}" if isinstance(value, float) else repr(value)
    if isinstance(value, bool) or not math.isfinite(number):
        raise ThresholdError(f"{flag} {shown}: not a finite number; give a number {span}")
    if not low <= number <= high:
        raise ThresholdError(f"{flag} {shown}: out of range; give a number {span}")
    return number


class Thresholds:
    """Limits a run must meet, by name (``Thresholds(max_parse_failure=0.05)``).

    A limit left out or ``None`` is not checked. Names and ranges come from the metric specs
    (:func:`memlab.scoring.metric_specs.gate_specs`); an unknown name, NaN, infinity or a value
    outside the metric's range (a rate above 1, a negative count) raises
    :class:`ThresholdError`.
    """

    def __init__(self, **limits: float | None) -> None:
        specs = gate_specs()
        checked: dict[str, float] = {}
        for name, value in limits.items():
            if name not in specs:
                known = ", ".join(specs)
                raise ThresholdError(f"unknown threshold {name!r}; known thresholds: {known}")
            if value is not None:
                checked[name] = _checked(name, specs[name], value)
        self.limits: dict[str, float] = checked
        """The limits that are set, by threshold name."""

    def __getattr__(self, name: str) -> float | None:
        # Reading an unset known threshold (thresholds.min_recall) gives None.
        if name in gate_specs():
            limits: dict[str, float] = self.__dict__.get("limits", {})
            return limits.get(name)
        raise AttributeError(name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Thresholds) and other.limits == self.limits

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.limits.items())))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.limits.items())
        return f"Thresholds({inner})"


@dataclass(frozen=True)
class GateFailure:
    """One missed threshold for one configuration."""

    lane: str
    metric: str
    value: float
    limit: float
    bound: str  # "max" or "min"
    threshold: str = ""
    """The threshold that was missed (e.g. ``max_parse_failure``)."""
    detail: str = ""
    """Why the value is missing, when the run did not measure the metric."""
    checked: str = ""
    """What was compared with the limit when not the value: ``95% upper bound`` etc."""
    estimate: float = math.nan
    """The metric's value when ``checked`` is an interval bound."""

    def __str__(self) -> str:
        op = "<=" if self.bound == "max" else ">="
        shown = "NaN (not computable)" if math.isnan(self.value) else f"{self.value:.4g}"
        if self.detail:
            shown = self.detail
        metric = self.metric
        if self.checked:
            metric = f"{self.metric} {self.checked}"
            if not math.isnan(self.estimate):
                shown += f" (value {self.estimate:.4g})"
        flag = f" [--{self.threshold.replace('_', '-')}]" if self.threshold else ""
        return f"{self.lane}: {metric} = {shown}, required {op} {self.limit:g}{flag}"


@dataclass(frozen=True)
class Regression:
    """A metric significantly worse than the baseline's (or not comparable at all)."""

    lane: str
    metric: str
    baseline: str
    text: str
    """The comparison in words: delta, interval, p-values."""

    def __str__(self) -> str:
        if self.text == "not computable":
            what = f"not computable (the baseline {self.baseline} has a value)"
        else:
            what = f"significantly worse than {self.baseline}: {self.text}"
        return f"{self.lane}: {self.metric} {what} [--no-significant-regression]"


@dataclass(frozen=True)
class Inconclusive:
    """A reason the comparison with the baseline cannot say whether the candidate regressed
    (:mod:`memlab.scoring.comparing.inconclusive`): the gate fails on it unless inconclusive
    comparisons
    are allowed."""

    reason: Reason

    @property
    def lane(self) -> str:
        """The candidate lane concerned ("" for the whole comparison)."""
        return self.reason.lane

    @property
    def metric(self) -> str:
        """The metrics concerned, comma-separated ("" for the whole comparison)."""
        return ", ".join(self.reason.metrics)

    def __str__(self) -> str:
        return f"inconclusive: {self.reason.text} [--allow-inconclusive]"


DEFAULT_TOLERANCE = 0.05
"""The regression ``gate --no-significant-regression`` must be able to detect, by default:
5 percentage points of a rate."""


_STATED_BY_FAILURES = frozenset(
    {"no test possible", "no spread", "too few owners", "not comparable"}
)
"""Kinds of reason a failure on each metric it concerns already states (an
:class:`Undetectable` says why too few owners; a "not computable" regression says which side
has no value). Any other reason, unreadable judge verdicts above all, is said even when every
metric it concerns failed: "significantly worse" does not say the judge could not be read."""


def tolerances_for(
    tolerance: float | Mapping[str, float] | None, family: Sequence[str]
) -> dict[str, float]:
    """The tolerance of each metric of ``family``: one size in points for every rate (a count
    such as ``stale_rmst`` needs its own), or ``{metric: size}`` in each metric's unit.

    Raises:
        ThresholdError: A metric outside ``family``, or a size that is not positive.
    """
    if tolerance is None:
        return {}
    if isinstance(tolerance, Mapping):
        unknown = [name for name in tolerance if name not in family]
        if unknown:
            raise ThresholdError(
                f"--tolerance {unknown[0]}: not a metric the gate checks ({', '.join(family)})"
            )
        chosen = dict(tolerance)
    else:  # one size in points: the rates' (a count such as stale_rmst needs its own)
        chosen = {name: tolerance for name in family if metric_spec(name).unit == "percent"}
    for name, value in chosen.items():
        if isinstance(value, bool) or not (math.isfinite(float(value)) and value > 0):
            raise ThresholdError(f"--tolerance {name}={value!r}: give a positive number")
    return {name: float(value) for name, value in chosen.items()}


def _absent(spec: MetricSpec) -> str:
    """Why a run lacks a metric: how to measure it, for metrics only some runs have."""
    return spec.requires or "not in the run summary"


def check_gate(run: Run, thresholds: Thresholds, *, use_bound: bool = False) -> list[GateFailure]:
    """Return every missed threshold (empty when the run passes).

    A metric that cannot be computed (NaN: no replies, no labeled facts) misses any
    threshold set on it, so an empty run never passes a gate by accident. With
    ``use_bound``, a rate with an interval must meet the limit with its pessimistic bound
    (the upper end for a ``max_`` limit, the lower end for a ``min_`` limit); a missing
    interval misses: on fewer owners than its method's coverage was measured on
    (:mod:`memlab.scoring.inference.coverage`) the failure says ``too few owners for an interval (n
    = 2)``.
    """
    failures: list[GateFailure] = []
    summary = run.summary
    specs = gate_specs()
    for lane_id, row in summary.iterrows():
        label = run.label(str(lane_id))
        for name, limit in thresholds.limits.items():
            spec = specs[name]
            failure = _check_one(label, row, summary.columns, spec, limit, use_bound)
            if failure is not None and failure.checked and not math.isnan(failure.estimate):
                failure = _without_interval(run, str(lane_id), spec, failure)
            if failure is not None:
                failures.append(failure)
    return failures


def _without_interval(
    run: Run, lane_id: str, spec: MetricSpec, failure: GateFailure
) -> GateFailure:
    """A bound that is missing because its interval's coverage was not measured on so few
    owners (:mod:`memlab.scoring.inference.coverage`) is refused as such: ``too few owners for an
    interval (n = 2)``."""
    if not math.isnan(failure.value):
        return failure
    counts = run.owner_counts
    mine = counts[counts.index.get_level_values("lane_id") == lane_id].droplevel("lane_id")
    found = bootstrap(estimator(spec, mine), StatOptions(resamples=0))
    if found.method != "too few owners":
        return failure
    return replace(failure, detail=too_few_text(found.owners))


def _check_one(
    label: str,
    row: pd.Series,
    columns: pd.Index,
    spec: MetricSpec,
    limit: float,
    use_bound: bool,
) -> GateFailure | None:
    name = spec.threshold or ""
    if spec.column not in columns:
        return GateFailure(label, spec.column, math.nan, limit, spec.bound, name, _absent(spec))
    value = float(row[spec.column])
    checked, estimate = "", math.nan
    if use_bound and spec.interval:
        end = "hi" if spec.bound == "max" else "lo"
        checked = f"95% {'upper' if end == 'hi' else 'lower'} bound"
        value, estimate = float(row[f"{spec.column}_{end}"]), value
    missed = (
        math.isnan(value)
        or (spec.bound == "max" and value > limit)
        or (spec.bound == "min" and value < limit)
    )
    if not missed:
        return None
    return GateFailure(
        label, spec.column, value, limit, spec.bound, name, checked=checked, estimate=estimate
    )


def check_regressions(
    candidate: Run,
    baseline: Run,
    metrics: Sequence[str] | None = None,
    *,
    baseline_lane: str | None = None,
    options: StatOptions | None = None,
    tolerance: float | Mapping[str, float] | None = None,
    allow_mixed: bool = False,
) -> tuple[list[Regression | Undetectable | Inconclusive], pd.DataFrame]:
    """Metrics significantly worse in ``candidate`` than in ``baseline`` (paired on owners).

    ``metrics`` are the family tested (default: ``candidate.primary``, else the specs'
    primary metrics). Returns the regressions and the full comparison (one row per lane and
    metric, see :func:`memlab.scoring.comparing.comparison.compare`). A metric that cannot be
    compared (NaN, e.g. no labeled facts) counts as a regression: a gate never passes on a missing
    number. With ``tolerance`` (a regression size in the metric's unit, for every metric or by
    metric), a metric whose minimum detectable effect is larger is an
    :class:`Undetectable` failure: "no significant regression" means nothing when a
    regression that size could not have been seen. Every other reason the comparison is
    inconclusive (:func:`memlab.scoring.comparing.inconclusive.inconclusive_reasons`) is an
    :class:`Inconclusive` failure; undetectable and inconclusive ones are what
    ``gate --allow-inconclusive`` turns into warnings. ``allow_mixed`` as for
    :func:`~memlab.scoring.comparing.comparison.compare`.
    """
    try:
        family = list(primary_metrics(metrics if metrics is not None else candidate.primary))
    except KeyError as exc:
        raise ThresholdError(str(exc.args[0])) from None
    tolerances = tolerances_for(tolerance, family)
    table = compare(
        baseline,
        candidate,
        baseline_lane=baseline_lane,
        metrics=family,
        primary=family,
        options=options,
        allow_mixed=allow_mixed,
    )
    found: list[Regression | Undetectable | Inconclusive] = []
    for _, row in table.iterrows():
        base = f"{row['baseline_run']} ({row['baseline_lane']})"
        if row["verdict"] in ("worse", "not computable"):
            found.append(Regression(str(row["lane"]), str(row["metric"]), base, describe(row)))
    power = (options or baseline.stats).power
    found += undetectable(table, tolerances, power=power)
    failed = {(f.lane, f.metric) for f in found}
    for reason in inconclusive_reasons(table, tolerances=tolerances, power=power):
        stated = reason.kind in _STATED_BY_FAILURES
        if stated and reason.metrics and all((reason.lane, m) in failed for m in reason.metrics):
            continue  # a regression or an undetectable regression already names it
        found.append(Inconclusive(reason))
    return found, table
