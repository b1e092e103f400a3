"""Questions about an owner's memory: what end-to-end memory QA asks (docs/dataset-format.md).

A question is asked after one of the owner's sessions (``after_session``: an index into the
sessions or a thread id) and is one of four kinds:

- ``answerable``: the conversations so far hold the answer (``answer``);
- ``abstain``: nothing said so far answers it, so the right response is to say so;
- ``adversarial``: the question presumes something false or about someone else (LoCoMo's
  category 5); the right response is to say it is not known, or the ``answer`` when one is
  given (a "No" to a yes/no question whose premise is false);
- ``procedure``: the question asks the agent to carry out a labelled procedure
  (``procedure``: its id, taught in a session up to ``after_session``); it is scored by the
  steps the reply names in order (:mod:`memlab.qa.procedure_scores`), not by a judge, so
  memory QA's judged questions leave it out (:meth:`Question.judged`).

``evidence`` links a question to what answers it: gold fact ids of the owner and/or turns
(``{"session": index or thread id, "message": index}``). ``wrong_answer`` is a plausible wrong
answer (the value before a change, the trap of an adversarial question); ``audit`` records how
an audited answer key changed the question (its original answer and evidence).

The models check each question on its own; :func:`question_problems` checks questions against
the owner's sessions and labels and returns ``(field path, message)`` pairs like
:meth:`memlab.datasets.models.Owner.consistency_problems`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from memlab.errors import excerpt

if TYPE_CHECKING:
    from memlab.datasets.models import Session

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_QUESTION_CHARS",
    "QUESTION_KINDS",
    "UNJUDGED_KINDS",
    "AnswerAudit",
    "Evidence",
    "Question",
    "QuestionKind",
    "SessionRef",
    "TurnRef",
    "question_problems",
    "question_stats",
    "resolve_session",
]

QuestionKind = Literal["answerable", "abstain", "adversarial", "procedure"]
QUESTION_KINDS: tuple[str, ...] = get_args(QuestionKind)
UNJUDGED_KINDS: tuple[str, ...] = ("procedure",)
"""Kinds no judge grades: scored by what the reply names (:meth:`Question.judged`)."""

SessionRef = StrictInt | Annotated[str, Field(min_length=1)]
"""A session named by its 0-based index in the owner's sessions or by its thread id."""

NonEmpty = Annotated[str, Field(min_length=1)]

