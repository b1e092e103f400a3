"""Paired comparisons of configurations on the owners they share.

Two lanes replayed over the same owners are compared owner by owner: for each rate of
:func:`~memlab.scoring.metric_specs.interval_specs` the delta (candidate - baseline), its
paired bootstrap interval, a p-value, and the minimum detectable effect
(:mod:`memlab.scoring.inference.stats`). Owners only one side has are left out, and so are owners
that cannot change a rate (no gold facts for recall).

What is tested is declared: the *primary* metrics (``primary=True`` in the spec, or the
grid's ``primary: [...]``) form the Holm family over every lane compared in one call. Rows
whose owners have the same counts on both sides are "no change" and are no test. Each primary
row's verdict, its interval and its MDE all use the level of the Holm step that decided it
(:func:`~memlab.scoring.inference.paired_tests.holm_steps`), so a significant delta's interval
excludes 0 and any other's includes it. Secondary rows show their interval at the run's level
(95%) and are labelled exploratory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from memlab.errors import MemlabError
from memlab.scoring.comparing.comparability import LaneFacts, check_pairs, kind_baselines
from memlab.scoring.comparing.inconclusive import SIDE_RATES, ComparedPair
from memlab.scoring.inference.coverage import MIN_OWNERS, paired_method, too_few_text
from memlab.scoring.inference.estimators import estimator
from memlab.scoring.inference.paired_tests import Paired, holm, holm_steps, paired
from memlab.scoring.inference.stats import StatOptions
from memlab.scoring.metric_model import MetricSpec
from memlab.scoring.metric_specs import interval_specs, metric_spec, primary_metrics

__all__ = [
    "COMPARE_COLUMNS",
    "CompareError",
    "Lane",
    "ScoredRun",
    "compare",
    "compare_lanes",
    "comparison_text",
    "delta_bounds",
    "describe",
    "describe_mde",
    "owner_deltas",
    "pairs_by_kind",
]


class ScoredRun(Protocol):
    """What scoring reads of a run; a sweep's :class:`~memlab.runs.run.Run` is one."""

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
    def owner_counts(self) -> pd.DataFrame:
        """Per-owner counts of every lane (:func:`memlab.scoring.metrics.owner_counts`; with a
        ``sample`` column, averaged over each owner's samples)."""
        ...

    @property
    def stats(self) -> StatOptions:
        """Resamples, seed and levels of intervals and comparisons."""
        ...

    @property
    def primary(self) -> tuple[str, ...] | None:
        """The run's primary metrics (``None``: those the specs declare)."""
        ...

    def label(self, lane_id: str) -> str:
        """A short label of a lane."""
        ...

    def lane_facts(self, lane_id: str) -> LaneFacts:
        """What comparisons check of a lane (:mod:`memlab.scoring.comparing.comparability`)."""
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

    @property
    def facts(self) -> LaneFacts:
        """What comparisons check of the lane (:mod:`memlab.scoring.comparing.comparability`)."""
        return self.run.lane_facts(self.lane_id)


