"""The forgetting rules of the tiered memory, as pure functions of items, vectors and a time.

:class:`~memlab.memory.storage.store.TieredStore` applies them; they read no database, so each rule
can be checked against arithmetic done by hand:

- **decay**: ``importance * (1 - decay_per_day) ** idle_days``, where the idle days run from
  the later of the item's last access and the previous forgetting pass (:func:`idle_days`):
  one pass after ten idle days and ten daily passes give the same importance (up to float
  rounding); times are integer microseconds, the store's unit;
- **delete**: an item whose decayed importance is *below* ``delete_below`` goes (exactly
  ``delete_below`` stays);
- **merge**: a pair whose cosine similarity is *above* ``merge_above`` keeps the longer
  content (equal lengths: the older item) and drops the other; pairs are taken from the most
  similar down, and a pair with an item already dropped is skipped (:func:`merge_plan`);
- **compress**: items *older than* ``compress_after_days`` (exactly that age is not) are
  candidates once there are at least ``compress_min`` of them (:func:`compression_candidates`);
  the store replaces them with one summary an LLM wrote.

Cosines are computed in float64 from the stored vectors as they are (not renormalised), so a
pair built to sit exactly on the threshold is compared exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from memlab.memory.storage.items import ForgettingRules, MemoryItem

__all__ = [
    "DAY",
    "DAY_US",
    "MergeStep",
    "compression_candidates",
    "decayed_importance",
    "idle_days",
    "merge_plan",
]

DAY = timedelta(days=1)


DAY_US = 86_400_000_000
"""Microseconds in a day (the store keeps times as integer microseconds)."""


def idle_days(last_accessed_us: np.ndarray, decayed_us: np.ndarray, at_us: int) -> np.ndarray:
    """Days at ``at_us`` since the later of the last access and the last decay (never < 0)."""
    start = np.maximum(np.asarray(last_accessed_us, np.int64), np.asarray(decayed_us, np.int64))
    days: np.ndarray = np.maximum(0, at_us - start) / DAY_US
    return days


def decayed_importance(
    importance: np.ndarray, days: np.ndarray, rules: ForgettingRules
) -> np.ndarray:
    """``importance * (1 - decay_per_day) ** days``, element-wise (float64)."""
    base = np.asarray(importance, dtype=np.float64)
    factor = np.power(1.0 - rules.decay_per_day, np.asarray(days, np.float64))
    decayed: np.ndarray = base * factor
    return decayed


@dataclass(frozen=True)
class MergeStep:
    """One merge of :func:`merge_plan`: ``removed`` leaves, ``kept`` stays (list indices)."""

    kept: int
    removed: int
    similarity: float


def merge_plan(
    lengths: Sequence[int],
    vectors: np.ndarray,
    rules: ForgettingRules,
    fresh: Sequence[bool] | None = None,
) -> list[MergeStep]:
    """The merges among items (ordered by creation), most similar pair first.

    Of a pair above ``merge_above`` the longer content stays; at equal length the earlier item
    (the lower index) stays. A pair whose either item was already dropped is skipped, so an item
    leaves at most once and a survivor may absorb several near-duplicates.

    Args:
        lengths: The items' content lengths, ordered by creation time then id.
        vectors: One row per item.
        rules: ``merge_above`` is read.
        fresh: When given, only pairs with at least one fresh item are considered (the others
            were checked by an earlier pass with the same threshold and vectors do not change).
    """
    count = len(lengths)
    if count < 2:
        return []
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    safe = np.where(norms == 0.0, 1.0, norms)
    rows = np.arange(count) if fresh is None else np.flatnonzero(np.asarray(fresh, dtype=bool))
    if rows.size == 0:
        return []
    # einsum, not BLAS: every pair's dot product is summed the same way whichever rows are
    # fresh (a pair on the threshold is decided alike), and no BLAS threads wait for busy cores
    sims = np.einsum("ij,kj->ik", matrix[rows], matrix) / np.outer(safe[rows], safe)
    sims[norms[rows] == 0.0, :] = 0.0
    sims[:, norms == 0.0] = 0.0
    pairs: dict[tuple[int, int], float] = {}
    for local, column in zip(*np.nonzero(sims > rules.merge_above), strict=True):
        first, second = sorted((int(rows[local]), int(column)))
        if first != second:
            pairs[(first, second)] = float(sims[local, column])
    dropped: set[int] = set()
    steps = []
    for (first, second), similarity in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0])):
        if first in dropped or second in dropped:
            continue
        if lengths[second] > lengths[first]:
            kept, removed = second, first
        else:
            kept, removed = first, second
        dropped.add(removed)
        steps.append(MergeStep(kept=kept, removed=removed, similarity=similarity))
    return steps


def compression_candidates(
    items: Sequence[MemoryItem], at: datetime, rules: ForgettingRules
) -> list[MemoryItem]:
    """Items older than ``compress_after_days`` at ``at``, or ``[]`` below ``compress_min``."""
    limit = timedelta(days=rules.compress_after_days)
    old = [item for item in items if at - item.created_at > limit]
    old.sort(key=lambda item: (item.created_at, item.id))
    return old if len(old) >= rules.compress_min else []
