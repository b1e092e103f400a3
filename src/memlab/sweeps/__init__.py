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
    from memlab.sweeps.audit import draw_sheet
    from memlab.sweeps.consolidation import add_curve
    from memlab.sweeps.driver import IncompleteSweepError, sweep
    from memlab.sweeps.executors import DaskSpec, ExecutorError, SweepExecutor, parse_executor
    from memlab.sweeps.fork import describe_fork
    from memlab.sweeps.grid import AXES, ForkSpec, Grid, GridError, LaneConfig
    from memlab.sweeps.lane_backends import BackendFactory
    from memlab.sweeps.plan import (
        PromptSource,
        ResolvedLane,
        SweepPlan,
        load_grid,
        plan_sweep,
    )
    from memlab.sweeps.qa_spec import QAError, QASpec
    from memlab.sweeps.qa_step import IncompleteQAError, JudgeErrorsError, add_qa
    from memlab.sweeps.records import RecordError
    from memlab.sweeps.replay import OwnerReplay, replay_owner
    from memlab.sweeps.rescoring import RescoreError, rescore
    from memlab.sweeps.run import Run, RunError, load_run
    from memlab.sweeps.run_dataset import DatasetChangedError
    from memlab.sweeps.run_lock import RunLockedError

_EXPORTS: dict[str, str] = {
    "draw_sheet": "memlab.sweeps.audit",
    "add_curve": "memlab.sweeps.consolidation",
    "IncompleteSweepError": "memlab.sweeps.driver",
    "SweepPlan": "memlab.sweeps.plan",
    "plan_sweep": "memlab.sweeps.plan",
    "sweep": "memlab.sweeps.driver",
    "DaskSpec": "memlab.sweeps.executors",
    "ExecutorError": "memlab.sweeps.executors",
    "SweepExecutor": "memlab.sweeps.executors",
    "parse_executor": "memlab.sweeps.executors",
    "describe_fork": "memlab.sweeps.fork",
    "AXES": "memlab.sweeps.grid",
    "ForkSpec": "memlab.sweeps.grid",
    "Grid": "memlab.sweeps.grid",
    "GridError": "memlab.sweeps.grid",
    "LaneConfig": "memlab.sweeps.grid",
    "load_grid": "memlab.sweeps.plan",
    "BackendFactory": "memlab.sweeps.lane_backends",
    "PromptSource": "memlab.sweeps.plan",
    "ResolvedLane": "memlab.sweeps.plan",
    "QAError": "memlab.sweeps.qa_spec",
    "QASpec": "memlab.sweeps.qa_spec",
    "IncompleteQAError": "memlab.sweeps.qa_step",
    "JudgeErrorsError": "memlab.sweeps.qa_step",
    "add_qa": "memlab.sweeps.qa_step",
    "RecordError": "memlab.sweeps.records",
    "OwnerReplay": "memlab.sweeps.replay",
    "replay_owner": "memlab.sweeps.replay",
    "RescoreError": "memlab.sweeps.rescoring",
    "rescore": "memlab.sweeps.rescoring",
    "Run": "memlab.sweeps.run",
    "RunError": "memlab.sweeps.run",
    "load_run": "memlab.sweeps.run",
    "DatasetChangedError": "memlab.sweeps.run_dataset",
    "RunLockedError": "memlab.sweeps.run_lock",
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