COMPARE_COLUMNS: tuple[str, ...] = (
    "baseline_run",
    "baseline_lane",
    "run",
    "lane",
    "lane_id",
    "metric",
    "title",
    "role",
    "owners",
    "baseline",
    "value",
    "delta",
    "delta_lo",
    "delta_hi",
    "level",
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
    primary: Sequence[str] | None = None,
    options: StatOptions | None = None,
    allow_mixed: bool = False,
) -> pd.DataFrame:
    """Compare run B's lanes with run A's (or run A's lanes with one of its own).

    Args:
        run_a: The baseline run.
        run_b: The candidate run; ``None`` compares every other lane of ``run_a`` with its
            baseline lane.
        baseline_lane: Lane id or label in ``run_a`` to compare against. Default: with one
            run, the first lane of the same kind (simulated lanes against the first simulated
            lane, real ones against the first real one); with two, the first lane when
            ``run_a`` has one lane, else the lane of ``run_a`` with the same label.
        metrics: Rate columns to compare (default: every rate with an interval).
        primary: The Holm family's metrics (default: ``run_a.primary``, else the specs').
        options: Resamples, seed, level, alpha and power (default: ``run_a.stats``).
        allow_mixed: Compare lanes measured differently (see :func:`compare_lanes`).

    Returns:
        One row per (lane, metric) with the columns :data:`COMPARE_COLUMNS`; ``delta`` is
        candidate minus baseline; see :func:`compare_lanes` for the verdicts.
    """
    if run_b is None and baseline_lane is None:
        pairs = _pair_by_kind(run_a)
    elif run_b is None:
        base = Lane(run_a, _find_lane(run_a, baseline_lane or ""))
        pairs = [(base, Lane(run_a, lid)) for lid in run_a.lanes if lid != base.lane_id]
    else:
        pairs = _pair_runs(run_a, run_b, baseline_lane)
    chosen = primary if primary is not None else run_a.primary
    return compare_lanes(
        pairs,
        metrics=metrics,
        primary=chosen,
        options=options or run_a.stats,
        allow_mixed=allow_mixed,
    )


def pairs_by_kind(lanes: Sequence[Lane]) -> list[tuple[Lane, Lane]]:
    """Each lane but the first of its kind paired with the first lane of its kind: simulated
    lanes with the first simulated lane, real ones with the first real one (a simulated lane
    is never ranked against a real model). Tables that rank lanes split the same way."""
    pairs = kind_baselines(lanes, lambda lane: lane.facts)
    return [(baseline, lane) for baseline, lane in pairs if baseline is not lane]


def _pair_by_kind(run: ScoredRun) -> list[tuple[Lane, Lane]]:
    return pairs_by_kind([Lane(run, lane_id) for lane_id in run.lanes])


def _find_lane(run: ScoredRun, wanted: str) -> str:
    for lane_id in run.lanes:
        if wanted in (lane_id, run.label(lane_id)):
            return lane_id
    known = ", ".join(run.label(lid) for lid in run.lanes) or "none"
    raise CompareError(f"run {run.name}: no lane {wanted!r}; lanes: {known}")


def _pair_runs(
    run_a: ScoredRun, run_b: ScoredRun, baseline_lane: str | None
) -> list[tuple[Lane, Lane]]:
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
        cache[id(run)] = run.owner_counts
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
    primary: Sequence[str] | None = None,
    options: StatOptions | None = None,
    allow_mixed: bool = False,
) -> pd.DataFrame:
    """Compare each ``(baseline, candidate)`` pair; the Holm family spans every pair.

    Pairs measured differently (another dataset, owner set, matcher or judge, a simulated
    lane against a real one, or memory QA answered, judged or keyed differently:
    :func:`memlab.scoring.comparing.comparability.check_pairs`)
    raise :class:`~memlab.scoring.comparing.comparability.MixedComparisonError`; with
    ``allow_mixed`` they are compared and ``table.attrs["banners"]`` says what was mixed.

    ``primary`` names the family's metrics (default: those the specs declare primary); the
    other rows are secondary. Verdicts:

    - ``better`` / ``worse``: a primary delta Holm's step-down rejects; ``no significant
      difference``: a primary delta it does not;
    - ``better (exploratory)`` / ``worse (exploratory)`` / ``no clear difference
      (exploratory)``: a secondary delta whose interval at the run's level excludes 0 or not;
    - ``no change``: every owner has the same counts on both sides (not a test);
    - ``not applicable`` when the rate is undefined on both sides (no retracted facts in the
      data), ``not computable`` when only the candidate's is (it stored nothing to measure
      precision on), ``not comparable`` when only the baseline's is.

    ``delta_lo``/``delta_hi`` are the interval at ``level`` (the Holm step's level for a
    primary row, the run's level otherwise), ``mde`` the minimum detectable effect at the same
    level, ``p_holm`` the Holm-adjusted p-value of a primary row.

    ``table.attrs["pairs"]`` holds each pair as compared
    (:class:`~memlab.scoring.comparing.inconclusive.ComparedPair`), from which
    :func:`memlab.scoring.comparing.inconclusive.inconclusive_reasons` says why the comparison
    cannot answer, when it cannot.
    """
    options = options or StatOptions()
    banners = check_pairs(
        [(base.facts, cand.facts) for base, cand in pairs], allow_mixed=allow_mixed
    )
    specs = _pick_metrics(metrics)
    try:
        family = set(primary_metrics(primary))
    except KeyError as exc:
        raise CompareError(str(exc.args[0])) from None
    cache: dict[int, pd.DataFrame] = {}
    rows: list[dict[str, Any]] = []
    tests: list[Paired | None] = []
    compared: list[ComparedPair] = []
    for base, cand in pairs:
        found, pair = _compare_pair(base, cand, specs, options, cache)
        compared.append(pair)
        for row, test in found:
            row["role"] = "primary" if row["metric"] in family else "secondary"
            rows.append(row)
            tests.append(test)
    table = pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))
    table.attrs["banners"] = banners
    table.attrs["pairs"] = compared
    if table.empty:
        return table
    _decide(table, tests, options)
    return table


