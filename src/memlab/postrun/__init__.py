"""Post-run steps: what is done to a finished run.

:func:`add_qa` asks the run's memories the dataset's questions (memory QA), :func:`add_curve`
asks the correctly answered ones again after later sessions (the consolidation curve),
:func:`rescore` scores the run again with another matcher and :func:`draw_sheet` draws a
labelling sheet of its matcher decisions. Each writes into the run through
:class:`memlab.runs.RunDir`, holding the run's lock; :class:`Progress` reports a long step.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.postrun.audit import draw_sheet
    from memlab.postrun.consolidation import add_curve
    from memlab.postrun.progress import Progress
    from memlab.postrun.qa_step import IncompleteQAError, JudgeErrorsError, add_qa
    from memlab.postrun.rescoring import RescoreError, rescore

_EXPORTS: dict[str, str] = {
    "draw_sheet": "memlab.postrun.audit",
    "add_curve": "memlab.postrun.consolidation",
    "Progress": "memlab.postrun.progress",
    "IncompleteQAError": "memlab.postrun.qa_step",
    "JudgeErrorsError": "memlab.postrun.qa_step",
    "add_qa": "memlab.postrun.qa_step",
    "RescoreError": "memlab.postrun.rescoring",
    "rescore": "memlab.postrun.rescoring",
}

__all__ = [
    "IncompleteQAError",
    "JudgeErrorsError",
    "Progress",
    "RescoreError",
    "add_curve",
    "add_qa",
    "draw_sheet",
    "rescore",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
