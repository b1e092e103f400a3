"""Stale-fact survival: time to removal of a retracted fact, censored at the data's end.

An *episode* starts when a session retracts a gold fact that memory holds at the session's
start (:mod:`memlab.scoring.operations`). Its time ``T`` is the number of consecutive session
ends, from the retracting one on, that still hold the fact: ``T = 0`` when the retracting
session's update removed it. When the owner's last session ends with the fact still held, the
episode is *censored*: all we know is ``T >= c``, ``c`` the session ends seen. Averaging the
seen times as if they were complete (what a plain mean does) understates survival exactly for
the models that never remove anything, which run out of sessions.

Survival is therefore the Kaplan-Meier estimate ``S(t) = P(T > t)`` from per-time counts:
``d_t`` episodes removed at ``t`` and ``r_t`` episodes at risk at ``t`` (removed at ``t`` or
later, or censored after ``t``): ``S(t) = prod_{u <= t} (1 - d_u / r_u)``. The headline number
is the restricted mean survival time ``RMST(tau) = E[min(T, tau)] = sum_{t < tau} S(t)``: the
session ends a stale fact survives, counted over the first ``tau`` of them
(:data:`memlab.scoring.count_specs.STALE_HORIZON`). It stays defined under censoring, and its
interval comes from the owner bootstrap like every other metric (the counts are summed over
resampled owners, so episodes of one owner move together).

:func:`kaplan_meier` gives the curve of a set of episodes through ``scipy.stats.ecdf``
(Kaplan-Meier for right-censored data); :func:`rmst_from_counts` is the same product-limit
estimate computed from summed counts for thousands of resamples at once, and the tests check
that both agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "Episode",
    "episode_counts",
    "kaplan_meier",
    "rmst_from_counts",
    "survival_from_counts",
]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Episode:
    """One retracted fact held when its session started.

    Attributes:
        sessions: Session ends, from the retracting one on, that still held it.
        censored: True when the data ended with the fact still held (``T >= sessions``).
    """

    sessions: int
    censored: bool

    @classmethod
    def from_detail(cls, detail: Mapping[str, Any]) -> Episode:
        """An episode of a session row's ``stale_detail``."""
        return cls(int(detail.get("sessions", 0)), bool(detail.get("censored", False)))


def episode_counts(episodes: Iterable[Episode], horizon: int) -> tuple[list[int], list[int]]:
    """``(removed_t, at_risk_t)`` for ``t < horizon``: episodes removed at ``t``, and episodes
    still at risk at ``t`` (time at least ``t`` when removed; censored after ``t``)."""
    removed, at_risk = [0] * horizon, [0] * horizon
    for episode in episodes:
        for t in range(horizon):
            if episode.censored:
                at_risk[t] += int(episode.sessions > t)
            else:
                at_risk[t] += int(episode.sessions >= t)
                removed[t] += int(episode.sessions == t)
    return removed, at_risk


def survival_from_counts(removed: npt.ArrayLike, at_risk: npt.ArrayLike) -> FloatArray:
    """Kaplan-Meier ``S(t)`` for ``t < horizon`` from counts of shape ``(draws, horizon)``.

    A time with nobody at risk removes nobody (the curve stays flat past the data); with no
    episode at all the survival is undefined (NaN).
    """
    d = np.atleast_2d(np.asarray(removed, dtype=float))
    r = np.atleast_2d(np.asarray(at_risk, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        hazard = np.where(r > 0, d / r, 0.0)
    hazard = np.where(np.isnan(d) | np.isnan(r), np.nan, hazard)
    curve = np.cumprod(1.0 - hazard, axis=1)
    return np.where((r[:, :1] > 0) | np.isnan(r[:, :1]), curve, np.nan)


def rmst_from_counts(removed: npt.ArrayLike, at_risk: npt.ArrayLike) -> FloatArray:
    """Restricted mean survival time ``sum_{t < horizon} S(t)`` per row of counts."""
    return np.asarray(survival_from_counts(removed, at_risk).sum(axis=1), dtype=float)


def kaplan_meier(episodes: Sequence[Episode], horizon: int) -> FloatArray:
    """``S(t)`` for ``t < horizon`` of the episodes by ``scipy.stats.ecdf`` (NaN: none).

    An episode censored at ``c`` session ends is known to survive ``c - 1``; scipy keeps a
    right-censored observation at risk at its own time, so it is passed as censored at
    ``c - 1``.
    """
    if not episodes:
        return np.full(horizon, np.nan)
    from scipy import stats  # scipy.stats takes a second to import: only when drawn

    events = [e.sessions for e in episodes if not e.censored]
    censored = [e.sessions - 1 for e in episodes if e.censored]
    if not events:  # nothing removed: scipy needs one event; survival is 1 throughout
        return np.ones(horizon)
    data = stats.CensoredData(uncensored=events, right=censored)
    curve = stats.ecdf(data).sf.evaluate(np.arange(horizon))
    return np.asarray(curve, dtype=float)
