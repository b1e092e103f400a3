"""Memory QA, the whole feature: does the memory help the agent answer?

This face names the feature's API wherever each part lives. Memory QA spans the layers of
``docs/architecture.md`` (a part may use only the parts below it), so its modules sit in the
layer each needs; the table "Memory QA as one feature" in ``docs/architecture.md`` maps every
module. From the bottom up:

- ``memlab.qa``: the answer and judge prompts (:mod:`~memlab.qa.qa_prompts`), what an answer
  prompt receives (:mod:`~memlab.qa.conditions`), answering and grading
  (:mod:`~memlab.qa.answering`), the answer scores (:mod:`~memlab.qa.answer_scores`), judge
  replies (:mod:`~memlab.qa.verdicts`), the judge calibration set
  (:mod:`~memlab.qa.judge_calibration`) and the reply bound (:mod:`~memlab.qa.reply_bounds`);
- the simulated model's answers and verdicts with known truth
  (:mod:`memlab.simulation.qa_replies`, a test instrument);
- numbers: accuracy, the judge band, the answer-key ceiling, cost
  (:mod:`memlab.scoring.qa.qa_metrics`), why an answer from memory is wrong
  (:mod:`memlab.scoring.qa.qa_causes`) and a judge's audit on the calibration set
  (:mod:`memlab.scoring.qa.judge_audit`);
- the grid's ``qa:`` key (:mod:`memlab.grids.qa_spec`);
- the steps over a finished run: :func:`add_qa` (:mod:`memlab.postrun.qa_step`, on
  :mod:`~memlab.postrun.qa_jobs` and :mod:`~memlab.postrun.qa_calls`), the consolidation
  curve (:func:`add_curve`) and the audits of a run's judges
  (:mod:`memlab.postrun.judge_audit_step`);
- the report's section, charts and judge audits (:mod:`memlab.reporting.qa.qa_section`,
  :mod:`~memlab.reporting.qa.qa_charts`, :mod:`~memlab.reporting.qa.qa_audits`);
- the command ``memlab qa`` and ``memlab judge`` (:mod:`memlab.cli.experiment.qa`,
  :mod:`~memlab.cli.experiment.qa_options`, :mod:`~memlab.cli.experiment.judge`).

The face sits at the top of the layers, so it may name any of them; nothing in memlab imports
it. Names are imported on first use (see :mod:`memlab._lazy`): ``import memlab.memory_qa``
loads nothing else, and ``memlab.memory_qa.token_f1`` loads only :mod:`memlab.qa.answer_scores`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.grids.qa_spec import QAError as QAError
    from memlab.grids.qa_spec import QASpec as QASpec
    from memlab.postrun.consolidation import add_curve as add_curve
    from memlab.postrun.consolidation import curve as curve
    from memlab.postrun.judge_audit_step import audit_run_judges as audit_run_judges
    from memlab.postrun.judge_audit_step import run_judge_audit as run_judge_audit
    from memlab.postrun.qa_step import IncompleteQAError as IncompleteQAError
    from memlab.postrun.qa_step import JudgeErrorsError as JudgeErrorsError
    from memlab.postrun.qa_step import QAOptions as QAOptions
    from memlab.postrun.qa_step import add_qa as add_qa
    from memlab.qa.answer_scores import bleu1 as bleu1
    from memlab.qa.answer_scores import is_abstention as is_abstention
    from memlab.qa.answer_scores import mem0_f1 as mem0_f1
    from memlab.qa.answer_scores import multi_answer_f1 as multi_answer_f1
    from memlab.qa.answer_scores import token_f1 as token_f1
    from memlab.qa.answering import AnswerSettings as AnswerSettings
    from memlab.qa.answering import ReplayPoint as ReplayPoint
    from memlab.qa.answering import ask as ask
    from memlab.qa.conditions import CONDITIONS as CONDITIONS
    from memlab.qa.conditions import ReadPath as ReadPath
    from memlab.qa.conditions import gold_memory_document as gold_memory_document
    from memlab.qa.judge_calibration import JudgeCalibrationSet as JudgeCalibrationSet
    from memlab.qa.judge_calibration import JudgeTriple as JudgeTriple
    from memlab.qa.judge_calibration import load_judge_calibration as load_judge_calibration
    from memlab.qa.qa_prompts import ABSTAIN_REFERENCE as ABSTAIN_REFERENCE
    from memlab.qa.qa_prompts import AnswerPrompt as AnswerPrompt
    from memlab.qa.qa_prompts import JudgePrompt as JudgePrompt
    from memlab.qa.qa_prompts import answer_prompts as answer_prompts
    from memlab.qa.qa_prompts import judge_prompts as judge_prompts
    from memlab.qa.verdicts import parse_verdict as parse_verdict
    from memlab.reporting.qa.qa_audits import judge_audit_table as judge_audit_table
    from memlab.reporting.qa.qa_charts import qa_accuracy_chart as qa_accuracy_chart
    from memlab.reporting.qa.qa_charts import qa_causes_chart as qa_causes_chart
    from memlab.reporting.qa.qa_charts import qa_judge_band_chart as qa_judge_band_chart
    from memlab.reporting.qa.qa_judges import judge_robustness as judge_robustness
    from memlab.reporting.qa.qa_section import qa_html as qa_html
    from memlab.reporting.qa.qa_section import qa_markdown as qa_markdown
    from memlab.reporting.qa.qa_section import qa_section as qa_section
    from memlab.reporting.qa.qa_section import qa_text as qa_text
    from memlab.scoring.qa.judge_audit import JudgeAudit as JudgeAudit
    from memlab.scoring.qa.judge_audit import audit_judges as audit_judges
    from memlab.scoring.qa.qa_causes import CAUSES as CAUSES
    from memlab.scoring.qa.qa_causes import FATES as FATES
    from memlab.scoring.qa.qa_causes import cause_of as cause_of
    from memlab.scoring.qa.qa_causes import evidence_fates as evidence_fates
    from memlab.scoring.qa.qa_metrics import accuracy_table as accuracy_table
    from memlab.scoring.qa.qa_metrics import cause_table as cause_table
    from memlab.scoring.qa.qa_metrics import interval_note as interval_note
    from memlab.scoring.qa.qa_metrics import judge_band as judge_band
    from memlab.scoring.qa.qa_metrics import key_ceiling as key_ceiling
    from memlab.scoring.qa.qa_metrics import qa_cost as qa_cost
    from memlab.scoring.qa.qa_verdicts import error_counts as error_counts
    from memlab.scoring.qa.qa_verdicts import errors_sentence as errors_sentence
    from memlab.scoring.qa.qa_verdicts import verdict_table as verdict_table
    from memlab.simulation.qa_replies import SimQA as SimQA
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
