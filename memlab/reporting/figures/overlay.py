"""Several runs drawn as one: the charts of a report on several runs, overlaid.

An :class:`Overlay` is a view of several :class:`~memlab.runs.run.Run` objects that the chart
functions draw as they draw one run: each lane of each run is a lane of the overlay, its id
prefixed with its run's name (``run/lane``) and its label ``run: configuration``, so every
chart has one series, bar or row per (run, configuration) and its legend names the run.

Its tables (summary, sessions, calls, parse outcomes, schema violations, QA answers) are each
run's own tables put one under the other with the lane ids renamed: no number is recomputed
across runs. Real lanes come first, then simulated ones (each kind in run order), as the
report's tables keep the two apart; the series of a simulated lane keeps its ``[simulated]``
label, and a line never joins lanes of two runs (:mod:`memlab.reporting.figures.charts` keys the
lines it groups by the run).

An overlay has no run directory: it is drawn, never read from or written to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from memlab.backends.registry import is_simulated
from memlab.errors import MemlabError
from memlab.runs.run import Run
from memlab.runs.rundir import RunDir

__all__ = ["Overlay", "OverlayError", "qa_chart_runs"]


class OverlayError(MemlabError, TypeError):
    """An overlay was asked for what only a run directory has (its files)."""


@dataclass(repr=False)
class Overlay(Run):
    """Several runs as one run of lanes ``run/lane``, for charts and their numbers.

    Build it with :meth:`of`; :meth:`source` gives the run and lane behind a lane id.
    """

    members: tuple[tuple[str, Run], ...] = ()
    """Each run with the name its lanes carry (its own name; ``name (2)`` for a repeat)."""
    sources: dict[str, tuple[str, Run, str]] = field(default_factory=dict)
    """Overlay lane id -> (run name, run, the run's own lane id)."""

    @classmethod
    def of(cls, runs: Sequence[Run]) -> Overlay:
        """The overlay of ``runs`` (at least one), lanes real first, then simulated."""
        if not runs:
            raise ValueError("an overlay needs at least one run")
        members = tuple(zip(_unique_names([run.name for run in runs]), runs, strict=True))
        sources: dict[str, tuple[str, Run, str]] = {}
        for simulated in (False, True):
            for name, run in members:
                for lane_id, lane in run.lanes.items():
                    if is_simulated(lane.backend) == simulated:
                        sources[f"{name}/{lane_id}"] = (name, run, lane_id)
        first = runs[0]
        return cls(
            path=Path(" + ".join(name for name, _ in members)),
            grid=first.grid,
            lanes={key: run.lanes[lane] for key, (_, run, lane) in sources.items()},
            stats=first.stats,
            qa_judge=_shared_judge(runs),
            members=members,
            sources=sources,
        )

    def __repr__(self) -> str:
        return f"Overlay({[name for name, _ in self.members]!r}, lanes={len(self.lanes)})"

    @property
    def dir(self) -> RunDir:
        """Refused: an overlay is drawn from its runs' tables, it has no files."""
        raise OverlayError(f"{self.name} overlays runs for charts; read each run for its files")

    @property
    def complete(self) -> bool:
        """Whether every run of the overlay is complete."""
        return all(run.complete for _, run in self.members)

    @property
    def judges(self) -> list[str]:
        """The judges every run's memory QA has, in the first run's order."""
        runs = [run for _, run in self.members if not run.qa_answers.empty]
        if not runs:
            return []
        return [j for j in runs[0].judges if all(j in run.judges for run in runs)]

    def source(self, lane_id: str) -> tuple[str, Run, str]:
        """The run name, the run and its own lane id behind the overlay's ``lane_id``."""
        return self.sources[lane_id]

    def label(self, lane_id: str) -> str:
        """``run: configuration``, the configuration labelled as its own run labels it."""
        name, run, lane = self.sources[lane_id]
        return f"{name}: {run.label(lane)}"

    def _ids(self, name: str) -> Callable[[Any], str]:
        return lambda lane_id: f"{name}/{lane_id}"

    def _stacked(self, table_of: Callable[[Run], pd.DataFrame]) -> pd.DataFrame:
        """Each run's table with a ``lane_id`` column, renamed, one under the other."""
        tables = [(name, table_of(run)) for name, run in self.members]
        frames = [
            frame.assign(lane_id=frame["lane_id"].map(self._ids(name)))
            for name, frame in tables
            if not frame.empty
        ]
        # No run has a row: the first run's empty table, its columns kept.
        return pd.concat(frames, ignore_index=True) if frames else tables[0][1]

    def _by_lane(self, table_of: Callable[[Run], pd.DataFrame]) -> pd.DataFrame:
        """Each run's table indexed by lane id, renamed, in the overlay's lane order."""
        tables = [table_of(run).rename(index=self._ids(name)) for name, run in self.members]
        frames = [frame for frame in tables if not frame.empty]
        if not frames:
            return tables[0]
        joined = pd.concat(frames)
        return joined.reindex([lane for lane in self.lanes if lane in joined.index])

    @cached_property
    def calls(self) -> pd.DataFrame:
        """Every run's call table, lane ids renamed."""
        return self._stacked(lambda run: run.calls)

    @cached_property
    def sessions(self) -> pd.DataFrame:
        """Every run's session table (QA counts under each run's own judge), lanes renamed."""
        return self._stacked(lambda run: run.sessions)

    @cached_property
    def qa_answers(self) -> pd.DataFrame:
        """Every run's memory-QA answers, lane ids renamed."""
        return self._stacked(lambda run: run.qa_answers)

    @cached_property
    def summary(self) -> pd.DataFrame:
        """Every run's summary, lane ids renamed and labels ``run: configuration``."""
        summary = self._by_lane(lambda run: run.summary)
        if summary.empty:
            return summary
        summary["label"] = [self.label(str(lane)) for lane in summary.index]
        summary.index.name = "lane_id"
        return summary

    @cached_property
    def failures(self) -> pd.DataFrame:
        """Every run's parse outcomes (an outcome one run never had counts 0 there)."""
        table = self._by_lane(lambda run: run.failures)
        if table.empty:
            return table
        # Outcome columns sorted, as each run's pivot table sorts them.
        table = table.reindex(columns=sorted(table.columns)).fillna(0).astype(int)
        table.index.name, table.columns.name = "lane_id", "outcome"
        return table

    @cached_property
    def violations(self) -> pd.DataFrame:
        """Every run's schema violations, lane ids renamed."""
        return self._stacked(lambda run: run.violations)


def _unique_names(names: Sequence[str]) -> list[str]:
    """``names`` with a repeat numbered (``name (2)``): two directories may share a name."""
    unique: list[str] = []
    for name in names:
        shown, k = name, 2
        while shown in unique:
            shown, k = f"{name} ({k})", k + 1
        unique.append(shown)
    return unique


def _shared_judge(runs: Sequence[Run]) -> str | None:
    """The headline judge when every run with memory QA has the same one, else ``None``."""
    judges = {run.judge for run in runs if not run.qa_answers.empty}
    return judges.pop() if len(judges) == 1 else None


def qa_chart_runs(runs: Sequence[Run]) -> list[tuple[Run, str]]:
    """What the memory-QA charts of ``runs`` draw, each with its name: runs graded by the
    same judges (the same headline judge) with the same interval settings overlaid, one chart
    of each kind; else each run apart (one judge's accuracy is not drawn beside another's)."""
    first = runs[0] if runs else None
    if (
        first is not None
        and len(runs) > 1
        and all(
            (run.judges, run.judge, run.stats) == (first.judges, first.judge, first.stats)
            for run in runs
        )
    ):
        overlay = Overlay.of(runs)
        return [(overlay, ", ".join(name for name, _ in overlay.members) + " overlaid")]
    return [(run, run.name) for run in runs]
