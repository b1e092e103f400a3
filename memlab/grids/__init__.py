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
    from memlab.grids.grid import ForkSpec as ForkSpec
    from memlab.grids.grid import Grid as Grid
    from memlab.grids.grid import GridError as GridError
    from memlab.grids.lane import AXES as AXES
    from memlab.grids.lane import LaneConfig as LaneConfig
    from memlab.grids.lane_backends import BackendFactory as BackendFactory
    from memlab.grids.owners import select_owners as select_owners
    from memlab.grids.qa_spec import QAError as QAError
    from memlab.grids.qa_spec import QASpec as QASpec
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
