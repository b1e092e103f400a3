"""Sweeps: a grid resolved into lanes, replayed over a dataset, kept in a run directory.

A sweep is planned (:func:`plan_sweep`: every name in the grid resolved into
:class:`ResolvedLane`\\ s, bad input rejected before anything runs), executed (each
(lane, owner) replay on a thread pool or a Dask cluster, on a virtual clock), and collected
into a :class:`Run`: the run directory's tables as DataFrames, scored by
:mod:`memlab.scoring`. :func:`rescore` scores a finished run again with another matcher;
:func:`add_qa` asks its memories the dataset's questions (memory QA), :func:`add_curve` asks
the correctly answered ones again after later sessions (the consolidation curve).

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.grids.grid import AXES, ForkSpec, Grid, GridError, LaneConfig
    from memlab.grids.lane_backends import BackendFactory
    from memlab.grids.qa_spec import QAError, QASpec
    from memlab.postrun.audit import draw_sheet
    from memlab.postrun.consolidation import add_curve
    from memlab.postrun.qa_step import IncompleteQAError, JudgeErrorsError, add_qa
    from memlab.postrun.rescoring import RescoreError, rescore
    from memlab.runs.records import RecordError
    from memlab.runs.run import Run, RunError, load_run
    from memlab.runs.run_dataset import DatasetChangedError
    from memlab.runs.run_lock import RunLockedError
    from memlab.sweeps.driver import IncompleteSweepError, sweep
    from memlab.sweeps.executors import DaskSpec, ExecutorError, SweepExecutor, parse_executor
    from memlab.sweeps.fork import describe_fork
    from memlab.sweeps.plan import (
        PromptSource,
        ResolvedLane,
        SweepPlan,
        load_grid,
        plan_sweep,
    )
    from memlab.sweeps.replay import OwnerReplay, replay_owner

_EXPORTS: dict[str, str] = {
    "draw_sheet": "memlab.postrun.audit",
    "add_curve": "memlab.postrun.consolidation",
    "IncompleteSweepError": "memlab.sweeps.driver",
    "SweepPlan": "memlab.sweeps.plan",
    "plan_sweep": "memlab.sweeps.plan",
    "sweep": "memlab.sweeps.driver",
    "DaskSpec": "memlab.sweeps.executors",
    "ExecutorError": "memlab.sweeps.executors",
    "SweepExecutor": "memlab.sweeps.executors",
    "parse_executor": "memlab.sweeps.executors",
    "describe_fork": "memlab.sweeps.fork",
    "AXES": "memlab.grids.grid",
    "ForkSpec": "memlab.grids.grid",
    "Grid": "memlab.grids.grid",
    "GridError": "memlab.grids.grid",
    "LaneConfig": "memlab.grids.grid",
    "load_grid": "memlab.sweeps.plan",
    "BackendFactory": "memlab.grids.lane_backends",
    "PromptSource": "memlab.sweeps.plan",
    "ResolvedLane": "memlab.sweeps.plan",
    "QAError": "memlab.grids.qa_spec",
    "QASpec": "memlab.grids.qa_spec",
    "IncompleteQAError": "memlab.postrun.qa_step",
    "JudgeErrorsError": "memlab.postrun.qa_step",
    "add_qa": "memlab.postrun.qa_step",
    "RecordError": "memlab.runs.records",
    "OwnerReplay": "memlab.sweeps.replay",
    "replay_owner": "memlab.sweeps.replay",
    "RescoreError": "memlab.postrun.rescoring",
    "rescore": "memlab.postrun.rescoring",
    "Run": "memlab.runs.run",
    "RunError": "memlab.runs.run",
    "load_run": "memlab.runs.run",
    "DatasetChangedError": "memlab.runs.run_dataset",
    "RunLockedError": "memlab.runs.run_lock",
}

__all__ = [
    "AXES",
    "BackendFactory",
    "DaskSpec",
    "DatasetChangedError",
    "ExecutorError",
    "ForkSpec",
    "Grid",
    "GridError",
    "IncompleteQAError",
    "IncompleteSweepError",
    "JudgeErrorsError",
    "LaneConfig",
    "OwnerReplay",
    "PromptSource",
    "QAError",
    "QASpec",
    "RecordError",
    "RescoreError",
    "ResolvedLane",
    "Run",
    "RunError",
    "RunLockedError",
    "SweepExecutor",
    "SweepPlan",
    "add_curve",
    "add_qa",
    "describe_fork",
    "draw_sheet",
    "load_grid",
    "load_run",
    "parse_executor",
    "plan_sweep",
    "replay_owner",
    "rescore",
    "sweep",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
