"""Drawing a matcher's labelling sheet from a run directory (``memlab matcher audit RUN``).

The sheet itself (rows, strata, reading, estimates) is :mod:`memlab.matching.matcher_audit`;
this module collects the (stored, gold) pairs of a run's memory snapshots in two strata by the
matcher's verdict and samples them into a sheet.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from memlab.core.jsondoc.similarity import dice
from memlab.matching.base import FactMatcher, MatchResult, explain, matcher_name
from memlab.matching.matcher_audit import (
    SHEET_NAME,
    STRATA,
    AuditError,
    AuditRow,
    AuditSheet,
)
from memlab.matching.matchers import default_matcher
from memlab.postrun.rescoring import replays
from memlab.runs.run import Run
from memlab.runs.rundir import RunDir

__all__ = ["draw_sheet", "sheet_path"]


def sheet_path(run: Run | str | Path) -> Path:
    """Where a run's labelling sheet lives by default."""
    return (run.dir if isinstance(run, Run) else RunDir(Path(run))).file(SHEET_NAME)


@dataclass(frozen=True)
class _Candidate:
    stored: str
    gold: str
    lane: str
    owner: str
    session: int


def _snapshots(run: Run) -> Iterator[tuple[str, str, int, list[str], list[str]]]:
    """(lane, owner, session, stored facts, gold facts revealed so far) for every snapshot."""
    for replay in replays(run):
        gold: dict[str, str] = {}
        for index, snapshot in enumerate(replay.record.get("snapshots", [])):
            if index >= len(replay.owner.sessions):
                break
            for fact in replay.owner.sessions[index].labels.facts:
                gold[fact.id] = fact.content
            stored = [str(f.get("content", "")) for f in snapshot.get("facts", [])]
            yield replay.lane_id, replay.owner.user_id, index, stored, list(gold.values())


def _candidates(run: Run, matcher: FactMatcher) -> dict[str, dict[tuple[str, str], _Candidate]]:
    """Distinct (stored, gold) pairs per stratum, each with the first place it occurred."""
    strata: dict[str, dict[tuple[str, str], _Candidate]] = {s: {} for s in STRATA}
    for lane, owner, session, stored, gold in _snapshots(run):
        verdict = {(s, g): explain(matcher, s, g) for s in stored for g in gold}
        matched = [pair for pair, result in verdict.items() if result.matched]
        nearest = _nearest(stored, gold, verdict, matched)
        for stratum, pairs in (("accepted", matched), ("rejected", nearest)):
            for pair in pairs:
                strata[stratum].setdefault(pair, _Candidate(*pair, lane, owner, session))
    return strata


def _nearest(
    stored: Sequence[str],
    gold: Sequence[str],
    verdict: dict[tuple[str, str], MatchResult],
    matched: list[tuple[str, str]],
) -> list[tuple[str, str]]:
    """For each unmatched gold fact the nearest stored fact, and the reverse."""
    out = []

    def closeness(pair: tuple[str, str]) -> tuple[float, float]:
        return (verdict[pair].score, dice(*pair))

    for g in gold:
        if not any(pair[1] == g for pair in matched) and stored:
            best = max(((s, g) for s in stored), key=closeness)
            if max(closeness(best)) > 0:
                out.append(best)
    for s in stored:
        if not any(pair[0] == s for pair in matched) and gold:
            best = max(((s, g) for g in gold), key=closeness)
            if max(closeness(best)) > 0:
                out.append(best)
    return out


def draw_sheet(
    run: Run, matcher: FactMatcher | None = None, *, sample: int = 60, seed: int = 0
) -> AuditSheet:
    """Draw ``sample`` pairs from ``run``, half from each stratum (see the module docstring).

    A stratum with fewer pairs than its half gives all it has and the other makes up the rest.

    Raises:
        AuditError: ``sample`` below 2, or a run without any candidate pair.
    """
    if sample < 2:
        raise AuditError(f"--sample must be at least 2 (one pair per stratum), got {sample}")
    matcher = matcher if matcher is not None else default_matcher()
    strata = _candidates(run, matcher)
    if not any(strata.values()):
        raise AuditError(f"{run.path}: no (stored, gold) pairs to audit: no stored facts")
    rng = random.Random(seed)
    quota = _quota(sample, {s: len(c) for s, c in strata.items()})
    rows: list[AuditRow] = []
    name = matcher_name(matcher)
    for stratum in STRATA:
        pool = sorted(strata[stratum])
        for pair in sorted(rng.sample(pool, quota[stratum])):
            c = strata[stratum][pair]
            result = explain(matcher, c.stored, c.gold)
            rows.append(
                AuditRow(
                    id=f"{stratum[0]}{len(rows) + 1:03d}",
                    stratum=stratum,
                    stratum_size=len(pool),
                    matcher=name,
                    verdict=result.matched,
                    score=round(result.score, 3),
                    reason=result.reason,
                    lane=c.lane,
                    owner=c.owner,
                    session=c.session,
                    gold=c.gold,
                    stored=c.stored,
                )
            )
    rng.shuffle(rows)  # people label in random order, not stratum by stratum
    return AuditSheet(rows)


def _quota(sample: int, sizes: dict[str, int]) -> dict[str, int]:
    half = {STRATA[0]: (sample + 1) // 2, STRATA[1]: sample // 2}
    quota = {s: min(half[s], sizes[s]) for s in STRATA}
    spare = sample - sum(quota.values())
    for s in STRATA:
        extra = min(spare, sizes[s] - quota[s])
        quota[s] += extra
        spare -= extra
    return quota
