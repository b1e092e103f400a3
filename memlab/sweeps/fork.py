"""Forks: every lane of a sweep starts one session from a reference lane's memory.

A grid with ``fork: {run: PATH, lane: LANE_ID, at_session: K}`` replays, for each owner, the
sessions from ``K`` on, starting from the memory the reference lane held after session
``K - 1`` (the owner record's ``snapshots``). Prompts, policies or merge settings are then
compared from identical prior state, and sessions before ``K`` cost no LLM call.

:func:`load_fork` checks the reference before anything runs: the run is finished, the lane is
one of its lanes, each owner was replayed completely for at least ``K`` sessions, and the
owner's first ``K`` sessions in this sweep's dataset are the ones the reference replayed.
The fork's identity (run, lane, ``K`` and a hash of every snapshot used) enters each lane's
identity, so a resumed sweep replays when the reference memory changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from memlab.core.base.jsontext import canonical_hash
from memlab.core.jsondoc.document import MemoryDocument
from memlab.datasets.loader import load_dataset
from memlab.datasets.models import Owner
from memlab.errors import MemlabError
from memlab.grids.grid import ForkSpec, Grid
from memlab.runs.run import Run, RunError, load_run

__all__ = ["Fork", "ForkStart", "describe_fork", "load_fork"]


@dataclass(frozen=True)
class ForkStart:
    """One owner's starting point.

    Attributes:
        snapshots: The reference lane's memory after each session before the fork
            (``snapshots[-1]`` is the memory the forked sessions start from).
        sha256: Hash of the starting memory.
    """

    snapshots: tuple[MemoryDocument, ...]
    sha256: str

    @property
    def memory(self) -> MemoryDocument:
        """The memory the first forked session starts from."""
        return self.snapshots[-1]


@dataclass(frozen=True)
class Fork:
    """A resolved fork: the spec, where the reference run is, and every owner's start."""

    spec: ForkSpec
    run_path: Path
    starts: Mapping[str, ForkStart]

    @property
    def at_session(self) -> int:
        """The first session replayed (0-based)."""
        return self.spec.at_session

    def start(self, user_id: str) -> ForkStart:
        """The start of ``user_id`` (a KeyError names owners the fork was not loaded for)."""
        return self.starts[user_id]

    def identity(self) -> dict[str, Any]:
        """What enters each lane's identity: run, lane, session and the snapshots' hash."""
        return {
            "run": self.run_path.name,
            "lane": self.spec.lane,
            "at_session": self.spec.at_session,
            "snapshots_sha256": canonical_hash({u: s.sha256 for u, s in self.starts.items()}),
        }

    def record(self, user_id: str) -> dict[str, Any]:
        """What an owner record says about its start."""
        return {**self.spec.model_dump(), "snapshot_sha256": self.start(user_id).sha256}


def describe_fork(spec: ForkSpec) -> str:
    """One sentence for reports: where the lanes started and what the metrics cover."""
    return (
        f"forked from run {Path(spec.run).name}, lane {spec.lane}, at session "
        f"{spec.at_session}: every lane started that session from the reference lane's "
        f"memory, earlier sessions were not replayed, and metrics cover sessions "
        f"{spec.at_session} on"
    )


def load_fork(grid: Grid, owners: Sequence[Owner]) -> Fork | None:
    """Resolve ``grid.fork`` for ``owners`` (``None`` when the grid has no fork).

    Raises:
        GridError: At ``fork.run``, ``fork.lane`` or ``fork.at_session``, saying what does not
            match and how to fix it.
    """
    spec = grid.fork
    if spec is None:
        return None
    path = Path(spec.run)
    path = path if path.is_absolute() else grid.base_dir / path
    try:
        reference = load_run(path)
    except MemlabError as exc:
        raise grid.error("fork.run", f"not a finished run: {exc}") from None
    if spec.lane not in reference.lanes:
        known = ", ".join(reference.lanes)
        raise grid.error("fork.lane", f"no lane {spec.lane!r} in {path}; its lanes: {known}")
    if reference.dataset_path is None:
        raise grid.error(
            "fork.run", f"{path}: the dataset it replayed is missing; restore it to fork"
        )
    replayed = {o.user_id: o for o in load_dataset(reference.dataset_path)}
    starts = {
        owner.user_id: _start(grid, reference, spec, owner, replayed.get(owner.user_id))
        for owner in owners
    }
    return Fork(spec, path, starts)


def _start(
    grid: Grid, reference: Run, spec: ForkSpec, owner: Owner, replayed: Owner | None
) -> ForkStart:
    k = spec.at_session
    if k >= len(owner.sessions):
        raise grid.error(
            "fork.at_session",
            f"owner {owner.user_id!r} has {len(owner.sessions)} sessions: nothing left to "
            f"replay from session {k} (sessions are numbered from 0)",
        )
    where = reference.dir.record(spec.lane, owner.user_id)
    try:
        record = reference.dir.read_owner_record(spec.lane, owner.user_id)
        snapshots = record["snapshots"]
    except RunError:
        raise grid.error(
            "fork.run",
            f"no replay of owner {owner.user_id!r} at {where}; fork a run that "
            "replayed every owner of this sweep",
        ) from None
    if not record.get("complete", True) or len(snapshots) < k:
        raise grid.error(
            "fork.at_session",
            f"the reference replay of {owner.user_id!r} is incomplete or has only "
            f"{len(snapshots)} sessions; fork at session {len(snapshots)} or earlier",
        )
    if replayed is None or _sessions_sha(replayed, k) != _sessions_sha(owner, k):
        raise grid.error(
            "fork.run",
            f"owner {owner.user_id!r}: the first {k} sessions differ from the ones the "
            "reference run replayed; fork a run of the same dataset",
        )
    # Documents the reference replay's pipeline wrote (the record is checked above).
    start = tuple(cast(MemoryDocument, dict(s)) for s in snapshots[:k])
    return ForkStart(start, canonical_hash(start[-1]))


def _sessions_sha(owner: Owner, count: int) -> str:
    return canonical_hash([s.model_dump(mode="json") for s in owner.sessions[:count]])
