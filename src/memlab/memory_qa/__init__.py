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
  (:mod:`memlab.scoring.qa_metrics`), why an answer from memory is wrong
  (:mod:`memlab.scoring.qa_causes`) and a judge's audit on the calibration set
  (:mod:`memlab.scoring.judge_audit`);
- the grid's ``qa:`` key (:mod:`memlab.grids.qa_spec`);
- the steps over a finished run: :func:`add_qa` (:mod:`memlab.postrun.qa_step`, on
  :mod:`~memlab.postrun.qa_jobs` and :mod:`~memlab.postrun.qa_calls`), the consolidation
  curve (:func:`add_curve`) and the audits of a run's judges
  (:mod:`memlab.postrun.judge_audit_step`);
- the report's section, charts and judge audits (:mod:`memlab.reporting.qa_section`,
  :mod:`~memlab.reporting.qa_charts`, :mod:`~memlab.reporting.qa_audits`);
- the command ``memlab qa`` and ``memlab judge`` (:mod:`memlab.cli.qa`,
  :mod:`~memlab.cli.qa_options`, :mod:`~memlab.cli.judge`).

The face sits at the top of the layers, so it may name any of them; nothing in memlab imports
it. Names are imported on first use (see :mod:`memlab._lazy`): ``import memlab.memory_qa``
loads nothing else, and ``memlab.memory_qa.token_f1`` loads only :mod:`memlab.qa.answer_scores`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.grids.qa_spec import QAError, QASpec
    from memlab.postrun.consolidation import add_curve, curve
    from memlab.postrun.judge_audit_step import audit_run_judges, run_judge_audit
    from memlab.postrun.qa_step import IncompleteQAError, JudgeErrorsError, QAOptions, add_qa
    from memlab.qa.answer_scores import bleu1, is_abstention, mem0_f1, multi_answer_f1, token_f1
    from memlab.qa.answering import AnswerSettings, ReplayPoint, ask
    from memlab.qa.conditions import CONDITIONS, ReadPath, gold_memory_document
    from memlab.qa.judge_calibration import JudgeCalibrationSet, JudgeTriple, load_judge_calibration
    from memlab.qa.qa_prompts import (
        ABSTAIN_REFERENCE,
        AnswerPrompt,
        JudgePrompt,
        answer_prompts,
        judge_prompts,
    )
    from memlab.qa.verdicts import parse_verdict
    from memlab.reporting.qa_audits import judge_audit_table
    from memlab.reporting.qa_charts import qa_accuracy_chart, qa_causes_chart, qa_judge_band_chart
    from memlab.reporting.qa_section import (
        judge_robustness,
        qa_html,
        qa_markdown,
        qa_section,
        qa_text,
    )
    from memlab.scoring.judge_audit import JudgeAudit, audit_judges
    from memlab.scoring.qa_causes import CAUSES, FATES, cause_of, evidence_fates
    from memlab.scoring.qa_metrics import (
        accuracy_table,
        cause_table,
        error_counts,
        errors_sentence,
        interval_note,
        judge_band,
        key_ceiling,
        qa_cost,
        verdict_table,
    )
    from memlab.simulation.qa_replies import SimQA

