"""The forgetting rules of the tiered memory, as pure functions of items, vectors and a time.

:class:`~memlab.memory.store.TieredStore` applies them; they read no database, so each rule
can be checked against arithmetic done by hand:

- **decay**: ``importance * (1 - decay_per_day) ** idle_days``, where the idle days run from
  the later of the item's last access and the previous forgetting pass (:func:`idle_days`):
  one pass after ten idle days and ten daily passes give the same importance;
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

from memlab.memory.items import ForgettingRules, MemoryItem

__all__ = [
    "DAY",
    "MergeStep",
    "compression_candidates",
    "decayed_importance",
    "idle_days",
    "merge_plan",
]

DAY = timedelta(days=1)


def idle_days(last_accessed: datetime, decayed_to: datetime, at: datetime) -> float:
    """Days at ``at`` since the later of the last access and the last decay (never negative)."""
    start = max(last_accessed, decayed_to)
    return max(0.0, (at - start) / DAY)


def decayed_importance(importance: float, days: float, rules: ForgettingRules) -> float:
    """``importance`` after ``days`` idle days."""
    if days <= 0:
        return importance
    return float(importance * (1.0 - rules.decay_per_day) ** days)


@dataclass(frozen=True)
class MergeStep:
    """One merge of :func:`merge_plan`: ``removed`` leaves, ``kept`` stays (list indices)."""

    kept: int
    removed: int
    similarity: float


def merge_plan(
    items: Sequence[MemoryItem],
    vectors: np.ndarray,
    rules: ForgettingRules,
    fresh: Sequence[bool] | None = None,
) -> list[MergeStep]:
    """The merges of ``items`` (ordered by creation), most similar pair first.

    Of a pair above ``merge_above`` the longer content stays; at equal length the earlier item
    (the lower index) stays. A pair whose either item was already dropped is skipped, so an item
    leaves at most once and a survivor may absorb several near-duplicates.

    Args:
        items: The candidates, ordered by creation time then id.
        vectors: One row per item.
        rules: ``merge_above`` is read.
        fresh: When given, only pairs with at least one fresh item are considered (the others
            were checked by an earlier pass with the same threshold and vectors do not change).
    """
    count = len(items)
    if count < 2:
        return []
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    safe = np.where(norms == 0.0, 1.0, norms)
    rows = np.arange(count) if fresh is None else np.flatnonzero(np.asarray(fresh, dtype=bool))
    sims = (matrix[rows] @ matrix.T) / np.outer(safe[rows], safe)
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
        if len(items[second].content) > len(items[first].content):
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
