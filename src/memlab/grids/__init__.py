"""Grids: a sweep's definition and the settings of its lanes.

:class:`Grid` is the grid file (lane settings by name, validated with line numbers),
:class:`LaneConfig` one point of it, :class:`QASpec` its ``qa:`` key (memory QA), and
:class:`BackendFactory` how a lane's backend names become backends. Planning
(:mod:`memlab.sweeps`), the run readers (:mod:`memlab.runs`) and the post-run steps
(:mod:`memlab.postrun`) build on these.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.grids.grid import AXES, ForkSpec, Grid, GridError, LaneConfig
    from memlab.grids.lane_backends import BackendFactory
    from memlab.grids.owners import select_owners
    from memlab.grids.qa_spec import QAError, QASpec

_EXPORTS: dict[str, str] = {
    "AXES": "memlab.grids.grid",
    "ForkSpec": "memlab.grids.grid",
    "Grid": "memlab.grids.grid",
    "GridError": "memlab.grids.grid",
    "LaneConfig": "memlab.grids.grid",
    "BackendFactory": "memlab.grids.lane_backends",
    "select_owners": "memlab.grids.owners",
    "QAError": "memlab.grids.qa_spec",
    "QASpec": "memlab.grids.qa_spec",
}

__all__ = [
    "AXES",
    "BackendFactory",
    "ForkSpec",
    "Grid",
    "GridError",
    "LaneConfig",
    "QAError",
    "QASpec",
    "select_owners",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