def _is_test(row: pd.Series, test: Paired | None) -> bool:
    """A primary row that can be tested: defined on both sides, changed, and on enough owners
    for any delta's interval (no verdict of a difference is drawn on fewer: :func:`_enough`)."""
    return (
        test is not None
        and row["role"] == "primary"
        and test.changed
        and not math.isnan(test.p_value)
        and _enough(test)
    )


def _enough(test: Paired) -> bool:
    """At least the owners from which a delta's interval is printed at all
    (``MIN_OWNERS["paired"]``). A rate near 0 or 1 needs more for its interval
    (:func:`memlab.scoring.inference.coverage.paired_method`) but not for its test: the
    sign-flip test is exact, and a regression gate must still see a parse failure rate that
    rose on 10 owners."""
    return test.owners >= MIN_OWNERS["paired"]


def _decide(table: pd.DataFrame, tests: Sequence[Paired | None], options: StatOptions) -> None:
    """Fill p-values, levels, intervals, MDEs, significance and verdicts (in place)."""
    rows = [row for _, row in table.iterrows()]
    in_family = [_is_test(row, test) for row, test in zip(rows, tests, strict=True)]
    family_p = np.array(
        [
            test.p_value if test is not None and tested else math.nan
            for test, tested in zip(tests, in_family, strict=True)
        ]
    )
    rejected, levels = holm_steps(family_p, options.alpha)
    table["p_holm"] = holm(family_p)
    secondary_alpha = 1 - options.level
    for i, test in enumerate(tests):
        alpha = float(levels[i]) if in_family[i] else secondary_alpha
        lo, hi, mde, p_value = math.nan, math.nan, math.nan, math.nan
        if test is not None:
            mde = test.mde(alpha, options.power)
        if test is not None and test.changed:  # "no change" is no test: no p, no interval
            lo, hi = test.at(alpha)
            p_value = test.p_value
        table.loc[i, ["delta_lo", "delta_hi", "mde", "p_value", "level"]] = [
            lo,
            hi,
            mde,
            p_value,
            1 - alpha,
        ]
    table["significant"] = rejected
    table["verdict"] = [
        _verdict(metric_spec(str(row["metric"])), row, test, secondary_alpha)
        for (_, row), test in zip(table.iterrows(), tests, strict=True)
    ]


