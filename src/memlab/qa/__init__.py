"""Memory QA's lowest part: its prompts, conditions, answering and answer scores.

Questions live in the dataset (:class:`memlab.datasets.Question`); this package holds what
asks them, the prompts that produce and grade the answers and what scores them. The whole
feature (its metrics, causes, step, reports) is named by :mod:`memlab.memory_qa`.

- prompts (:mod:`~memlab.qa.qa_prompts`): the agent's answer prompt and the judges' prompts,
  content-addressed templates in registries of their own (:func:`answer_prompts`,
  :func:`judge_prompts`; built in: the ``default`` answer prompt, the ``lenient`` and
  ``strict`` judges);
- answer scores: LoCoMo's token F1 (:func:`token_f1`, :func:`multi_answer_f1`), mem0's BLEU-1
  (:func:`bleu1`) and F1 (:func:`mem0_f1`), abstention detection (:func:`is_abstention`);
- judge replies: :func:`parse_verdict`;
- the judge calibration set (:mod:`~memlab.qa.judge_calibration`): triples with verdicts
  decided by reading (:func:`load_judge_calibration`, :class:`JudgeTriple`), what
  ``memlab judge audit`` measures a judge against;
- conditions (:mod:`~memlab.qa.conditions`): what the answer prompt receives (``memory``,
  ``none``, ``full_context``, ``gold_memory``) through a lane's read path (:class:`ReadPath`);
- answering (:mod:`~memlab.qa.answering`): the questions asked at a point of a replay
  (:class:`ReplayPoint`), their requests, grading and scored rows; :func:`ask` runs them;
- the reply bound (:mod:`~memlab.qa.reply_bounds`): a longer answer or verdict is a failed call.

It is a layer of its own: it depends on ``memlab.core``, ``memlab.backends`` and
``memlab.datasets`` only, and the simulated model, the matchers and the memory designs above
it may use it (the simulated judge reads back a judge prompt).

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.qa.answer_scores import (
        ABSTENTION_PATTERNS,
        answer_tokens,
        bleu1,
        bleu_tokens,
        is_abstention,
        mem0_f1,
        multi_answer_f1,
        normalize_answer,
        token_f1,
    )
    from memlab.qa.answering import (
        ANSWER_KEYS,
        AnswerSettings,
        AnswerTask,
        CallResult,
        JudgeTask,
        ReplayPoint,
        answer_row,
        answer_tasks,
        ask,
        call,
        judge_tasks,
        references,
    )
    from memlab.qa.conditions import (
        CONDITIONS,
        Condition,
        Context,
        History,
        Injector,
        ReadPath,
        gold_memory_document,
    )
    from memlab.qa.judge_calibration import (
        JudgeCalibrationSet,
        JudgeTriple,
        load_judge_calibration,
    )
    from memlab.qa.qa_prompts import (
        ABSTAIN_REFERENCE,
        AnswerPrompt,
        JudgePrompt,
        answer_prompts,
        judge_prompts,
    )
    from memlab.qa.verdicts import parse_verdict

_EXPORTS: dict[str, str] = {
    "ABSTAIN_REFERENCE": "memlab.qa.qa_prompts",
    "AnswerPrompt": "memlab.qa.qa_prompts",
    "JudgePrompt": "memlab.qa.qa_prompts",
    "answer_prompts": "memlab.qa.qa_prompts",
    "judge_prompts": "memlab.qa.qa_prompts",
    "ABSTENTION_PATTERNS": "memlab.qa.answer_scores",
    "answer_tokens": "memlab.qa.answer_scores",
    "bleu1": "memlab.qa.answer_scores",
    "bleu_tokens": "memlab.qa.answer_scores",
    "is_abstention": "memlab.qa.answer_scores",
    "mem0_f1": "memlab.qa.answer_scores",
    "multi_answer_f1": "memlab.qa.answer_scores",
    "normalize_answer": "memlab.qa.answer_scores",
    "token_f1": "memlab.qa.answer_scores",
    "ANSWER_KEYS": "memlab.qa.answering",
    "AnswerSettings": "memlab.qa.answering",
    "AnswerTask": "memlab.qa.answering",
    "CallResult": "memlab.qa.answering",
    "JudgeTask": "memlab.qa.answering",
    "ReplayPoint": "memlab.qa.answering",
    "answer_row": "memlab.qa.answering",
    "answer_tasks": "memlab.qa.answering",
    "ask": "memlab.qa.answering",
    "call": "memlab.qa.answering",
    "judge_tasks": "memlab.qa.answering",
    "references": "memlab.qa.answering",
    "CONDITIONS": "memlab.qa.conditions",
    "Condition": "memlab.qa.conditions",
    "Context": "memlab.qa.conditions",
    "History": "memlab.qa.conditions",
    "Injector": "memlab.qa.conditions",
    "ReadPath": "memlab.qa.conditions",
    "gold_memory_document": "memlab.qa.conditions",
    "JudgeCalibrationSet": "memlab.qa.judge_calibration",
    "JudgeTriple": "memlab.qa.judge_calibration",
    "load_judge_calibration": "memlab.qa.judge_calibration",
    "parse_verdict": "memlab.qa.verdicts",
}

__all__ = [
    "ABSTAIN_REFERENCE",
    "ABSTENTION_PATTERNS",
    "ANSWER_KEYS",
    "CONDITIONS",
    "AnswerPrompt",
    "AnswerSettings",
    "AnswerTask",
    "CallResult",
    "Condition",
    "Context",
    "History",
    "Injector",
    "JudgeCalibrationSet",
    "JudgePrompt",
    "JudgeTask",
    "JudgeTriple",
    "ReadPath",
    "ReplayPoint",
    "answer_prompts",
    "answer_row",
    "answer_tasks",
    "answer_tokens",
    "ask",
    "bleu1",
    "bleu_tokens",
    "call",
    "gold_memory_document",
    "is_abstention",
    "judge_prompts",
    "judge_tasks",
    "load_judge_calibration",
    "mem0_f1",
    "multi_answer_f1",
    "normalize_answer",
    "parse_verdict",
    "references",
    "token_f1",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
