"""Memory QA: does the memory help the agent answer?

Questions live in the dataset (:class:`memlab.datasets.Question`); this package holds what
scores the answers and the prompts that produce and grade them:

- answer scores: LoCoMo's token F1 (:func:`token_f1`, :func:`multi_answer_f1`), BLEU-1 from
  sacrebleu (:func:`bleu1`), abstention detection (:func:`is_abstention`);
- prompts: the agent's answer prompt and the judges' prompts, content-addressed templates in
  registries of their own (:func:`answer_prompts`, :func:`judge_prompts`; built in: the
  ``default`` answer prompt, the ``lenient`` and ``strict`` judges);
- judge replies: :func:`parse_verdict`.

It depends on ``memlab.core``, ``memlab.backends`` and ``memlab.datasets`` only.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.core.qa_prompts import (
        ABSTAIN_REFERENCE,
        AnswerPrompt,
        JudgePrompt,
        answer_prompts,
        judge_prompts,
    )
    from memlab.qa.answer_scores import (
        ABSTENTION_PATTERNS,
        answer_tokens,
        bleu1,
        bleu_tokens,
        is_abstention,
        multi_answer_f1,
        normalize_answer,
        token_f1,
    )
    from memlab.qa.verdicts import parse_verdict

_EXPORTS: dict[str, str] = {
    "ABSTAIN_REFERENCE": "memlab.core.qa_prompts",
    "AnswerPrompt": "memlab.core.qa_prompts",
    "JudgePrompt": "memlab.core.qa_prompts",
    "answer_prompts": "memlab.core.qa_prompts",
    "judge_prompts": "memlab.core.qa_prompts",
    "ABSTENTION_PATTERNS": "memlab.qa.answer_scores",
    "answer_tokens": "memlab.qa.answer_scores",
    "bleu1": "memlab.qa.answer_scores",
    "bleu_tokens": "memlab.qa.answer_scores",
    "is_abstention": "memlab.qa.answer_scores",
    "multi_answer_f1": "memlab.qa.answer_scores",
    "normalize_answer": "memlab.qa.answer_scores",
    "token_f1": "memlab.qa.answer_scores",
    "parse_verdict": "memlab.qa.verdicts",
}

__all__ = [
    "ABSTAIN_REFERENCE",
    "ABSTENTION_PATTERNS",
    "AnswerPrompt",
    "JudgePrompt",
    "answer_prompts",
    "answer_tokens",
    "bleu1",
    "bleu_tokens",
    "is_abstention",
    "judge_prompts",
    "multi_answer_f1",
    "normalize_answer",
    "parse_verdict",
    "token_f1",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
