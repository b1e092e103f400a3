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
    from memlab.runs.records import RecordError as RecordError
    from memlab.runs.run import Run as Run
    from memlab.runs.run import RunError as RunError
    from memlab.runs.run import load_run as load_run
    from memlab.runs.run_dataset import DatasetChangedError as DatasetChangedError
    from memlab.runs.run_index import list_runs as list_runs
    from memlab.runs.run_lock import RunLockedError as RunLockedError
    from memlab.runs.rundir import RunDir as RunDir
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
