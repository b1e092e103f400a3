"""Real and simulated lanes apart: a report never ranks the simulated model against a real one.

Lanes are grouped by whether their backend is simulated (``sim:PROFILE``, a test instrument).
Each group has its own baseline (its first lane), its own deltas and best values, and its
own comparisons; no table mixes the two. One run may hold both kinds (its grid says so); a
report that adds a run of a kind the first run has none of is checked against the first run
for everything but the kind (:func:`check_report`), so a run of other owners or another
dataset is not shown beside it unless mixed reports are allowed, and then said once per run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from memlab.backends.registry import SIMULATED_MARK
from memlab.runs.run import Run
from memlab.scoring.comparing.comparability import LaneFacts, check_pairs, kind_baselines, kind_of

__all__ = [
    "GROUP_TITLES",
    "LaneGroup",
    "check_report",
    "group_name",
    "lane_groups",
]

GROUP_TITLES = {"real": "Real model", "simulated": f"Simulated model {SIMULATED_MARK}"}
"""Headings of the groups' tables."""


def group_name(run: Run, lane_id: str) -> str:
    """``"simulated"`` for a lane replaying the simulated model, else ``"real"`` (the kind
    comparisons pair by, :func:`memlab.scoring.comparing.comparability.kind_of`)."""
    return kind_of(run.lane_facts(lane_id))


@dataclass(frozen=True)
class LaneGroup:
    """The lanes of one kind, in report order; the first is the group's baseline."""

    name: str
    lanes: list[tuple[Run, str]]

    @property
    def title(self) -> str:
        """A heading for the group's tables."""
        return GROUP_TITLES[self.name]

    @property
    def baseline(self) -> str:
        """``run: lane`` of the group's baseline lane."""
        run, lane_id = self.lanes[0]
        return f"{run.name}: {run.label(lane_id)}"

    def pairs(self) -> list[tuple[tuple[Run, str], tuple[Run, str]]]:
        """Each lane but the baseline, paired with the baseline (what comparisons rank)."""
        return [(self.lanes[0], other) for other in self.lanes[1:]]


def lane_groups(runs: Sequence[Run]) -> list[LaneGroup]:
    """The runs' lanes split into real (first) and simulated; empty groups left out.

    Split by :func:`~memlab.scoring.comparing.comparability.kind_baselines`, as ``compare`` pairs
    lanes, so a report and a comparison always rank a lane against the same baseline."""
    lanes = [(run, lane_id) for run in runs for lane_id in run.lanes]
    found: dict[int, list[tuple[Run, str]]] = {}  # by the baseline (its identity)
    for baseline, lane in kind_baselines(lanes, lambda lane: lane[0].lane_facts(lane[1])):
        found.setdefault(id(baseline), []).append(lane)
    groups = [LaneGroup(group_name(*members[0]), members) for members in found.values()]
    return sorted(groups, key=lambda group: group.name != "real")


def _across_kinds(runs: Sequence[Run]) -> list[tuple[tuple[Run, str], tuple[Run, str]]]:
    """The first lane of each later run whose kind the first run has none of, paired with the
    first run's first lane (one lane stands for its run: the run's lanes share its dataset
    and owners)."""
    if not runs or not runs[0].lanes:
        return []
    first = runs[0]
    anchor = (first, next(iter(first.lanes)))
    kinds = {group_name(first, lane_id) for lane_id in first.lanes}
    found = []
    for run in runs[1:]:
        other = next((lane for lane in run.lanes if group_name(run, lane) not in kinds), None)
        if other is not None:
            found.append((anchor, (run, other)))
    return found


def check_report(runs: Sequence[Run], *, allow_mixed: bool = False) -> list[str]:
    """Refuse a report of lanes measured differently (each lane against its group's baseline,
    and each later run of another kind against the first run, checked by
    :func:`memlab.scoring.comparing.comparability.check_pairs`); return the banners of those
    allowed.

    Raises:
        MixedComparisonError: A difference that refuses a comparison, without
            ``allow_mixed``.
    """
    within = [pair for group in lane_groups(runs) for pair in group.pairs()]
    banners = check_pairs(_facts(within), allow_mixed=allow_mixed)
    # Across kinds the lanes are never ranked together and differ in kind by design: what
    # else differs (owners, dataset) is checked, and said once per run.
    across = [
        (base, replace(cand, simulated=base.simulated, backend=base.backend))
        for base, cand in _facts(_across_kinds(runs))
    ]
    return banners + check_pairs(across, allow_mixed=allow_mixed)


def _facts(
    pairs: Sequence[tuple[tuple[Run, str], tuple[Run, str]]],
) -> list[tuple[LaneFacts, LaneFacts]]:
    return [
        (base.lane_facts(base_lane), run.lane_facts(lane_id))
        for (base, base_lane), (run, lane_id) in pairs
    ]
