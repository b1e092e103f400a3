"""Turn replays into numbers: per-session rows, per-call rows and a per-lane summary.

Definitions (all per lane; "gold" = labeled facts of the dataset):
- *active gold* after session *i*: gold facts revealed in sessions ``<= i`` minus those retracted
  in sessions ``<= i``.
- *recall*: active gold facts covered by at least one stored fact / active gold facts.
- *precision*: stored facts that cover at least one active gold fact / stored facts.
- *retracted held*: retracted gold facts still covered by a stored fact.
- *forbidden stored*: stored facts containing (case-insensitively) a ``must_not_store`` string
  of any session so far.
- *covered*: decided by a fact matcher (default :func:`memlab.eval.matchers.default_matcher`;
  its name and calibration are recorded with the run, see :mod:`memlab.eval.matching`).
- *duplicates*: stored facts repeating an earlier one (exact / normalized / near, see
  :mod:`memlab.core.similarity`); *duplicate rate* = near duplicates / stored facts. When an
  :class:`~memlab.eval.embeddings.EmbeddingDuplicates` is given, also ``dup_embedding`` and
  *duplicate rate (embeddings)* = its count / stored facts.
- *parse-failure rate*: LLM replies whose parse failed / LLM replies.
- *calls saved by debounce*: agent runs that requested an update minus LLM calls made.
Summary recall and precision are micro-averaged over owners (sums of counts, then the ratio).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from memlab.core.similarity import count_duplicates
from memlab.datasets.models import Owner
from memlab.eval.embeddings import EmbeddingDuplicates
from memlab.eval.matchers import default_matcher
from memlab.eval.matching import FactMatcher

__all__ = [
    "DEFAULT_PRICES",
    "failure_table",
    "session_rows",
    "summarize",
    "violation_table",
]

DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    # model id prefix: (USD per 1M prompt tokens, USD per 1M completion tokens)
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
}
"""Default price table; local models cost nothing. Pass your own to :func:`summarize`."""


_SUMMARY_COLUMNS: tuple[str, ...] = (
    "owners",
    "sessions",
    "llm_calls",
    "agent_runs",
    "calls_saved_by_debounce",
    "parse_failures",
    "parse_failure_rate",
    "backend_errors",
    "final_facts",
    "recall",
    "precision",
    "retracted_held",
    "forbidden_stored",
    "dup_exact",
    "dup_normalized",
    "dup_near",
    "duplicate_rate",
    "added",
    "removed",
    "evicted",
    "skipped_below_threshold",
    "skipped_duplicate",
    "prompt_tokens",
    "completion_tokens",
    "tokens_per_update",
    "cost_usd",
    "cost_per_retained_fact",
    "cache_hits",
)


def session_rows(
    owner: Owner,
    snapshots: Sequence[Mapping[str, Any]],
    calls: Sequence[Mapping[str, Any]],
    agent_runs: Sequence[int],
    *,
    matcher: FactMatcher | None = None,
    embedding_duplicates: EmbeddingDuplicates | None = None,
) -> list[dict[str, Any]]:
    """One row per session: memory state after it, scored against the labels so far.

    ``matcher`` decides whether a stored fact states a gold fact (default:
    :func:`memlab.eval.matchers.default_matcher`). With ``embedding_duplicates``, rows also
    get ``dup_embedding``: facts whose embedding is
    close to an earlier fact's (see :mod:`memlab.eval.embeddings`).
    """
    matcher = matcher if matcher is not None else default_matcher()
    gold: dict[str, str] = {}
    retracted: set[str] = set()
    forbidden: list[str] = []
    rows: list[dict[str, Any]] = []
    if len(snapshots) != len(owner.sessions):
        raise ValueError(
            f"owner {owner.user_id!r}: {len(snapshots)} memory snapshots for "
            f"{len(owner.sessions)} sessions; the replay does not belong to this dataset"
        )
    for index, (session, snapshot) in enumerate(zip(owner.sessions, snapshots, strict=True)):
        labels = session.labels
        for fact in labels.facts:
            gold[fact.id] = fact.content
        retracted.update(labels.retracts)
        forbidden.extend(s.casefold() for s in labels.must_not_store)
        stored = [str(f.get("content", "")) for f in snapshot.get("facts", [])]
        active = {gid: text for gid, text in gold.items() if gid not in retracted}
        covered = {
            gid for gid, text in active.items() if any(matcher.covers(s, text) for s in stored)
        }
        precise = sum(1 for s in stored if any(matcher.covers(s, t) for t in active.values()))
        held = sum(
            1
            for gid in retracted
            if gid in gold and any(matcher.covers(s, gold[gid]) for s in stored)
        )
        bad = sum(1 for s in stored if any(f and f in s.casefold() for f in forbidden))
        dups = count_duplicates(stored)
        session_calls = [c for c in calls if c.get("session_index") == index]
        row: dict[str, Any] = {
            "user_id": owner.user_id,
            "session_index": index,
            "thread_id": session.thread_id,
            "noise": labels.noise,
            "tags": ",".join(labels.tags),
            "facts": len(stored),
            "gold_active": len(active),
            "gold_covered": len(covered),
            "stored_precise": precise,
            "recall": len(covered) / len(active) if active else float("nan"),
            "precision": precise / len(stored) if stored else float("nan"),
            "retracted_held": held,
            "forbidden_stored": bad,
            "dup_exact": dups.exact,
            "dup_normalized": dups.normalized,
            "dup_near": dups.near,
            **(
                {"dup_embedding": embedding_duplicates.count(stored)}
                if embedding_duplicates is not None
                else {}
            ),
            "agent_runs": agent_runs[index] if index < len(agent_runs) else 0,
            "llm_calls": len(session_calls),
        }
        for key in ("added", "removed", "evicted", "skipped_below_threshold", "skipped_duplicate"):
            row[key] = sum(int(c.get(f"n_{key}", 0) or 0) for c in session_calls)
        rows.append(row)
    return rows


def _price(model: object, prices: Mapping[str, tuple[float, float]]) -> tuple[float, float]:
    if not isinstance(model, str) or not model:  # None, or NaN from a call that failed early
        return (0.0, 0.0)
    for prefix in sorted(prices, key=len, reverse=True):
        if model.startswith(prefix):
            return prices[prefix]
    return (0.0, 0.0)


def summarize(
    calls: pd.DataFrame,
    sessions: pd.DataFrame,
    *,
    prices: Mapping[str, tuple[float, float]] | None = None,
) -> pd.DataFrame:
    """One row per lane with the headline metrics (see the module docstring)."""
    prices = DEFAULT_PRICES if prices is None else prices
    rows = []
    lanes = sorted(
        set(sessions.get("lane_id", pd.Series(dtype=str)))
        | set(calls.get("lane_id", pd.Series(dtype=str)))
    )
    for lane in lanes:
        lane_calls = calls[calls["lane_id"] == lane] if len(calls) else calls
        lane_sessions = sessions[sessions["lane_id"] == lane]
        final = lane_sessions.sort_values("session_index").groupby("user_id").tail(1)
        replied = lane_calls[lane_calls["reply"].notna()] if len(lane_calls) else lane_calls
        failed = int((~replied["parse_ok"].astype(bool)).sum()) if len(replied) else 0
        prompt_tokens = int(lane_calls["prompt_tokens"].sum()) if len(lane_calls) else 0
        completion_tokens = int(lane_calls["completion_tokens"].sum()) if len(lane_calls) else 0
        cost = 0.0
        for _, call in lane_calls.iterrows():
            p_in, p_out = _price(call.get("model"), prices)
            cost += (call["prompt_tokens"] * p_in + call["completion_tokens"] * p_out) / 1e6
        facts = int(final["facts"].sum())
        gold_active = int(final["gold_active"].sum())
        runs = int(lane_sessions["agent_runs"].sum())
        row = {
            "lane_id": lane,
            "owners": int(final["user_id"].nunique()),
            "sessions": len(lane_sessions),
            "llm_calls": len(lane_calls),
            "agent_runs": runs,
            "calls_saved_by_debounce": runs - len(lane_calls),
            "parse_failures": failed,
            "parse_failure_rate": failed / len(replied) if len(replied) else float("nan"),
            "backend_errors": int((lane_calls["error_stage"] == "backend").sum())
            if len(lane_calls)
            else 0,
            "final_facts": facts,
            "recall": int(final["gold_covered"].sum()) / gold_active
            if gold_active
            else float("nan"),
            "precision": int(final["stored_precise"].sum()) / facts if facts else float("nan"),
            "retracted_held": int(final["retracted_held"].sum()),
            "forbidden_stored": int(final["forbidden_stored"].sum()),
            "dup_exact": int(final["dup_exact"].sum()),
            "dup_normalized": int(final["dup_normalized"].sum()),
            "dup_near": int(final["dup_near"].sum()),
            "duplicate_rate": int(final["dup_near"].sum()) / facts if facts else 0.0,
            **_embedding_columns(final, facts),
            "added": int(lane_sessions["added"].sum()),
            "removed": int(lane_sessions["removed"].sum()),
            "evicted": int(lane_sessions["evicted"].sum()),
            "skipped_below_threshold": int(lane_sessions["skipped_below_threshold"].sum()),
            "skipped_duplicate": int(lane_sessions["skipped_duplicate"].sum()),
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "tokens_per_update": (prompt_tokens + completion_tokens) / len(lane_calls)
            if len(lane_calls)
            else 0.0,
            "cost_usd": cost,
            "cost_per_retained_fact": cost / facts if facts else float("nan"),
            "cache_hits": int(lane_calls["cached"].astype(bool).sum()) if len(lane_calls) else 0,
        }
        rows.append(row)
    if not rows:
        # Keep the columns so callers can merge and select on an empty run.
        return pd.DataFrame(columns=["lane_id", *_SUMMARY_COLUMNS])
    return pd.DataFrame(rows)


def _embedding_columns(final: pd.DataFrame, facts: int) -> dict[str, Any]:
    """Summary columns of the embedding duplicate measure, when the sessions have it."""
    if "dup_embedding" not in final.columns:
        return {}
    # Resumed or merged runs may lack it for some rows: NaN there, and no rate.
    counts = pd.to_numeric(final["dup_embedding"], errors="coerce")
    if counts.isna().any():
        return {"dup_embedding": float("nan"), "duplicate_rate_embedding": float("nan")}
    total = int(counts.sum())
    return {
        "dup_embedding": total,
        "duplicate_rate_embedding": total / facts if facts else 0.0,
    }


def failure_table(calls: pd.DataFrame) -> pd.DataFrame:
    """Parse outcomes per lane: rows lane_id, columns ``category`` (or ``ok:<rung>``), counts."""
    if calls.empty:
        return pd.DataFrame()
    replied = calls[calls["reply"].notna()].copy()
    replied["outcome"] = [
        f"ok:{rung}" if ok else str(category)
        for ok, rung, category in zip(
            replied["parse_ok"], replied["parse_rung"], replied["parse_category"], strict=True
        )
    ]
    return replied.pivot_table(
        index="lane_id", columns="outcome", values="reply", aggfunc="count", fill_value=0
    )


_INDEX = re.compile(r"/\d+(?=/|$)")


def violation_table(calls: pd.DataFrame) -> pd.DataFrame:
    """Schema violations by (pointer with list indexes as ``*``, keyword) per lane."""
    rows: list[dict[str, Any]] = []
    for lane, violations in zip(
        calls.get("lane_id", []), calls.get("violations", []), strict=False
    ):
        for violation in _iter_violations(violations):
            rows.append(
                {
                    "lane_id": lane,
                    "pointer": _INDEX.sub("/*", violation.get("pointer", "")) or "/",
                    "keyword": violation.get("keyword", ""),
                }
            )
    if not rows:
        return pd.DataFrame(columns=["lane_id", "pointer", "keyword", "count"])
    frame = pd.DataFrame(rows)
    return frame.groupby(["lane_id", "pointer", "keyword"]).size().reset_index(name="count")


def _iter_violations(value: Any) -> Iterable[Mapping[str, Any]]:
    if isinstance(value, list):
        yield from (v for v in value if isinstance(v, Mapping))
