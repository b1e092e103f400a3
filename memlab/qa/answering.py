"""Answer questions at a point of a replay, grade the answers, and score them.

The step every QA run is made of, usable on its own (a notebook, a memory strategy that
re-asks questions after later sessions):

1. a :class:`ReplayPoint` (an owner, the session just replayed, the lane's memory then);
2. :func:`answer_tasks`: for each question and condition, the :class:`Context` the answer
   prompt receives (:mod:`memlab.qa.conditions`) and the request to send;
3. :func:`call`: one backend call, its reply or its error (:class:`CallResult`);
4. :func:`judge_tasks`: for each answer, judge prompt and answer key, the grading request
   (:func:`references`: the file's answer and, for a question an audited key changed, the
   original one);
5. :func:`answer_row`: the answer with its scores (token F1, BLEU-1 against each key,
   abstention) and verdicts, as one JSON-ready row; a procedure question's row adds
   :func:`procedure_scores` (the steps the reply names in order, never a judge).

:func:`ask` runs the whole step one call at a time; a sweep's QA step
(:mod:`memlab.postrun.qa_step`) builds the same tasks for every lane and owner and runs the
distinct requests concurrently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memlab.core.pipeline.llm import Backend, BackendError, CompletionRequest, GenerationParams
from memlab.datasets.models import Owner
from memlab.datasets.questions import Question
from memlab.qa.answer_scores import bleu1, is_abstention, mem0_f1, multi_answer_f1, token_f1
from memlab.qa.conditions import (
    MEMORY_CONDITION,
    Condition,
    ConditionPoint,
    Context,
    History,
    ReadPath,
    qa_condition,
)
from memlab.qa.procedure_scores import reply_scores
from memlab.qa.qa_prompts import ABSTAIN_REFERENCE, AnswerPrompt, JudgePrompt
from memlab.qa.reply_bounds import reply_problem
from memlab.qa.verdicts import parse_verdict

__all__ = [
    "ANSWER_KEYS",
    "MULTI_ANSWER_CATEGORIES",
    "SCORES",
    "AnswerSettings",
    "AnswerTask",
    "CallResult",
    "JudgeTask",
    "ReplayPoint",
    "answer_row",
    "answer_tasks",
    "ask",
    "call",
    "judge_tasks",
    "procedure_scores",
    "references",
]

ANSWER_KEYS: tuple[str, ...] = ("answer", "original")
"""The answer keys an answer is graded against: ``answer`` (the one the dataset file gives)
and ``original`` (the answer before an audit changed it, for audited questions only)."""

MULTI_ANSWER_CATEGORIES = frozenset({"multi-hop"})
"""Categories scored with LoCoMo's multi-answer F1 (comma-separated parts)."""


@dataclass(frozen=True)
class ReplayPoint:
    """A point of a replay where questions are asked.

    Attributes:
        owner: The memory owner.
        session_index: The session just replayed (questions asked ``after_session`` it).
        memory: The lane's memory document then (``None``: an empty memory).
    """

    owner: Owner
    session_index: int
    memory: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class AnswerSettings:
    """The agent: its answer prompt, sampling parameters and model override.

    ``tell_subject``: each request names the owner and session it asks about
    (:attr:`~memlab.core.pipeline.llm.CompletionRequest.about`), for an answerer that answers from
    the dataset's known truth (the simulated model); off for every other backend.
    """

    prompt: AnswerPrompt
    params: GenerationParams = field(
        default_factory=lambda: GenerationParams(temperature=0.0, max_tokens=64, seed=0)
    )
    model: str | None = None
    tell_subject: bool = False

    def request(
        self, context: str, question: str, about: tuple[str, int] | None = None
    ) -> CompletionRequest:
        """The request that asks ``question`` with ``context`` as the memory (``about``: the
        owner and session, sent only with ``tell_subject``)."""
        return CompletionRequest(
            messages=self.prompt.messages(context, question),
            params=self.params,
            model=self.model,
            about=about if self.tell_subject else None,
        )


@dataclass(frozen=True)
class AnswerTask:
    """One question asked under one condition."""

    user_id: str
    session_index: int
    question: Question
    condition: Condition
    context: Context
    request: CompletionRequest


@dataclass(frozen=True)
class JudgeTask:
    """One answer graded by one judge prompt against one answer key."""

    judge: str
    key: str
    request: CompletionRequest


@dataclass(frozen=True)
class CallResult:
    """A backend call's reply (or its error) and what it cost."""

    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    error: str | None = None
    replaced_chars: int = 0
    """Characters of the reply that could not be encoded, replaced by U+FFFD."""


