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
    from memlab.postrun.audit import draw_sheet as draw_sheet
    from memlab.postrun.consolidation import add_curve as add_curve
    from memlab.postrun.progress import Progress as Progress
    from memlab.postrun.qa_step import IncompleteQAError as IncompleteQAError
    from memlab.postrun.qa_step import JudgeErrorsError as JudgeErrorsError
    from memlab.postrun.qa_step import add_qa as add_qa
    from memlab.postrun.rescoring import RescoreError as RescoreError
    from memlab.postrun.rescoring import rescore as rescore
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
