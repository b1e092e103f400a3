"""Score each memory update as operations against the labels; stale facts; eviction regret.

State metrics (recall, precision) say what memory holds; this module says what each update
*did*. It replays the memory changes of an owner's calls (the merge bookkeeping each call
record keeps: facts added, removed, evicted, proposals below the threshold) over the labels,
and every mapping of a fact to gold goes through the run's matcher ("g is held" = some stored
fact covers gold fact g).

Expected operations per session:

- ADD for each gold fact revealed in the session that memory does not already hold;
- REMOVE for each gold fact the session retracts that memory holds when the session starts
  (a correction is REMOVE of the old fact + ADD of the new one).

The adds the merge performed, in order:

- *correct*: states an expected gold fact not yet added in the session (counted per gold fact);
- *redundant*: states an active gold fact already held, or added earlier in the session (a
  duplicate add);
- *spurious*: states no active gold fact;
- otherwise (an active gold fact revealed earlier that memory had lost or missed) it counts
  in ``op_adds`` only.

The removals the merge performed (facts removed through ``factsToRemove``):

- *correct*: states an expected retracted fact not yet removed (counted per gold fact);
- *wrong*: states an active gold fact that no stored fact holds any more afterwards;
- otherwise (a stale fact retracted earlier, a duplicate, a fact that is no gold) it counts in
  ``op_removals`` only.

*Missed* adds and removals are the expected ones not credited by the session's end. Precision
= correct / (correct + spurious + redundant) for adds and correct / (correct + wrong) for
removals; recall = correct / expected; F1 = 2 correct / (2 correct + false ops + missed),
which is the harmonic mean of the micro-averaged precision and recall (a ratio of sums, so it
gets a bootstrap interval like every other rate).

Stale survival: for each retracted gold fact held when its session starts, the number of
consecutive session ends from the retracting one on that still hold it, and the virtual days
from the retracting session's start until the update that dropped it (or the end of the last
session: then ``censored``), and the episode's Kaplan-Meier counts (removed and at risk at each
time below the horizon, :mod:`memlab.scoring.inference.survival`).

Eviction regret: active gold facts that memory does not hold at a session's end because the
``max_facts`` cap evicted them or the confidence threshold rejected them (the last thing that
happened to them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from memlab.core.jsondoc.document import parse_utc
from memlab.datasets.models import Owner
from memlab.scoring.count_specs import STALE_HORIZON, count_columns
from memlab.scoring.inference.survival import Episode, episode_counts

__all__ = ["OPERATION_COUNTS", "gold_losses", "lost_golds", "score_operations"]

Covers = Callable[[str, str], bool]

OPERATION_COUNTS = count_columns(over="sessions", by="operations")
"""Per-session counts summed over an owner's sessions (see the module docstring), as declared
in :data:`memlab.scoring.count_specs.COUNT_SPECS`."""

_LOST_TO_LIMITS = frozenset({"cap", "threshold"})


class _Memory:
    """Stored facts (id -> content) and, for each, the gold facts it states."""

    def __init__(self, covers: Covers) -> None:
        self.covers = covers
        self.facts: dict[str, str] = {}
        self.gold: dict[str, str] = {}
        self.golds_of_fact: dict[str, set[str]] = {}
        self.holders: dict[str, set[str]] = {}

    def reveal(self, gold_id: str, text: str) -> None:
        self.gold[gold_id] = text
        holders = {fid for fid, content in self.facts.items() if self.covers(content, text)}
        self.holders[gold_id] = holders
        for fid in holders:
            self.golds_of_fact[fid].add(gold_id)

    def stated(self, content: str) -> set[str]:
        """Gold facts (any, retracted too) that ``content`` states."""
        return {gid for gid, text in self.gold.items() if self.covers(content, text)}

    def add(self, fact_id: str, content: str) -> None:
        self.drop(fact_id)
        self.facts[fact_id] = content
        golds = self.stated(content)
        self.golds_of_fact[fact_id] = golds
        for gid in golds:
            self.holders[gid].add(fact_id)

    def drop(self, fact_id: str) -> None:
        self.facts.pop(fact_id, None)
        for gid in self.golds_of_fact.pop(fact_id, set()):
            self.holders[gid].discard(fact_id)

    def held(self, gold_id: str) -> bool:
        return bool(self.holders.get(gold_id))


def lost_golds(
    removed: Sequence[str], left: Sequence[str], golds: Mapping[str, str], covers: Covers
) -> set[str]:
    """The gold facts (id -> text) a removal lost: some text of ``removed`` states each, and
    no text of ``left`` (the memory after the removal) does, "states" and "held" decided by
    ``covers`` as for every operation above (forgetting regret reuses it)."""
    memory = _Memory(covers)
    for position, content in enumerate(left):
        memory.add(f"left-{position}", content)
    for gold_id, text in golds.items():
        memory.reveal(gold_id, text)
    stated = set().union(*(memory.stated(content) for content in removed))
    return {gold_id for gold_id in stated if not memory.held(gold_id)}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


class _OwnerScorer:
    """Walks one owner's sessions and calls, keeping the memory and the labels in step."""

    def __init__(self, owner: Owner, start: int, covers: Covers) -> None:
        self.owner = owner
        self.start = start
        self.memory = _Memory(covers)
        self.retracted: set[str] = set()
        self.lost: dict[str, str] = {}  # active gold not held -> "cap", "threshold", "removed"
        self.stale: dict[str, dict[str, Any]] = {}  # retracted gold -> its stale episode
        self.row: dict[str, int] = {}
        self.expected_adds: set[str] = set()
        self.expected_removals: set[str] = set()
        self.credited: set[str] = set()
        self.losses: list[dict[str, str]] = []  # per session: active gold not held -> why

    def active(self, gold_id: str) -> bool:
        return gold_id in self.memory.gold and gold_id not in self.retracted

    def begin(self, index: int) -> None:
        """Reveal and retract the session's labels; set its expected operations."""
        labels = self.owner.sessions[index].labels
        held_before = {gid for gid in self.memory.gold if self.memory.held(gid)}
        for fact in labels.facts:
            if fact.id not in self.memory.gold:
                self.memory.reveal(fact.id, fact.content)
        retracts = [gid for gid in labels.retracts if gid in self.memory.gold]
        self.retracted.update(retracts)
        if index < self.start:
            return
        self.expected_adds = {f.id for f in labels.facts if not self.memory.held(f.id)}
        self.expected_removals = {gid for gid in retracts if gid in held_before}
        self.credited = set()
        self.row = dict.fromkeys(OPERATION_COUNTS, 0)
        self.row["op_adds_expected"] = len(self.expected_adds)
        self.row["op_removals_expected"] = len(self.expected_removals)
        self.row["stale_facts"] = len(self.expected_removals)
        for gid in retracts:  # the dataset's order, not a set's: rows are byte-reproducible
            if gid in self.expected_removals:
                self.stale[gid] = {"gold": gid, "session": index, "sessions": 0, "days": 0.0,
                                   "censored": False, "open": True}  # fmt: skip

    def apply(self, call: Mapping[str, Any]) -> None:
        """Replay one call's memory changes and classify its operations."""
        applied = call.get("applied")
        if not isinstance(applied, Mapping):
            return  # no update was applied (a failed call)
        memory = self.memory
        removed = [f for f in applied.get("removed", []) if isinstance(f, Mapping)]
        removed_golds = [memory.golds_of_fact.get(str(f.get("id")), set()) for f in removed]
        for fact in removed:
            memory.drop(str(fact.get("id")))
        added = [f for f in applied.get("added", []) if isinstance(f, Mapping)]
        before = {gid for gid in memory.gold if memory.held(gid)}
        for fact in added:
            memory.add(str(fact.get("id")), _text(fact.get("content")))
        # Taken before the cap acts: a fact added and evicted in one call was still added.
        added_golds = [set(memory.golds_of_fact[str(f.get("id"))]) for f in added]
        for merge in applied.get("merged", []):
            if isinstance(merge, Mapping) and merge.get("replaced"):
                memory.add(str(merge.get("keptId")), _text(merge.get("keptContent")))
        evicted = [f for f in applied.get("evicted", []) if isinstance(f, Mapping)]
        evicted_golds = [memory.golds_of_fact.get(str(f.get("id")), set()) for f in evicted]
        for fact in evicted:
            memory.drop(str(fact.get("id")))
        self._score_removals(removed_golds)
        self._score_adds(added_golds, before)
        self._losses(
            evicted_golds,
            applied.get("skipped_below_threshold", []),
            applied.get("skipped_duplicate", []),
        )
        self._close_stale(call)

    def _score_removals(self, removed_golds: Sequence[set[str]]) -> None:
        row = self.row
        for golds in removed_golds:
            row["op_removals"] += 1
            hits = (golds & self.expected_removals) - self.credited
            if hits:
                row["op_removals_correct"] += len(hits)
                self.credited |= hits
                continue
            if golds & self.retracted:
                continue  # a stale fact retracted earlier, or a second copy
            lost = {g for g in golds if self.active(g) and not self.memory.held(g)}
            if lost:
                row["op_removals_wrong"] += 1
                self.lost.update(dict.fromkeys(lost, "removed"))

    def _score_adds(self, added_golds: Sequence[set[str]], before: set[str]) -> None:
        row = self.row
        for stated in added_golds:
            row["op_adds"] += 1
            golds = {g for g in stated if self.active(g)}
            hits = (golds & self.expected_adds) - self.credited
            if hits:
                row["op_adds_correct"] += len(hits)
                self.credited |= hits
            elif not golds:
                row["op_adds_spurious"] += 1
            elif golds & (before | self.credited):
                row["op_adds_redundant"] += 1
            for gid in golds:
                self.lost.pop(gid, None)

    def _losses(self, evicted_golds: Sequence[set[str]], below: object, twice: object) -> None:
        """Active gold facts the duplicate check, the cap or the threshold kept out of memory
        in this call, the later reason winning (only the cap and the threshold count as
        regret: a duplicate's twin was stored, and whatever dropped the twin is the cause)."""
        memory = self.memory
        self._proposals_lost(twice, "duplicate")
        for golds in evicted_golds:
            for gid in golds:
                if self.active(gid) and not memory.held(gid):
                    self.row["gold_evicted"] += 1
                    self.lost[gid] = "cap"
        self._proposals_lost(below, "threshold")

    def _proposals_lost(self, proposals: object, reason: str) -> None:
        for proposal in proposals if isinstance(proposals, list) else []:
            if not isinstance(proposal, Mapping):
                continue
            for gid in self.memory.stated(_text(proposal.get("content"))):
                if self.active(gid) and not self.memory.held(gid):
                    if reason == "threshold":
                        self.row["gold_below_threshold"] += 1
                    self.lost[gid] = reason

    def _close_stale(self, call: Mapping[str, Any]) -> None:
        """End the stale episode of each retracted fact this call dropped."""
        moment = parse_utc(call.get("virtual_time"))
        for episode in self.stale.values():
            if episode["open"] and not self.memory.held(episode["gold"]):
                episode["open"] = False
                episode["days"] = self._days(episode["session"], moment)

    def _days(self, session: int, moment: datetime | None) -> float:
        """Virtual days from the start of session ``session`` to ``moment``."""
        if moment is None:
            return 0.0
        first = self.owner.sessions[session].started_at
        return max(0.0, (moment - first).total_seconds() / 86400)

    def end(self, index: int) -> dict[str, Any]:
        """The session's row: its counts, regret at its end, stale episodes it started."""
        row: dict[str, Any] = dict(self.row)
        row["op_adds_missed"] = len(self.expected_adds - self.credited)
        row["op_removals_missed"] = len(self.expected_removals - self.credited)
        for episode in self.stale.values():
            if episode["open"]:
                episode["sessions"] += 1
        missing = {
            gid: self.lost.get(gid, "never")
            for gid in self.memory.gold
            if self.active(gid) and not self.memory.held(gid)
        }
        self.losses.append(missing)
        row["gold_regret"] = sum(1 for why in missing.values() if why in _LOST_TO_LIMITS)
        return row

    def finish(self, rows: list[dict[str, Any]]) -> None:
        """Close open stale episodes at the last session's end; attach details and sums."""
        ended = self.owner.sessions[-1].ended_at
        for episode in self.stale.values():
            if episode["open"]:
                episode["censored"] = True
                episode["days"] = self._days(episode["session"], ended)
            row = rows[episode["session"]]
            row["stale_sessions"] += episode["sessions"]
            row["stale_days"] += episode["days"]
            detail = {k: episode[k] for k in ("gold", "sessions", "days", "censored")}
            row.setdefault("stale_detail", []).append(detail)
            # The survival counts of this one episode (summed over sessions and owners later).
            removed, at_risk = episode_counts([Episode.from_detail(detail)], STALE_HORIZON)
            for t in range(STALE_HORIZON):
                row[f"stale_removed_{t}"] += removed[t]
                row[f"stale_at_risk_{t}"] += at_risk[t]


