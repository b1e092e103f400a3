"""Runs: the run directory and everything that reads one.

:class:`RunDir` owns the layout of a run directory (where each file lives), its writes (atomic,
inside the directory, no link followed), its manifests and their checksums, and its lock; the
sweep and the post-run steps write through it. :class:`Run` reads a finished run as DataFrames
(:func:`load_run`), :func:`~memlab.runs.run_index.list_runs` lists the runs of a folder, and
views registered through :mod:`memlab.plugins` show a run in a notebook. This package sits
below the code that produces runs (:mod:`memlab.sweeps`, :mod:`memlab.postrun`), so a report
or a comparison reads a run without importing the sweep.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.runs.records import RecordError
    from memlab.runs.run import Run, RunError, load_run
    from memlab.runs.run_dataset import DatasetChangedError
    from memlab.runs.run_index import RunEntry, list_runs
    from memlab.runs.run_lock import RunLockedError
    from memlab.runs.rundir import RunDir

_EXPORTS: dict[str, str] = {
    "RecordError": "memlab.runs.records",
    "Run": "memlab.runs.run",
    "RunError": "memlab.runs.run",
    "load_run": "memlab.runs.run",
    "DatasetChangedError": "memlab.runs.run_dataset",
    "RunEntry": "memlab.runs.run_index",
    "list_runs": "memlab.runs.run_index",
    "RunLockedError": "memlab.runs.run_lock",
    "RunDir": "memlab.runs.rundir",
}

__all__ = [
    "DatasetChangedError",
    "RecordError",
    "Run",
    "RunDir",
    "RunEntry",
    "RunError",
    "RunLockedError",
    "list_runs",
    "load_run",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
