"""The owners a sweep of a grid replays (its ``owners``, ``max_owners`` and ``max_sessions``
keys): chosen once here for the sweep, the QA steps and ``memlab init``."""

from __future__ import annotations

from collections.abc import Sequence

from memlab.datasets.models import Owner
from memlab.grids.grid import Grid

__all__ = ["select_owners"]


def select_owners(owners: Sequence[Owner], grid: Grid) -> list[Owner]:
    """The owners a sweep of ``grid`` replays: its ``owners``, the first ``max_owners``, each
    cut to ``max_sessions`` sessions.

    Raises:
        GridError: At ``owners`` when one of them is not in the dataset.
    """
    selected = [o for o in owners if grid.owners is None or o.user_id in grid.owners]
    if grid.owners is not None:
        missing = set(grid.owners) - {o.user_id for o in selected}
        if missing:
            raise grid.error("owners", f"unknown owners: {sorted(missing)}")
    if grid.max_owners:
        selected = selected[: grid.max_owners]
    if not selected:  # a run of no owners would be "complete" with no results
        raise grid.error("owners", "the grid selects no owners of the dataset")
    if grid.max_sessions:
        selected = [
            o.model_copy(update={"sessions": o.sessions[: grid.max_sessions]}) for o in selected
        ]
    return selected