# Where each exported name lives, by part of the feature from the bottom layer up.
_EXPORTS: dict[str, str] = {
    "ABSTAIN_REFERENCE": "memlab.qa.qa_prompts",
    "AnswerPrompt": "memlab.qa.qa_prompts",
    "JudgePrompt": "memlab.qa.qa_prompts",
    "answer_prompts": "memlab.qa.qa_prompts",
    "judge_prompts": "memlab.qa.qa_prompts",
    "CONDITIONS": "memlab.qa.conditions",
    "ReadPath": "memlab.qa.conditions",
    "gold_memory_document": "memlab.qa.conditions",
    "AnswerSettings": "memlab.qa.answering",
    "ReplayPoint": "memlab.qa.answering",
    "ask": "memlab.qa.answering",
    "bleu1": "memlab.qa.answer_scores",
    "is_abstention": "memlab.qa.answer_scores",
    "mem0_f1": "memlab.qa.answer_scores",
    "multi_answer_f1": "memlab.qa.answer_scores",
    "token_f1": "memlab.qa.answer_scores",
    "parse_verdict": "memlab.qa.verdicts",
    "JudgeCalibrationSet": "memlab.qa.judge_calibration",
    "JudgeTriple": "memlab.qa.judge_calibration",
    "load_judge_calibration": "memlab.qa.judge_calibration",
    "JudgeAudit": "memlab.scoring.judge_audit",
    "audit_judges": "memlab.scoring.judge_audit",
    "CAUSES": "memlab.scoring.qa_causes",
    "FATES": "memlab.scoring.qa_causes",
    "cause_of": "memlab.scoring.qa_causes",
    "evidence_fates": "memlab.scoring.qa_causes",
    "accuracy_table": "memlab.scoring.qa_metrics",
    "cause_table": "memlab.scoring.qa_metrics",
    "error_counts": "memlab.scoring.qa_metrics",
    "errors_sentence": "memlab.scoring.qa_metrics",
    "interval_note": "memlab.scoring.qa_metrics",
    "judge_band": "memlab.scoring.qa_metrics",
    "key_ceiling": "memlab.scoring.qa_metrics",
    "qa_cost": "memlab.scoring.qa_metrics",
    "verdict_table": "memlab.scoring.qa_metrics",
    "QAError": "memlab.grids.qa_spec",
    "QASpec": "memlab.grids.qa_spec",
    "IncompleteQAError": "memlab.postrun.qa_step",
    "JudgeErrorsError": "memlab.postrun.qa_step",
    "QAOptions": "memlab.postrun.qa_step",
    "add_qa": "memlab.postrun.qa_step",
    "add_curve": "memlab.postrun.consolidation",
    "curve": "memlab.postrun.consolidation",
    "audit_run_judges": "memlab.postrun.judge_audit_step",
    "run_judge_audit": "memlab.postrun.judge_audit_step",
    "SimQA": "memlab.simulation.qa_replies",
    "judge_robustness": "memlab.reporting.qa_section",
    "qa_html": "memlab.reporting.qa_section",
    "qa_markdown": "memlab.reporting.qa_section",
    "qa_section": "memlab.reporting.qa_section",
    "qa_text": "memlab.reporting.qa_section",
    "qa_accuracy_chart": "memlab.reporting.qa_charts",
    "qa_causes_chart": "memlab.reporting.qa_charts",
    "qa_judge_band_chart": "memlab.reporting.qa_charts",
    "judge_audit_table": "memlab.reporting.qa_audits",
}

__all__ = [
    "ABSTAIN_REFERENCE",
    "CAUSES",
    "CONDITIONS",
    "FATES",
    "AnswerPrompt",
    "AnswerSettings",
    "IncompleteQAError",
    "JudgeAudit",
    "JudgeCalibrationSet",
    "JudgeErrorsError",
    "JudgePrompt",
    "JudgeTriple",
    "QAError",
    "QAOptions",
    "QASpec",
    "ReadPath",
    "ReplayPoint",
    "SimQA",
    "accuracy_table",
    "add_curve",
    "add_qa",
    "answer_prompts",
    "ask",
    "audit_judges",
    "audit_run_judges",
    "bleu1",
    "cause_of",
    "cause_table",
    "curve",
    "error_counts",
    "errors_sentence",
    "evidence_fates",
    "gold_memory_document",
    "interval_note",
    "is_abstention",
    "judge_audit_table",
    "judge_band",
    "judge_prompts",
    "judge_robustness",
    "key_ceiling",
    "load_judge_calibration",
    "mem0_f1",
    "multi_answer_f1",
    "parse_verdict",
    "qa_accuracy_chart",
    "qa_causes_chart",
    "qa_cost",
    "qa_html",
    "qa_judge_band_chart",
    "qa_markdown",
    "qa_section",
    "qa_text",
    "run_judge_audit",
    "token_f1",
    "verdict_table",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
