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
    from memlab.qa.answer_scores import ABSTENTION_PATTERNS as ABSTENTION_PATTERNS
    from memlab.qa.answer_scores import answer_tokens as answer_tokens
    from memlab.qa.answer_scores import bleu1 as bleu1
    from memlab.qa.answer_scores import bleu_tokens as bleu_tokens
    from memlab.qa.answer_scores import is_abstention as is_abstention
    from memlab.qa.answer_scores import mem0_f1 as mem0_f1
    from memlab.qa.answer_scores import multi_answer_f1 as multi_answer_f1
    from memlab.qa.answer_scores import normalize_answer as normalize_answer
    from memlab.qa.answer_scores import token_f1 as token_f1
    from memlab.qa.answering import ANSWER_KEYS as ANSWER_KEYS
    from memlab.qa.answering import AnswerSettings as AnswerSettings
    from memlab.qa.answering import AnswerTask as AnswerTask
    from memlab.qa.answering import CallResult as CallResult
    from memlab.qa.answering import JudgeTask as JudgeTask
    from memlab.qa.answering import ReplayPoint as ReplayPoint
    from memlab.qa.answering import answer_row as answer_row
    from memlab.qa.answering import answer_tasks as answer_tasks
    from memlab.qa.answering import ask as ask
    from memlab.qa.answering import call as call
    from memlab.qa.answering import judge_tasks as judge_tasks
    from memlab.qa.answering import references as references
    from memlab.qa.conditions import CONDITIONS as CONDITIONS
    from memlab.qa.conditions import Condition as Condition
    from memlab.qa.conditions import Context as Context
    from memlab.qa.conditions import History as History
    from memlab.qa.conditions import Injector as Injector
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
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
