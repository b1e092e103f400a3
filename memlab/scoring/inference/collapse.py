"""The consolidation curve's collapse test: retained against a reference measured in the run.

The questions asked again were chosen because they were answered correctly once, so answer
and judge noise alone pull their retention below 100%. The reference is an *immediate re-ask*:
the same questions asked again of the same memory they were first answered from, with a
sample seed of their own (:func:`memlab.postrun.consolidation.reask_seed`), so it is a fresh
call and its accuracy ``r`` is what re-asking costs when nothing was forgotten.

A question's *slots* are its reference answer and its answers at each later session it was
asked again after (1 right, 0 wrong). At session ``k`` the statistic is the sum, over the
questions asked there, of reference minus answer now (repeated samples of an owner weighted
``1 / samples``, as an owner's samples are averaged everywhere): retained below the reference
makes it large.

**No forgetting** means that a question's slots are exchangeable: the memory still holds the
answer, so the reference and every later re-ask are draws of the same answer and judge noise.
The test permutes the slots at random, one permutation per owner (and sample, and session
the questions were first asked after) moving all of that owner's questions' slots together,
so it keeps each question's difficulty and whatever an owner's answers share at one session,
and needs no assumption on the shape of the noise (an owner-wide sign flip does: with
re-asks right 90% of the time it flagged up to 9.5% of faithful curves). The whole curve is
one family: each session's statistic is standardized by its mean and spread over the
permutations, and the Westfall-Young max-T step-down (Westfall and Young 1993, algorithm 4.1)
takes sessions from the largest down; a session's adjusted p-value is the share of
permutations whose largest statistic over it and the sessions not yet taken reaches its own
(the observed arrangement counted once more, Phipson and Smyth 2010), never below the one
before it. The permutations move all sessions at once, so the max-T uses how the sessions
depend on each other (one reference, the same questions), where Holm over per-session tests
assumes the worst. It is one-sided; when nothing was forgotten anywhere the chance of a false
flag *anywhere on the curve* is at most the level (up to the sampling of 2,000
permutations); the flag uses :data:`FLAG_LEVEL` (4%). Sessions that did forget are not taken
out of the later steps' permutations, which widens the permuted spread; control when only some
sessions forgot is not proven, only measured (``benchmarks/collapse_flag.py``, docs/statistics.md).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from memlab.scoring.inference.stats import StatOptions

__all__ = ["FLAG_LEVEL", "curve_p_values", "max_t_step_down"]

FloatArray = npt.NDArray[np.float64]

FLAG_LEVEL = 0.04
"""The family-wise level of the collapse flag: a curve is flagged where its adjusted
``collapse_p`` is below this. Below the comparisons' 5% on purpose: a test at level ``a`` has
an expected false-flag rate of up to ``a`` per faithful curve, so at 5% the promise "at most 5%
of faithful curves flagged" would hold only on average and be missed by chance in half the
measurements; at 4% it keeps a point of margin while a true collapse is still flagged in
98.3% of simulated curves (4.1% / 4.3% false flags at re-ask accuracy 0.9 / 0.95, 1,000
curves each: ``benchmarks/collapse_flag.py``, docs/statistics.md)."""


def max_t_step_down(observed: npt.ArrayLike, permuted: npt.ArrayLike, exact: bool) -> FloatArray:
    """Westfall-Young max-T step-down adjusted p-values (large statistics are evidence).

    Args:
        observed: The statistics, shape ``(tests,)``.
        permuted: The statistics under each permutation, shape ``(permutations, tests)``.
        exact: ``permuted`` is every permutation (the observed one among them); otherwise a
            random sample, and the observed arrangement counts once more (Phipson and Smyth
            2010).
    """
    t = np.asarray(observed, dtype=float)
    draws = np.asarray(permuted, dtype=float)
    order = np.argsort(-t, kind="stable")
    # Column j: the largest permuted statistic over the j-th largest test and all below it.
    running = np.maximum.accumulate(draws[:, order[::-1]], axis=1)[:, ::-1]
    # Ties with the observed value count as reaching it; the tolerance absorbs rounding.
    sorted_t = t[order]
    reach = (running >= sorted_t - 1e-9 * np.abs(sorted_t) - 1e-12).sum(axis=0)
    extra = 0 if exact else 1
    p = (reach + extra) / (len(draws) + extra)
    out = np.empty(t.shape)
    out[order] = np.minimum(np.maximum.accumulate(p), 1.0)
    return out


def curve_p_values(
    slots: npt.ArrayLike,
    weights: npt.ArrayLike,
    groups: npt.ArrayLike,
    options: StatOptions | None = None,
) -> FloatArray:
    """One lane's curve: adjusted one-sided p-values of "retained below the reference".

    Args:
        slots: One row per question (and sample): column 0 its reference answer, column
            ``j`` its answer at the curve's ``j``-th session (1 right, 0 wrong, NaN not
            asked there).
        weights: Each row's weight (``1 / samples`` of its owner).
        groups: Each row's owner and the session its question was first asked after, as one
            label per row, ``"owner|sample|first asked after"``: a group's slots move together.
        options: Permutations (``resamples``) and seed.

    Returns:
        One p-value per session (``slots`` columns 1..), max-T step-down adjusted over the
        curve; NaN at a session with fewer than two groups asked with a reference (no test,
        not in the family) or with resamples off.
    """
    options = options or StatOptions()
    values = np.asarray(slots, dtype=float)
    referenced = ~np.isnan(values[:, 0])  # no reference: nothing to compare with
    values, labels = values[referenced], np.asarray(groups)[referenced]
    w = np.asarray(weights, dtype=float)[referenced]
    out = np.full(values.shape[1] - 1, math.nan)
    asked = ~np.isnan(values[:, 1:])
    owners = np.array([str(label).rsplit("|", 2)[0] for label in labels])
    tested = np.array([np.unique(owners[asked[:, k]]).size >= 2 for k in range(out.size)])
    if not tested.any() or options.resamples == 0:
        return out
    values = values[:, [True, *tested]]
    rng = np.random.default_rng(options.seed)
    permuted = np.zeros((options.resamples, values.shape[1] - 1))
    for label in dict.fromkeys(labels.tolist()):
        rows = labels == label
        permuted += _group_draws(values[rows], w[rows], rng, options.resamples)
    observed = _statistic(values, w)
    mean, spread = permuted.mean(axis=0), permuted.std(axis=0)
    spread[spread == 0] = np.inf  # no permutation changes it: never significant
    out[tested] = max_t_step_down(
        (observed - mean) / spread, (permuted - mean) / spread, exact=False
    )
    return out


def _statistic(slots: FloatArray, weights: FloatArray) -> FloatArray:
    """Per session: the weighted sum of reference minus answer over the rows asked there."""
    return np.nan_to_num(slots[:, :1] - slots[:, 1:]).T @ weights


def _group_draws(
    slots: FloatArray, weights: FloatArray, rng: np.random.Generator, draws: int
) -> FloatArray:
    """One group's contribution to the statistic under ``draws`` random permutations of its
    slots (the reference and the sessions any of its questions was asked at, moved together
    for all its rows), shape ``(draws, sessions)``."""
    used = np.flatnonzero(~np.isnan(slots).all(axis=0))
    order = used[np.argsort(rng.random((draws, used.size)), axis=1)]
    moved = np.full((draws, *slots.shape), np.nan)
    moved[:, :, used] = slots[:, order].transpose(1, 0, 2)
    diff = np.nan_to_num(moved[:, :, :1] - moved[:, :, 1:])
    out: FloatArray = np.einsum("drk,r->dk", diff, weights)
    return out
