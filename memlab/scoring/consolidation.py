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

*Collapse* at a session: retained is significantly below its *reference* and the memory
shrank. The reference is an immediate re-ask of the same questions of the memory they were
first answered from, with a sample seed of its own (``session_index == asked_at``), so answer
and judge noise are measured, not assumed to be 0; per session:

- ``reference``: the reference re-ask's accuracy on the questions asked again at the session;
- ``collapse_p``: the one-sided permutation p-value of retained below the reference, owners shuffled
  with the Westfall-Young max-T step-down over the lane's sessions
  (:func:`memlab.scoring.inference.collapse.curve_p_values`);
- ``collapse``: ``collapse_p`` below
  :data:`~memlab.scoring.inference.collapse.FLAG_LEVEL` (0.04: at most a 4% chance of a false
  flag anywhere on a faithful curve, so that the goal of at most 5% holds with margin) and the
  displayed upper bound of ``size_ratio`` below 1.

A curve asked without the reference (written before it existed) has ``reference`` and
``collapse_p`` NaN and flags nothing: ask it again (``memlab qa RUN --curve-every N``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from memlab.core.pipeline.injection import get_token_counter
from memlab.scoring.inference.collapse import FLAG_LEVEL, curve_p_values
from memlab.scoring.inference.stats import StatOptions, bootstrap_ratios
from memlab.scoring.qa.qa_verdicts import HEADLINE_KINDS, verdict_table

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
    "reference",
    "reference_lo",
    "reference_hi",
    "collapse_p",
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


def collapsed(collapse_p: float, size_ratio_hi: float, alpha: float = FLAG_LEVEL) -> bool:
    """Retained significantly below its reference over the curve (max-T step-down adjusted
    ``collapse_p`` below ``alpha``) and the memory shrank (``size_ratio``'s upper bound as
    displayed below 1.00); never with no reference (NaN ``collapse_p``)."""
    size = _shown_hi("size_ratio", size_ratio_hi)
    return bool(collapse_p < alpha and size < 1.0)


def _owner_means(frame: pd.DataFrame, keys: list[str], values: list[str]) -> pd.DataFrame:
    """Per (keys, owner): the sums of ``values`` per sample, averaged over the samples."""
    sums = frame.groupby([*keys, "user_id", "sample"], sort=True)[values].sum()
    return sums.groupby(level=[*keys, "user_id"], sort=True).mean()


def _reask_counts(reasks: pd.DataFrame, sizes: pd.DataFrame, judge: str) -> pd.DataFrame:
    """One row per answer asked again at a later session: correct under ``judge`` (answer
    key), the memory's size at the re-asking session and when the question was first answered,
    and its reference re-ask (``ref`` correct, ``ref_n`` 1 when one was asked, else 0)."""
    columns = ["lane_id", "sample", "user_id", "session_index", "correct", "now", "then"]
    columns += ["ref", "ref_n", "paired", "question_id", "asked_at"]
    mine = reasks[reasks["kind"].isin(list(HEADLINE_KINDS))]
    if mine.empty:
        return pd.DataFrame(columns=columns)
    verdicts = verdict_table(mine)
    verdicts = verdicts[(verdicts["judge"] == judge) & (verdicts["key"] == "answer")]
    unit = ["lane_id", "sample", "user_id", "question_id", "session_index"]
    right = verdicts.set_index(unit)["correct"]
    mine = mine.assign(
        correct=right.reindex(pd.MultiIndex.from_frame(mine[unit])).fillna(False).to_numpy(float)
    )
    first = mine["session_index"].to_numpy(dtype=int) == mine["asked_at"].to_numpy(dtype=int)
    question = unit[:-1]
    reference = mine[first].groupby(question)["correct"].mean()
    mine = mine[~first]
    ref = reference.reindex(pd.MultiIndex.from_frame(mine[question])).to_numpy(dtype=float)
    size = sizes.set_index(["lane_id", "sample", "user_id", "session_index"])["memory_tokens"]
    at = ["lane_id", "sample", "user_id"]
    now = size.reindex(pd.MultiIndex.from_frame(mine[[*at, "session_index"]]))
    then = size.reindex(
        pd.MultiIndex.from_frame(
            mine[at].assign(session_index=mine["asked_at"].to_numpy(dtype=int))
        )
    )
    has_ref = ~np.isnan(ref)
    counts: pd.DataFrame = mine[
        ["lane_id", "sample", "user_id", "session_index", "correct"]
    ].assign(
        now=now.to_numpy(dtype=float),
        then=then.to_numpy(dtype=float),
        ref=np.where(has_ref, ref, 0.0),
        ref_n=has_ref.astype(float),
        paired=np.where(has_ref, mine["correct"].to_numpy(dtype=float), 0.0),
        question_id=mine["question_id"].to_numpy(),
        asked_at=mine["asked_at"].to_numpy(dtype=int),
    )
    return counts


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
    values = ["correct", "n", "now", "then", "ref", "ref_n", "paired"]
    asked = _owner_means(counts, point, values) if len(counts) else None
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
        row.update(dict.fromkeys(CURVE_COLUMNS[8:18], math.nan))
        mine = _rows_at(asked, lane_id, index)
        if mine is not None:
            row.update(_point(mine, options))
        rows.append(row)
    order = {lane: i for i, lane in enumerate(dict.fromkeys(sizes["lane_id"]))}
    table = pd.DataFrame(rows, columns=list(CURVE_COLUMNS))
    table["_order"] = table["lane_id"].map(order)
    table = table.sort_values(["_order", "session_index"], kind="stable")
    table = table.drop(columns="_order").reset_index(drop=True)
    for lane_id, lane in table.groupby("lane_id", sort=False):
        table.loc[lane.index, "collapse_p"] = _lane_p_values(counts, lane_id, lane, options)
    table["collapse"] = [
        collapsed(p, hi) for p, hi in table[["collapse_p", "size_ratio_hi"]].to_numpy()
    ]
    return table


def _point(mine: pd.DataFrame, options: StatOptions | None) -> dict[str, Any]:
    """Retained, size ratio and reference of one lane and session (per-owner rows)."""
    row: dict[str, Any] = {"reasked": float(mine["n"].sum())}
    retained = _interval(mine["correct"].to_numpy(), mine["n"].to_numpy(), options)
    ratio = _interval(mine["now"].to_numpy(), mine["then"].to_numpy(), options)
    for name, values in (("retained", retained), ("size_ratio", ratio)):
        row[name], row[f"{name}_lo"], row[f"{name}_hi"] = values
    if mine["ref_n"].sum() > 0:
        ref, ref_n = mine["ref"].to_numpy(), mine["ref_n"].to_numpy()
        row["reference"], row["reference_lo"], row["reference_hi"] = _interval(ref, ref_n, options)
    return row


def _lane_p_values(
    counts: pd.DataFrame, lane_id: object, lane: pd.DataFrame, options: StatOptions | None
) -> np.ndarray:
    """``collapse_p`` of one lane's rows: each question's reference and later answers as its
    slots, the curve's sessions tested as one family
    (:func:`memlab.scoring.inference.collapse.curve_p_values`); NaN elsewhere."""
    out = np.full(len(lane), math.nan)
    mine = counts[(counts["lane_id"] == lane_id) & (counts["ref_n"] > 0)]
    if mine.empty:
        return out
    unit = ["user_id", "sample", "asked_at", "question_id"]
    later = mine.pivot_table(index=unit, columns="session_index", values="paired", aggfunc="mean")
    reference = mine.groupby(unit)["ref"].mean().reindex(later.index)
    samples = mine.groupby("user_id")["sample"].nunique()
    users = later.index.get_level_values("user_id")
    groups = [f"{u}|{s}|{a}" for u, s, a, _ in later.index]
    slots = np.column_stack([reference.to_numpy(float), later.to_numpy(float)])
    weights = 1 / samples.reindex(users).to_numpy(float)
    found = curve_p_values(slots, weights, groups, options)
    p = pd.Series(found, index=[int(str(s)) for s in later.columns])
    return p.reindex(lane["session_index"].to_numpy(dtype=int)).to_numpy(dtype=float)


def _rows_at(asked: pd.DataFrame | None, lane_id: object, index: object) -> pd.DataFrame | None:
    """The per-owner re-ask counts of one lane and session (None when nothing was re-asked)."""
    if asked is None:
        return None
    try:
        mine = asked.xs((lane_id, index), level=["lane_id", "session_index"])
    except KeyError:
        return None
    return mine if isinstance(mine, pd.DataFrame) and len(mine) else None