def call(backend: Backend, request: CompletionRequest) -> CallResult:
    """Send ``request``; a :class:`~memlab.core.pipeline.llm.BackendError` becomes the result's
    error,
    and so does a reply longer than a QA reply may be (:mod:`memlab.qa.reply_bounds`)."""
    try:
        done = backend.complete(request)
    except BackendError as exc:
        return CallResult(None, error=str(exc)[:500] or type(exc).__name__)
    too_long = reply_problem(backend.name, done.text)
    if too_long is not None:
        return CallResult(None, error=too_long)
    return CallResult(
        done.text,
        done.prompt_tokens,
        done.completion_tokens,
        done.latency_s,
        done.cached,
        replaced_chars=done.replaced_chars,
    )


def answer_tasks(
    point: ReplayPoint,
    questions: Sequence[Question],
    conditions: Sequence[Condition],
    settings: AnswerSettings,
    read: ReadPath,
    history: History | None = None,
) -> list[AnswerTask]:
    """The answer requests for ``questions`` under each of ``conditions`` at ``point``.

    Each condition (:data:`~memlab.qa.conditions.QA_CONDITIONS`) opens the point once and
    gives each question its context. ``history``: the owner's
    :class:`~memlab.qa.conditions.History`, shared by the points of many questions (one is
    made here otherwise; it counts the conversations only when a condition reads them).

    Raises:
        UnknownConditionError: A condition no registry entry has.
    """
    opens = [qa_condition(c).open for c in conditions]  # an unknown name raises, listing all
    owner, index = point.owner, point.session_index
    at = ConditionPoint(
        owner,
        index,
        point.memory,
        read,
        History(owner, read.token_counting) if history is None else history,
    )
    contexts = [open_(at) for open_ in opens]
    tasks: list[AnswerTask] = []
    for question in questions:
        for condition, context_of in zip(conditions, contexts, strict=True):
            context = context_of(question.question)
            tasks.append(
                AnswerTask(
                    owner.user_id,
                    index,
                    question,
                    condition,
                    context,
                    settings.request(context.text, question.question, (owner.user_id, index)),
                )
            )
    return tasks


def references(question: Question) -> dict[str, str]:
    """The reference answer of each answer key (see :data:`ANSWER_KEYS`).

    A question whose right response is to abstain has :data:`~memlab.qa.qa_prompts.
    ABSTAIN_REFERENCE` as its reference; ``original`` is present only when an audit changed
    the answer.
    """
    found = {"answer": question.answer or ABSTAIN_REFERENCE}
    if question.audit is not None and question.answer_changed():
        found["original"] = question.audit.original_answer or ABSTAIN_REFERENCE
    return found


def judge_tasks(
    question: Question,
    answer: str,
    judges: Sequence[JudgePrompt],
    params: GenerationParams,
    model: str | None = None,
    *,
    every_answer: bool = False,
) -> list[JudgeTask]:
    """A grading request per judge prompt and answer key for ``answer`` to ``question``.

    None for an abstention on an answerable question: it is wrong by definition (the answer
    was known), and a judge asked anyway could call "I'm not sure." CORRECT. ``every_answer``
    grades it all the same (an audit of the judge itself). None ever for a procedure
    question: the steps it names are scored instead (:mod:`memlab.qa.procedure_scores`).
    """
    if not question.judged:
        return []
    if not every_answer and question.kind == "answerable" and is_abstention(answer):
        return []
    return [
        JudgeTask(
            judge.name,
            key,
            CompletionRequest(
                messages=judge.messages(question.question, reference, answer),
                params=params,
                model=model,
            ),
        )
        for judge in judges
        for key, reference in references(question).items()
    ]


SCORES = ("f1", "bleu1", "mem0_f1")
"""The scores of an answer against a reference: LoCoMo's token F1, mem0's BLEU-1 and mem0's
F1 (:mod:`memlab.qa.answer_scores`); each is a column of the answer table, and with the
suffix ``_original`` a column against an audited question's original answer."""


