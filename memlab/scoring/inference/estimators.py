"""The estimator of each metric with an interval, from its spec and per-owner counts.

One place decides how a :class:`~memlab.scoring.metric_model.MetricSpec` becomes a statistic
of sums over owners (:class:`~memlab.scoring.inference.stats.Estimator`), for the run summary and
for comparisons alike:

- a micro rate: ``sum(numerator) / sum(denominator)``;
- a macro rate: each owner's own ratio, averaged over the owners whose denominator is not 0
  (the ratio of ``sum(owner ratio)`` to ``sum(1 for owners with a denominator)``);
- a survival: the restricted mean survival time from the summed Kaplan-Meier counts
  (:mod:`memlab.scoring.inference.survival`).

A missing count (NaN) in any owner makes the metric NaN, and says so in the log, naming the
owners: a number is never silently computed from fewer owners than the run has.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd

from memlab.scoring.inference.stats import Estimator, FloatArray, ratio, ratio_estimator
from memlab.scoring.inference.survival import rmst_from_counts
from memlab.scoring.metric_model import MetricSpec

__all__ = ["estimator", "missing_owners"]

logger = logging.getLogger(__name__)


def missing_owners(spec: MetricSpec, counts: pd.DataFrame) -> list[str]:
    """Owners (index values) with a NaN in any count the metric is computed from."""
    values = counts[list(spec.sources)].to_numpy(dtype=float)
    bad = np.isnan(values).any(axis=1)
    return [str(owner) for owner in counts.index[bad]]


def estimator(spec: MetricSpec, counts: pd.DataFrame, *, where: str = "") -> Estimator:
    """The estimator of ``spec`` over the owners (rows) of ``counts``.

    Args:
        spec: A metric with a ratio or a survival.
        counts: Per-owner counts (:func:`memlab.scoring.metrics.owner_counts`, one lane).
        where: What the counts belong to (``run: lane``), for the log.
    """
    missing = missing_owners(spec, counts)
    if missing:
        logger.warning(
            "%s%s: owners %s have no value (NaN) for %s: the metric is NaN",
            f"{where}: " if where else "",
            spec.column,
            ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else ""),
            "/".join(spec.sources) if len(spec.sources) <= 2 else "its counts",
        )
    if spec.survival is not None:
        return _survival(spec, counts)
    if spec.ratio is None:
        raise ValueError(f"metric {spec.column}: no estimator without a ratio or a survival")
    num, den = (counts[c].to_numpy(dtype=float) for c in spec.ratio)
    if spec.average == "macro":
        has = den != 0
        own = np.where(has, ratio(num, den), 0.0)
        own = np.where(np.isnan(num) | np.isnan(den), math.nan, own)
        one = np.where(np.isnan(den), math.nan, has.astype(float))
        return ratio_estimator(own, one, spec.empty)
    return ratio_estimator(num, den, spec.empty)


def _survival(spec: MetricSpec, counts: pd.DataFrame) -> Estimator:
    assert spec.survival is not None
    horizon = spec.survival[2]
    columns = counts[list(spec.sources)].to_numpy(dtype=float)

    def statistic(sums: FloatArray) -> FloatArray:
        return rmst_from_counts(sums[:, :horizon], sums[:, horizon:])

    at_risk_first = columns[:, horizon]
    relevant = (at_risk_first != 0) | np.isnan(columns).any(axis=1)
    return Estimator(columns, statistic, relevant)
