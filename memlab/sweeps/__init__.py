"""Sweeps: a grid resolved into lanes, replayed over a dataset, kept in a run directory.

A sweep (:func:`sweep`) is planned (:func:`~memlab.sweeps.plan.plan_sweep`: every name in
the grid resolved into :class:`~memlab.sweeps.plan.ResolvedLane`\\ s, bad input rejected
before anything runs), executed (each (lane, owner) replay on a thread pool or a Dask
cluster, on a virtual clock), and collected into a :class:`memlab.runs.Run`: the run
directory's tables as DataFrames, scored by :mod:`memlab.scoring`. The steps over a finished
run (rescoring, memory QA, the consolidation curve) are :mod:`memlab.postrun`'s.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.sweeps.driver import IncompleteSweepError as IncompleteSweepError
    from memlab.sweeps.driver import sweep as sweep
    from memlab.sweeps.executors import DaskSpec as DaskSpec
    from memlab.sweeps.executors import ExecutorError as ExecutorError
    from memlab.sweeps.executors import parse_executor as parse_executor
    from memlab.sweeps.fork import describe_fork as describe_fork
    from memlab.sweeps.plan import load_grid as load_grid
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