def _scores(question: Question, answer: str) -> dict[str, float | None]:
    """:data:`SCORES` against each key's reference (None for a key the question lacks, and
    for a reference that is an abstention: there is no answer text to compare with)."""
    f1 = multi_answer_f1 if question.category in MULTI_ANSWER_CATEGORIES else token_f1
    found = references(question)
    out: dict[str, float | None] = {}
    for key in ANSWER_KEYS:
        suffix = "" if key == "answer" else f"_{key}"
        reference = found.get(key)
        usable = reference is not None and reference != ABSTAIN_REFERENCE
        out[f"f1{suffix}"] = f1(answer, reference) if usable and reference else None
        out[f"bleu1{suffix}"] = bleu1(answer, reference) if usable and reference else None
        out[f"mem0_f1{suffix}"] = mem0_f1(answer, reference) if usable and reference else None
    return out


def answer_row(
    task: AnswerTask,
    result: CallResult,
    verdicts: Mapping[str, Mapping[str, CallResult]] | None = None,
) -> dict[str, Any]:
    """One answer as a JSON-ready row: the question, the condition, what the context held,
    the reply and its cost, its scores (:data:`SCORES`: ``f1``/``bleu1``/``mem0_f1`` against
    the file's answer, ``f1_original`` and so on against an audited question's original one;
    None for a question with no answer to compare with), whether it abstains, and the verdicts
    (``{judge: {key: True | False | None}}``, None when a judge gave no single verdict or
    failed; none at all for an abstention on an answerable question, which no judge sees),
    with ``judge_errors`` (judge calls that failed) and ``judge_unreadable`` (judge replies
    with no single verdict)."""
    question = task.question
    text = result.text
    verdicts = verdicts or {}
    row: dict[str, Any] = {
        "user_id": task.user_id,
        "session_index": task.session_index,
        "question_id": question.id,
        "category": question.category,
        "kind": question.kind,
        "audited": question.audit is not None,
        "answer_changed": question.answer_changed(),
        "audit_differs": question.audit_differs(),
        "condition": task.condition,
        "context_tokens": task.context.tokens,
        "injected": list(task.context.injected),
        "dropped": len(task.context.dropped),
        "answer": text,
        "error": result.error,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "latency_s": result.latency_s,
        "cached": result.cached,
        "replaced_chars": result.replaced_chars,
        "abstained": is_abstention(text) if text is not None else None,
    }
    if text is None:
        row.update(dict.fromkeys(f"{s}{x}" for x in ("", "_original") for s in SCORES))
    else:
        row.update(_scores(question, text))
    row["verdicts"] = {
        judge: {
            key: parse_verdict(graded.text) if graded.text is not None else None
            for key, graded in by_key.items()
        }
        for judge, by_key in verdicts.items()
    }
    graded = [g for by_key in verdicts.values() for g in by_key.values()]
    row["judge_tokens"] = sum(g.prompt_tokens + g.completion_tokens for g in graded)
    row["judge_errors"] = sum(1 for g in graded if g.error is not None)
    row["judge_unreadable"] = sum(
        1 for g in graded if g.text is not None and parse_verdict(g.text) is None
    )
    return row


def ask(
    point: ReplayPoint,
    questions: Sequence[Question],
    *,
    backend: Backend,
    settings: AnswerSettings,
    read: ReadPath | None = None,
    conditions: Sequence[Condition] = (MEMORY_CONDITION,),
    judges: Sequence[JudgePrompt] = (),
    judge_backend: Backend | None = None,
    judge_params: GenerationParams | None = None,
) -> list[dict[str, Any]]:
    """Answer ``questions`` at ``point`` under ``conditions``, grade each answer with
    ``judges`` (on ``judge_backend``, default ``backend``), one call at a time.

    Returns:
        One :func:`answer_row` per (question, condition), in that order.
    """
    read = read or ReadPath()
    params = judge_params or GenerationParams(temperature=0.0, max_tokens=32, seed=0)
    grader = judge_backend or backend
    rows = []
    for task in answer_tasks(point, questions, conditions, settings, read):
        result = call(backend, task.request)
        verdicts: dict[str, dict[str, CallResult]] = {}
        if result.text is not None:
            for judged in judge_tasks(task.question, result.text, judges, params):
                verdicts.setdefault(judged.judge, {})[judged.key] = call(grader, judged.request)
        row = answer_row(task, result, verdicts)
        row.update(procedure_scores(point.owner, task.question, result.text))
        rows.append(row)
    return rows


def procedure_scores(owner: Owner, question: Question, reply: str | None) -> dict[str, Any]:
    """A procedure question's answer-row scores (``steps_named``, ``step_accuracy``:
    :func:`memlab.qa.procedure_scores.reply_scores` against ``owner``'s labelled steps);
    nothing for any other question."""
    if question.procedure is None:
        return {}
    return reply_scores(reply, owner.gold_procedures()[question.procedure].steps)