MAX_QUESTION_CHARS = 1000
"""Longest question text. Every answer is scored against the references and every prompt
carries the question, so its length scales the work of a QA step; LoCoMo's longest question
has 148 characters (``dataset.schema.json`` repeats the number)."""
MAX_ANSWER_CHARS = 1000
"""Longest reference answer (``answer``, ``wrong_answer``, an audit's ``original_answer``):
token F1 and BLEU-1 cost time in proportion to it; LoCoMo's longest, audited or not, has 399
characters (``dataset.schema.json`` repeats the number)."""
QuestionText = Annotated[str, Field(min_length=1, max_length=MAX_QUESTION_CHARS)]
AnswerText = Annotated[str, Field(min_length=1, max_length=MAX_ANSWER_CHARS)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TurnRef(_Model):
    """One message of one session: ``message`` is the 0-based index into its messages."""

    session: SessionRef
    message: Annotated[int, Field(ge=0)]


class Evidence(_Model):
    """What answers a question: gold fact ids of the owner and/or turns of its sessions."""

    facts: list[NonEmpty] = Field(default_factory=list)
    turns: list[TurnRef] = Field(default_factory=list)

    def is_empty(self) -> bool:
        """True when the question has no labelled evidence."""
        return not self.facts and not self.turns


class AnswerAudit(_Model):
    """How an answer-key audit judged a question (present only on audited questions).

    A question of the audited key carries the audit's answer and evidence, and keeps the
    original ones here; a question of the original key that records the audit keeps its
    answer and has the audit's in ``audited_answer``.

    Attributes:
        error_type: The audit's finding, e.g. ``WRONG_CITATION`` or ``HALLUCINATION``.
        original_answer: The answer before the audit (None when the original had none).
        original_evidence: The evidence before the audit.
        audited_answer: The audit's answer when the question keeps the original one (None
            when the question carries the audit's answer).
    """

    error_type: NonEmpty
    original_answer: Annotated[str, Field(max_length=MAX_ANSWER_CHARS)] | None = None
    original_evidence: Evidence | None = None
    audited_answer: NonEmpty | None = None


class Question(_Model):
    """One question about an owner's memory (see the module docstring)."""

    id: NonEmpty
    question: QuestionText
    answer: AnswerText | None = None
    category: NonEmpty
    kind: QuestionKind
    after_session: SessionRef
    evidence: Evidence = Field(default_factory=Evidence)
    wrong_answer: AnswerText | None = None
    audit: AnswerAudit | None = None
    procedure: NonEmpty | None = None

    @model_validator(mode="after")
    def _kind_fields(self) -> Question:
        if (self.kind == "procedure") != (self.procedure is not None):
            raise ValueError(
                "a procedure question names the labelled procedure it asks for (procedure: "
                "its id), and only a procedure question does"
            )
        if self.kind == "answerable" and self.answer is None:
            raise ValueError("an answerable question needs an answer")
        if self.kind == "abstain" and self.answer is not None:
            raise ValueError(
                "an abstain question has no answer (the right response is to say it is not "
                "known); remove the answer or make the question answerable"
            )
        return self

    @property
    def expects_abstention(self) -> bool:
        """True when saying "I don't know" is a right response (abstain and adversarial)."""
        return self.kind in ("abstain", "adversarial")

    @property
    def judged(self) -> bool:
        """True for the questions memory QA asks and judges (all but procedure ones)."""
        return self.kind not in UNJUDGED_KINDS

    def answer_changed(self) -> bool:
        """True when an audited answer key replaced the original answer."""
        return self.audit is not None and self.audit.original_answer != self.answer

    def audit_differs(self) -> bool:
        """True when the audit's answer differs from the original one, whichever of the two
        the question carries (a perfect answerer is wrong by the original key here)."""
        if self.audit is None:
            return False
        if self.audit.audited_answer is None:
            return self.answer_changed()
        return self.audit.audited_answer != self.audit.original_answer


def resolve_session(sessions: Sequence[Session], ref: int | str) -> int | None:
    """The index a :data:`SessionRef` names in ``sessions``, or None when it names none."""
    if isinstance(ref, int):
        return ref if 0 <= ref < len(sessions) else None
    return next((i for i, s in enumerate(sessions) if s.thread_id == ref), None)


def question_problems(
    sessions: Sequence[Session], questions: Sequence[Question]
) -> list[tuple[str, str]]:
    """Problems of ``questions`` against the owner's sessions, as ``(field, message)`` pairs.

    Checks: unique question ids; ``after_session`` names a session; evidence facts are gold
    facts revealed by then (and, for an answerable question, not retracted by then); evidence
    turns name a message of a session up to ``after_session``; ``wrong_answer`` differs from
    ``answer``.
    """
    revealed: dict[str, int] = {}  # gold id -> the session revealing it
    retracted: dict[str, int] = {}  # gold id -> the first session retracting it
    for i, session in enumerate(sessions):
        for fact in session.labels.facts:
            revealed.setdefault(fact.id, i)
        for gold_id in session.labels.retracts:
            retracted.setdefault(gold_id, i)
    problems: list[tuple[str, str]] = []
    first_of: dict[str, int] = {}
    for k, question in enumerate(questions):
        at = f"questions[{k}]"
        first = first_of.setdefault(question.id, k)
        if first != k:
            problems.append(
                (
                    f"{at}.id",
                    f"duplicate question id {excerpt(question.id)} "
                    f"(already used by questions[{first}])",
                )
            )
        asked = resolve_session(sessions, question.after_session)
        if asked is None:
            problems.append((f"{at}.after_session", _no_session(question.after_session, sessions)))
            continue
        problems.extend(_fact_problems(question, at, asked, revealed, retracted))
        problems.extend(_procedure_problems(question, at, asked, sessions))
        problems.extend(_turn_problems(question, at, asked, sessions))
        if (
            question.wrong_answer is not None
            and question.answer is not None
            and question.wrong_answer.strip().casefold() == question.answer.strip().casefold()
        ):
            problems.append((f"{at}.wrong_answer", "is the same as the answer"))
    return problems


def _no_session(ref: int | str, sessions: Sequence[Session]) -> str:
    if isinstance(ref, int):
        return f"session index {ref} is out of range (the owner has {len(sessions)} sessions)"
    return f"no session has the thread id {excerpt(ref)}"


def _procedure_problems(
    question: Question, at: str, asked: int, sessions: Sequence[Session]
) -> list[tuple[str, str]]:
    if question.procedure is None:
        return []
    taught = next(
        (
            i
            for i, session in enumerate(sessions)
            for p in session.labels.procedures
            if p.id == question.procedure
        ),
        None,
    )
    if taught is None:
        return [(f"{at}.procedure", f"unknown procedure id {excerpt(question.procedure)}")]
    if taught > asked:
        return [
            (
                f"{at}.procedure",
                f"procedure {excerpt(question.procedure)} is taught in sessions[{taught}], after "
                f"the question is asked (after sessions[{asked}])",
            )
        ]
    return []


def _fact_problems(
    question: Question,
    at: str,
    asked: int,
    revealed: dict[str, int],
    retracted: dict[str, int],
) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for j, gold_id in enumerate(question.evidence.facts):
        where = f"{at}.evidence.facts[{j}]"
        if gold_id not in revealed:
            problems.append((where, f"unknown gold fact id {excerpt(gold_id)}"))
        elif revealed[gold_id] > asked:
            problems.append(
                (
                    where,
                    f"gold fact {excerpt(gold_id)} is revealed in sessions"
                    f"[{revealed[gold_id]}], after the question is asked (after sessions[{asked}])",
                )
            )
        elif question.kind == "answerable" and retracted.get(gold_id, asked + 1) <= asked:
            problems.append(
                (
                    where,
                    f"gold fact {excerpt(gold_id)} is retracted by sessions"
                    f"[{retracted[gold_id]}] before the question is asked; cite the fact that "
                    "replaced it",
                )
            )
    return problems


def _turn_problems(
    question: Question, at: str, asked: int, sessions: Sequence[Session]
) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for j, turn in enumerate(question.evidence.turns):
        where = f"{at}.evidence.turns[{j}]"
        index = resolve_session(sessions, turn.session)
        if index is None:
            problems.append((f"{where}.session", _no_session(turn.session, sessions)))
        elif index > asked:
            problems.append(
                (
                    f"{where}.session",
                    f"sessions[{index}] comes after the question is asked "
                    f"(after sessions[{asked}])",
                )
            )
        elif turn.message >= len(sessions[index].messages):
            problems.append(
                (
                    f"{where}.message",
                    f"message index {turn.message} is out of range "
                    f"(sessions[{index}] has {len(sessions[index].messages)} messages)",
                )
            )
    return problems


def question_stats(questions: Sequence[Question]) -> dict[str, object]:
    """Counts of questions by kind and category, with evidence and audit counts."""
    # Procedure questions are counted only where a dataset has them (older stats unchanged).
    kinds: Counter[str] = Counter({k: 0 for k in QUESTION_KINDS if k != "procedure"})
    kinds.update(q.kind for q in questions)
    categories = Counter(q.category for q in questions)
    return {
        "questions": len(questions),
        "questions_by_kind": dict(kinds),
        "questions_by_category": dict(sorted(categories.items())),
        "questions_with_fact_evidence": sum(1 for q in questions if q.evidence.facts),
        "questions_with_turn_evidence": sum(1 for q in questions if q.evidence.turns),
        "questions_without_evidence": sum(1 for q in questions if q.evidence.is_empty()),
        "questions_audited": sum(1 for q in questions if q.audit is not None),
        "questions_answer_changed": sum(1 for q in questions if q.audit_differs()),
    }
