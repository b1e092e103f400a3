"""The consolidation curve: does a memory keep answering what it once answered, and what does
it cost in size?

Consolidating a memory (merging, compressing, decaying, rewriting it) can make it smaller and
make it forget. For every question a lane answered correctly from its memory when the QA step
asked it (right after session ``s``), the question is asked again of the memory after each
later session ``k`` (or every ``N`` sessions; :mod:`memlab.postrun.consolidation`). Per lane and
session, with 95% bootstrap intervals over owners (repeated samples of an owner averaged
first, as everywhere in memlab):

- ``retained``: re-asked questions answered correctly under the run's judge / re-asked
  questions (they all started correct: the reference is 100%);
- ``size_ratio``: the memory's size at ``k`` over its size at each question's ``s``, summed
  over the re-asked questions (the reference is 1);
- ``memory_tokens``: the memory's size per owner (every owner of the lane, re-asked or not).

A memory's *size* (:func:`memory_tokens`) is the cl100k token count of what it stores: each
fact's content and each non-empty summary, counted one by one with the project's token
counter, so every lane is measured in one unit whatever its ``token_counting``.

*Collapse* at a session: both fell by more than their intervals, i.e. the displayed upper
bound of ``retained`` is below 100% and the displayed upper bound of ``size_ratio`` below 1.
The flag is decided on the bounds as they are displayed (:func:`shown_bounds`), so the flag
and the interval beside it never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from memlab.core.injection import get_token_counter
from memlab.scoring.qa_metrics import HEADLINE_KINDS, verdict_table
from memlab.scoring.stats import StatOptions, bootstrap_ratios

__all__ = [
    "CURVE_COLUMNS",
    "collapsed",
    "curve_table",
    "memory_tokens",
    "shown_bounds",
]

CURVE_COLUMNS: tuple[str, ...] = (
    "lane_id",
    "session_index",
    "days",
    "owners",
    "memory_tokens",
    "memory_tokens_lo",
    "memory_tokens_hi",
    "reasked",
    "retained",
    "retained_lo",
    "retained_hi",
    "size_ratio",
    "size_ratio_lo",
    "size_ratio_hi",
    "collapse",
)
"""The columns of :func:`curve_table`."""

_SECTIONS = ("user", "history")


def memory_tokens(memory: Mapping[str, Any] | None) -> int:
    """The size of a memory document in cl100k tokens: every fact's content and every
    non-empty summary of its ``user`` and ``history`` sections, each counted on its own."""
    if not memory:
        return 0
    counter = get_token_counter("tiktoken")
    total = 0
    for fact in memory.get("facts", []) or []:
        if isinstance(fact, Mapping):
            total += counter.count(str(fact.get("content", "")))
    for name in _SECTIONS:
        sections = memory.get(name)
        if not isinstance(sections, Mapping):
            continue
        for section in sections.values():
            summary = section.get("summary") if isinstance(section, Mapping) else None
            if isinstance(summary, str) and summary.strip():
                total += counter.count(summary)
    return total


def shown_bounds(kind: str, lo: float, hi: float) -> str:
    """An interval as the curve's tables show it: ``retained`` in percent with one decimal,
    ``size_ratio`` and ``memory_tokens`` with two decimals or none."""
    if math.isnan(lo) or math.isnan(hi):
        return "[-]"
    if kind == "retained":
        return f"[{lo * 100:.1f}, {hi * 100:.1f}]"
    if kind == "size_ratio":
        return f"[{lo:.2f}, {hi:.2f}]"
    return f"[{lo:.0f}, {hi:.0f}]"


def _shown_hi(kind: str, hi: float) -> float:
    """The upper bound as displayed, read back (NaN when not shown)."""
    text = shown_bounds(kind, 0.0, hi)
    return math.nan if text == "[-]" else float(text.strip("[]").split(", ")[1])


def collapsed(retained_hi: float, size_ratio_hi: float) -> bool:
    """Both fell by more than their intervals, on the bounds as displayed (see the module
    docstring): shown ``retained`` upper bound below 100.0 and shown ``size_ratio`` upper
    bound below 1.00."""
    accuracy = _shown_hi("retained", retained_hi)
    size = _shown_hi("size_ratio", size_ratio_hi)
    return bool(accuracy < 100.0 and size < 1.0)


def _owner_means(frame: pd.DataFrame, keys: list[str], values: list[str]) -> pd.DataFrame:
    """Per (keys, owner): the sums of ``values`` per sample, averaged over the samples."""
    sums = frame.groupby([*keys, "user_id", "sample"], sort=True)[values].sum()
    return sums.groupby(level=[*keys, "user_id"], sort=True).mean()


def _reask_counts(reasks: pd.DataFrame, sizes: pd.DataFrame, judge: str) -> pd.DataFrame:
    """One row per re-asked answer: correct under ``judge`` (answer key), and the memory's
    size at the re-asking session and when the question was first answered."""
    columns = ["lane_id", "sample", "user_id", "session_index", "correct", "now", "then"]
    mine = reasks[reasks["kind"].isin(list(HEADLINE_KINDS))]
    if mine.empty:
        return pd.DataFrame(columns=columns)
    verdicts = verdict_table(mine)
    verdicts = verdicts[(verdicts["judge"] == judge) & (verdicts["key"] == "answer")]
    unit = ["lane_id", "sample", "user_id", "question_id", "session_index"]
    right = verdicts.set_index(unit)["correct"]
    ids = pd.MultiIndex.from_frame(mine[unit])
    size = sizes.set_index(["lane_id", "sample", "user_id", "session_index"])["memory_tokens"]
    at = ["lane_id", "sample", "user_id"]
    now = size.reindex(pd.MultiIndex.from_frame(mine[[*at, "session_index"]]))
    then = size.reindex(
        pd.MultiIndex.from_frame(
            mine[at].assign(session_index=mine["asked_at"].to_numpy(dtype=int))
        )
    )
    return mine[["lane_id", "sample", "user_id", "session_index"]].assign(
        correct=right.reindex(ids).fillna(False).to_numpy(dtype=float),
        now=now.to_numpy(dtype=float),
        then=then.to_numpy(dtype=float),
    )


def _interval(num: np.ndarray, den: np.ndarray, options: StatOptions | None) -> tuple[float, ...]:
    found = bootstrap_ratios(num, den, options=options)
    return float(found.estimate[0]), float(found.lo[0]), float(found.hi[0])


def curve_table(
    reasks: pd.DataFrame,
    sizes: pd.DataFrame,
    judge: str,
    *,
    options: StatOptions | None = None,
) -> pd.DataFrame:
    """The consolidation curve: one row per lane and session (see the module docstring).

    Args:
        reasks: Answer rows of the re-asked questions (``memory`` condition; ``session_index``
            the session re-asked after, ``asked_at`` the session first asked after).
        sizes: Per (``lane_id``, ``sample``, ``user_id``, ``session_index``): the memory's
            ``memory_tokens`` and ``days`` (virtual days since the owner's first session).
        judge: The judge whose verdicts count.
        options: Resamples, seed and level of the intervals.

    Returns:
        :data:`CURVE_COLUMNS`; ``retained`` and ``size_ratio`` are NaN at a session nothing
        was re-asked after.
    """
    if sizes.empty:
        return pd.DataFrame(columns=list(CURVE_COLUMNS))
    point = ["lane_id", "session_index"]
    tokens = _owner_means(sizes.assign(one=1.0), point, ["memory_tokens", "days", "one"])
    counts = _reask_counts(reasks, sizes, judge).assign(n=1.0)
    asked = _owner_means(counts, point, ["correct", "n", "now", "then"]) if len(counts) else None
    rows: list[dict[str, Any]] = []
    for key, owners in tokens.groupby(level=point, sort=False):
        lane_id, index = key
        ones = np.ones(len(owners))
        size, size_lo, size_hi = _interval(owners["memory_tokens"].to_numpy(), ones, options)
        row: dict[str, Any] = {
            "lane_id": lane_id,
            "session_index": int(str(index)),
            "days": float(owners["days"].mean()),
            "owners": len(owners),
            "memory_tokens": size,
            "memory_tokens_lo": size_lo,
            "memory_tokens_hi": size_hi,
            "reasked": 0.0,
        }
        row.update(dict.fromkeys(CURVE_COLUMNS[8:14], math.nan))
        mine = _rows_at(asked, lane_id, index)
        if mine is not None:
            row["reasked"] = float(mine["n"].sum())
            retained = _interval(mine["correct"].to_numpy(), mine["n"].to_numpy(), options)
            ratio = _interval(mine["now"].to_numpy(), mine["then"].to_numpy(), options)
            for name, values in (("retained", retained), ("size_ratio", ratio)):
                row[name], row[f"{name}_lo"], row[f"{name}_hi"] = values
        row["collapse"] = collapsed(row["retained_hi"], row["size_ratio_hi"])
        rows.append(row)
    order = {lane: i for i, lane in enumerate(dict.fromkeys(sizes["lane_id"]))}
    table = pd.DataFrame(rows, columns=list(CURVE_COLUMNS))
    table["_order"] = table["lane_id"].map(order)
    table = table.sort_values(["_order", "session_index"], kind="stable")
    return table.drop(columns="_order").reset_index(drop=True)


def _rows_at(asked: pd.DataFrame | None, lane_id: object, index: object) -> pd.DataFrame | None:
    """The per-owner re-ask counts of one lane and session (None when nothing was re-asked)."""
    if asked is None:
        return None
    try:
        mine = asked.xs((lane_id, index), level=["lane_id", "session_index"])
    except KeyError:
        return None
    return mine if isinstance(mine, pd.DataFrame) and len(mine) else None