def _verdict(spec: MetricSpec, row: pd.Series, test: Paired | None, alpha: float) -> str:
    """The row's verdict (see :func:`compare_lanes`)."""
    base, value, delta = float(row["baseline"]), float(row["value"]), float(row["delta"])
    if math.isnan(base) and math.isnan(value):
        return "not applicable"
    if math.isnan(value):
        return "not computable"
    if math.isnan(base) or math.isnan(delta):
        return "not comparable"
    if test is not None and not test.changed:
        return "no change"
    direction = "better" if (delta > 0) == spec.higher_is_better else "worse"
    if row["role"] == "primary":
        return direction if bool(row["significant"]) else "no significant difference"
    clear = test is not None and test.p_value < alpha and _enough(test)
    return f"{direction} (exploratory)" if clear else "no clear difference (exploratory)"


def _compare_pair(
    base: Lane,
    cand: Lane,
    specs: Sequence[MetricSpec],
    options: StatOptions,
    cache: dict[int, pd.DataFrame],
) -> tuple[list[tuple[dict[str, Any], Paired | None]], ComparedPair]:
    counts_a, counts_b = _lane_counts(base, cache), _lane_counts(cand, cache)
    shared = counts_a.index.intersection(counts_b.index).sort_values()
    if len(shared) == 0:
        raise CompareError(
            f"{cand.run.name}: {cand.label} and {base.run.name}: {base.label} share no owners; "
            "compare runs of the same dataset"
        )
    present = [s for s in specs if all(c in counts_a and c in counts_b for c in s.sources)]
    # Both sides in the same owner order: the pairing is by owner, never by row position.
    a, b = counts_a.loc[shared], counts_b.loc[shared]
    rows = []
    for spec in present:
        est_a = estimator(spec, a, where=f"{base.run.name}: {base.label}")
        est_b = estimator(spec, b, where=f"{cand.run.name}: {cand.label}")
        value_a, value_b = est_a.value(), est_b.value()
        test = None
        if not (math.isnan(value_a) or math.isnan(value_b)):
            test = paired(est_a, est_b, options)
        improvement = _owner_rates(spec, b) - _owner_rates(spec, a)
        if not spec.higher_is_better:
            improvement = -improvement
        row = {
            "baseline_run": base.run.name,
            "baseline_lane": base.label,
            "run": cand.run.name,
            "lane": cand.label,
            "lane_id": cand.lane_id,
            "metric": spec.column,
            "title": spec.title,
            "owners": test.owners if test is not None else int((est_a.mask() | est_b.mask()).sum()),
            "baseline": value_a,
            "value": value_b,
            "delta": value_b - value_a,
            "owners_better": int((improvement > 0).sum()),
            "owners_worse": int((improvement < 0).sum()),
        }
        rows.append((row, test))
    return rows, ComparedPair(base.facts, cand.facts, len(shared), _side_rates(base, a, cand, b))


def _side_rates(
    base: Lane, a: pd.DataFrame, cand: Lane, b: pd.DataFrame
) -> dict[str, tuple[float, float]]:
    """:data:`~memlab.scoring.comparing.inconclusive.SIDE_RATES` of both sides on the shared
    owners."""
    rates = {}
    for name in SIDE_RATES:
        spec = metric_spec(name)
        if all(c in a and c in b for c in spec.sources):
            rates[name] = (
                estimator(spec, a, where=f"{base.run.name}: {base.label}").value(),
                estimator(spec, b, where=f"{cand.run.name}: {cand.label}").value(),
            )
    return rates


def _owner_rates(spec: MetricSpec, counts: pd.DataFrame) -> np.ndarray:
    """Each owner's own value of the metric (its estimator over that owner alone): the
    statistic of each owner's row, all rows at once, as it takes resampled sums (a mask per
    owner made this quadratic in the owners)."""
    found = estimator(spec, counts)
    if not len(counts):
        return np.array([], dtype=float)
    return np.asarray(found.statistic(found.columns), dtype=float)


