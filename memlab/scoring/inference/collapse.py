"""The consolidation curve's collapse test: retained against a reference measured in the run.

The questions asked again were chosen because they were answered correctly once, so answer
and judge noise alone pull their retention below 100%. The reference is an *immediate re-ask*:
the same questions asked again of the same memory they were first answered from, with a
sample seed of their own (:func:`memlab.postrun.consolidation.reask_seed`), so it is a fresh
call and its accuracy ``r`` is what re-asking costs when nothing was forgotten.

At each later session the questions asked again are compared, owner by owner, with their own
reference answers: per owner the paired columns ``(reference correct, asked)`` and
``(correct now, asked)``, tested with :func:`memlab.scoring.inference.stats.paired` (owner-clustered
sign-flip test and bootstrap, repeated samples of an owner averaged first). The one-sided
p-value of "retained below the reference" is half the two-sided one when retained is below it,
else 1. Over a lane's curve the sessions' p-values are Holm-adjusted (:func:`holm`), so the
chance of a false flag *anywhere on the curve* is at most ``alpha`` (0.05), not per session.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from memlab.scoring.inference.stats import StatOptions, holm, paired, ratio_estimator

__all__ = ["curve_p_values", "retention_p"]


def retention_p(
    reference: npt.ArrayLike,
    correct: npt.ArrayLike,
    asked: npt.ArrayLike,
    options: StatOptions | None = None,
) -> float:
    """One-sided owner-clustered p-value that the re-asked questions are answered correctly
    less often now than in their reference re-ask (rows are owners; ``asked``: the questions
    with a reference). NaN with fewer than two owners; 1 when retained is not below."""
    asked_v = np.asarray(asked, dtype=float)
    if int((asked_v > 0).sum()) < 2:
        return math.nan
    base = ratio_estimator(reference, asked_v)
    now = ratio_estimator(correct, asked_v)
    test = paired(base, now, options)
    if math.isnan(test.p_value):
        return math.nan
    if not test.changed or not test.delta < 0:
        return 1.0
    return min(1.0, test.p_value / 2)


def curve_p_values(p_values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Holm-adjusted p-values over one lane's curve (NaN: a session without a test)."""
    return holm(p_values)