def score_operations(
    owner: Owner,
    calls: Sequence[Mapping[str, Any]],
    covers: Covers,
    *,
    start: int = 0,
    start_memory: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]] | None:
    """Operation counts per session of ``owner`` (``{}`` for sessions before ``start``).

    Args:
        owner: The owner with its labeled sessions.
        calls: Its call records in the order they ran (``applied``: the merge bookkeeping).
        covers: The matcher's ``covers(stored, gold)``.
        start: The first scored session (a fork's session); earlier ones only reveal labels.
        start_memory: The memory the replay started from (a fork's snapshot).

    Returns:
        One dict per session with :data:`OPERATION_COUNTS`, ``gold_regret`` and, on a
        retracting session's row, ``stale_detail``; ``None`` when a call that saved an update
        has no bookkeeping (a run recorded before memlab kept it: rerun the sweep).
    """
    walked = _walk(owner, calls, covers, start, start_memory)
    return walked[0] if walked is not None else None


def gold_losses(
    owner: Owner,
    calls: Sequence[Mapping[str, Any]],
    covers: Covers,
    *,
    start: int = 0,
    start_memory: Mapping[str, Any] | None = None,
) -> list[dict[str, str]] | None:
    """Per session (from ``start``; ``{}`` before it): each active gold fact memory does not
    hold at the session's end, and the last thing that happened to it: ``cap`` (evicted),
    ``threshold`` (proposed below it), ``duplicate`` (skipped as a duplicate), ``removed``
    (a wrong removal) or ``never`` (never stored: not proposed, or in a reply that failed).
    ``None`` as in :func:`score_operations`."""
    walked = _walk(owner, calls, covers, start, start_memory)
    if walked is None:
        return None
    return [{} for _ in range(start)] + walked[1]


def _walk(
    owner: Owner,
    calls: Sequence[Mapping[str, Any]],
    covers: Covers,
    start: int,
    start_memory: Mapping[str, Any] | None,
) -> tuple[list[dict[str, Any]], list[dict[str, str]]] | None:
    """The operation rows and the losses of one owner's calls (see the two functions above)."""
    if any(c.get("saved") and "applied" not in c for c in calls):
        return None
    scorer = _OwnerScorer(owner, start, covers)
    for fact in (start_memory or {}).get("facts", []):
        if isinstance(fact, Mapping):
            scorer.memory.add(str(fact.get("id")), _text(fact.get("content")))
    by_session: dict[int, list[Mapping[str, Any]]] = {}
    for call in calls:
        by_session.setdefault(int(call.get("session_index", -1)), []).append(call)
    rows: list[dict[str, Any]] = []
    for index in range(len(owner.sessions)):
        scorer.begin(index)
        if index < start:
            rows.append({})
            continue
        for call in by_session.get(index, []):
            scorer.apply(call)
        rows.append(scorer.end(index))
    scorer.finish(rows)
    return rows, scorer.losses