def owner_deltas(baseline: Lane, candidate: Lane, metric: str) -> pd.DataFrame:
    """Per shared owner: the metric under each lane and the delta (candidate - baseline).

    An owner's own rate can be undefined (NaN) where the run-level rate is not, e.g. the
    precision of an owner with no stored facts; the run-level rate pools the counts.
    """
    spec = _pick_metrics([metric])[0]
    cache: dict[int, pd.DataFrame] = {}
    a, b = _lane_counts(baseline, cache), _lane_counts(candidate, cache)
    shared = a.index.intersection(b.index).sort_values()
    out = pd.DataFrame(index=shared)
    for name, frame in (("baseline", a), ("candidate", b)):
        out[name] = _owner_rates(spec, frame.loc[shared])
    out["delta"] = out["candidate"] - out["baseline"]
    return out


def _fmt_p(p: float) -> str:
    if math.isnan(p):
        return "p = -"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _fmt_level(level: float) -> str:
    return f"{level * 100:.3g}%"


def describe(row: pd.Series | dict[str, Any], *, holm_p: bool = True) -> str:
    """One comparison row in words: ``+6.2 pts [2.1, 10.4] (98.3% CI), p = 0.004 (Holm 0.012),
    significant``; a secondary row ends with ``exploratory``."""
    spec = metric_spec(str(row["metric"]))
    delta = float(row["delta"])
    verdict = str(row.get("verdict", "not computable"))
    if math.isnan(delta) or verdict == "no change":
        return verdict
    level = float(row.get("level", math.nan))
    text = f"{spec.fmt_delta(delta)} {delta_bounds(row)}"
    if not math.isnan(level) and not delta_bounds(row).startswith("(too few"):
        text += f" ({_fmt_level(level)} CI)"
    text += f", {_fmt_p(float(row['p_value']))}"
    if row.get("role") != "primary":
        return text + ", exploratory"
    p_holm = float(row["p_holm"])
    if holm_p and not math.isnan(p_holm) and _fmt_p(p_holm) != _fmt_p(float(row["p_value"])):
        text += f" (Holm {_fmt_p(p_holm).removeprefix('p ').removeprefix('= ')})"
    return text + (", significant" if bool(row["significant"]) else ", not significant")


def delta_bounds(row: pd.Series | dict[str, Any]) -> str:
    """A comparison row's interval: ``[2.1, 10.4]``, or ``(too few owners for an interval
    (n = 2))`` on fewer owners than the paired interval's coverage was measured on
    (:func:`memlab.scoring.inference.coverage.paired_method`)."""
    spec = metric_spec(str(row["metric"]))
    lo, hi = float(row["delta_lo"]), float(row["delta_hi"])
    owners = float(row.get("owners", math.nan))
    values = (float(row.get("baseline", math.nan)), float(row.get("value", math.nan)))
    if math.isnan(lo) and math.isfinite(owners):
        method = paired_method(owners=int(owners), values=values, rate=spec.unit == "percent")
        if method == "too few owners":
            return f"({too_few_text(int(owners))})"
    return spec.fmt_bounds(lo, hi, points=True)


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

    Columns: ``configuration``, ``metric`` (its title), ``role`` (primary, or secondary:
    exploratory), ``baseline``, ``value``, ``delta [CI], p`` (:func:`describe`: the interval at
    the level the verdict used), ``verdict``, ``MDE (80% power)`` (at the same level) and
    ``owners better / worse``. The CLI prints it; the reports show it.
    """
    rows = []
    for _, row in table.iterrows():
        spec = metric_spec(str(row["metric"]))
        rows.append(
            {
                "configuration": f"{row['run']}: {row['lane']}",
                "metric": spec.title,
                "role": str(row["role"]),
                "baseline": spec.fmt(row["baseline"]),
                "value": spec.fmt(row["value"]),
                "delta [CI], p": describe(row),
                "verdict": str(row["verdict"]),
                "MDE (80% power)": describe_mde(row),
                "owners better / worse": f"{row['owners_better']} / {row['owners_worse']}",
            }
        )
    return pd.DataFrame(rows)
