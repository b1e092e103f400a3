"""The judge calibration set: (question, gold answer, candidate answer) triples with verdicts.

memlab ships 240 triples written for it (``memlab/qa/data/judge_calibration.jsonl``), about
invented people, one per line::

    {"id": "part-001", "kind": "partial", "question": "Which two countries did Noor visit in
     July?", "gold": "Portugal and Morocco.", "answer": "Portugal.", "verdict": "WRONG",
     "why": "one of the two countries"}

``gold`` is null when the conversations never say: the judge then sees
:data:`~memlab.qa.qa_prompts.ABSTAIN_REFERENCE` as the reference, as it does in a QA run.
``memlab judge audit`` (:mod:`memlab.scoring.qa.judge_audit`) grades every triple with a judge
and measures its agreement with the verdicts.

How the verdicts were decided (by reading each triple, the key-fact reading of LoCoMo's
grading; the ``strict`` judge prompt asks for the same, the ``lenient`` one accepts more):

1. An answer is CORRECT when it states the gold answer's key fact(s): the same person, place,
   thing, value, time or choice, in any wording or format.
2. Detail the gold does not mention is neutral (CORRECT, kind ``extra_correct_detail``); detail
   that contradicts the gold or the question makes it WRONG (``extra_wrong_detail``).
3. A list must be complete and exact, in any order: a missing item (``partial``) or an item
   swapped for another (``multi_part``) is WRONG; when the question asks for one item ("name
   one ..."), any item of the gold list is CORRECT.
4. Numbers and dates (``number_date``): the same value in any format ("7 May 2023",
   "2023-05-07", "three" and "3") or resolved from a relative time in the gold ("the day before
   12 January 2024") is CORRECT, and so is a more precise value inside the gold's period; a
   vaguer one (the year for a month), another value or another unit is WRONG.
5. Abstentions (``abstention``): when the gold gives an answer, saying it is not known is
   WRONG; when the gold says it is not known, only an abstention is CORRECT and any value is
   WRONG (``guess_on_unknown``).
6. Naming several candidates (``hedged``) is WRONG even when one of them is right; a yes/no
   answer (``yes_no``) must have the gold's polarity.
7. An answer on another subject (``off_topic``) is WRONG. Every other WRONG answer except an
   abstention is *on topic*: it answers the question with a wrong, partial, vaguer or hedged
   value (:attr:`JudgeTriple.on_topic`), the answers a lenient judge is prone to accept.

Every answer of kind ``abstention`` is one :func:`~memlab.qa.answer_scores.is_abstention`
detects, and no other answer is.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from memlab.core.base.files import MAX_TEXT_BYTES, FileReadError, read_text
from memlab.core.base.jsontext import JsonDepthError, loads_json
from memlab.datasets.questions import Question
from memlab.errors import MemlabError, excerpt
from memlab.qa.qa_prompts import ABSTAIN_REFERENCE

__all__ = [
    "BUNDLED_SET",
    "CALIBRATION_KINDS",
    "NOT_ON_TOPIC_KINDS",
    "VERDICTS",
    "JudgeCalibrationError",
    "JudgeCalibrationSet",
    "JudgeTriple",
    "load_judge_calibration",
]

BUNDLED_SET = "judge_calibration.jsonl"
"""The bundled set's file name, in ``memlab/qa/data``."""

CALIBRATION_KINDS: dict[str, str] = {
    "paraphrase": "the gold answer in other words",
    "extra_correct_detail": "the gold answer with detail that contradicts nothing",
    "extra_wrong_detail": "the gold answer with detail that contradicts it",
    "partial": "part of a list or of a compound answer (or one item when one is asked for)",
    "on_topic_wrong": "another value of the same kind",
    "off_topic": "an answer about something else",
    "number_date": "numbers and dates, right and wrong, in different formats",
    "multi_part": "every item of a list, or one swapped for another",
    "abstention": "saying it is not known, to answerable and unanswerable questions",
    "guess_on_unknown": "a value where the gold says it is not known",
    "hedged": "several candidates without a choice",
    "yes_no": "yes/no questions, the same polarity or the other",
}
"""The kinds of the bundled set (a set of one's own may use others)."""

NOT_ON_TOPIC_KINDS = frozenset({"off_topic", "abstention"})
"""Kinds whose WRONG answers are not on topic (every other WRONG answer is)."""

VERDICTS = {"CORRECT": True, "WRONG": False}

_TEXT_FIELDS = ("id", "kind", "question", "answer", "why")


class JudgeCalibrationError(MemlabError, ValueError):
    """A judge calibration file is missing or has a bad line.

    Attributes:
        path: The file.
        line: The 1-based line (0 for the whole file).
        field: The field at fault ("" when the line as a whole is).
    """

    def __init__(self, path: str, line: int, field: str, problem: str) -> None:
        self.path, self.line, self.field = path, line, field
        where = f"{path}:{line}" if line else path
        what = f"field {field!r} " if field else ""
        super().__init__(f"{where}: {what}{problem}")


@dataclass(frozen=True)
class JudgeTriple:
    """One graded triple (see the module docstring).

    Attributes:
        id: Unique within its set.
        kind: What it tests (:data:`CALIBRATION_KINDS` in the bundled set).
        question: The question asked.
        gold: The gold answer; None when the conversations never say.
        answer: The candidate answer the judge grades.
        correct: The verdict (True: CORRECT).
        why: One line on why.
    """

    id: str
    kind: str
    question: str
    gold: str | None
    answer: str
    correct: bool
    why: str

    @property
    def reference(self) -> str:
        """The reference a judge sees: the gold, or :data:`ABSTAIN_REFERENCE` when None."""
        return self.gold if self.gold is not None else ABSTAIN_REFERENCE

    @property
    def on_topic(self) -> bool:
        """A WRONG answer that answers the question (not off topic, not an abstention)."""
        return not self.correct and self.kind not in NOT_ON_TOPIC_KINDS

    def as_question(self) -> Question:
        """The triple's question as a dataset question (``abstain`` when the gold is None),
        so judge requests are built as a QA run builds them."""
        return Question(
            id=self.id,
            question=self.question,
            answer=self.gold,
            category="judge_calibration",
            kind="answerable" if self.gold is not None else "abstain",
            after_session=0,
        )


@dataclass(frozen=True)
class JudgeCalibrationSet:
    """The triples of one file, where they came from and the hash of its bytes."""

    source: str
    sha256: str
    triples: tuple[JudgeTriple, ...]


def load_judge_calibration(path: str | Path | None = None) -> JudgeCalibrationSet:
    """Read and check a calibration file (the bundled set when ``path`` is None).

    Raises:
        JudgeCalibrationError: Unreadable file, bad JSON, a missing or mistyped field, an
            unknown verdict or a repeated id; the message names the file, line and field.
    """
    if path is None:
        source = f"memlab/qa/data/{BUNDLED_SET}"
        data = (resources.files("memlab.qa") / "data" / BUNDLED_SET).read_bytes()
        text = data.decode("utf-8")
    else:
        source = str(path)
        try:
            text = read_text(path, what="judge calibration file", max_bytes=MAX_TEXT_BYTES)
        except FileReadError as exc:
            raise JudgeCalibrationError(source, 0, "", str(exc)) from None
        except OSError as exc:
            raise JudgeCalibrationError(source, 0, "", f"cannot read it: {exc.strerror}") from None
        data = text.encode("utf-8")
    triples: list[JudgeTriple] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        triple = _triple(source, number, line)
        if triple.id in seen:
            raise JudgeCalibrationError(source, number, "id", f"{triple.id!r} is used twice")
        seen.add(triple.id)
        triples.append(triple)
    if not triples:
        raise JudgeCalibrationError(source, 0, "", "no triples (one JSON object per line)")
    return JudgeCalibrationSet(source, hashlib.sha256(data).hexdigest(), tuple(triples))


def _triple(source: str, number: int, line: str) -> JudgeTriple:
    try:
        data = loads_json(line)
    except json.JSONDecodeError as exc:
        raise JudgeCalibrationError(source, number, "", f"not valid JSON ({exc.msg})") from None
    except JsonDepthError as exc:
        raise JudgeCalibrationError(source, number, "", str(exc)) from None
    if not isinstance(data, dict):
        raise JudgeCalibrationError(source, number, "", "expected a JSON object per line")
    for key in _TEXT_FIELDS:
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            raise JudgeCalibrationError(
                source, number, key, f"must be a non-empty string, got {excerpt(value)}"
            )
    gold = data.get("gold")
    if gold is not None and (not isinstance(gold, str) or not gold.strip()):
        raise JudgeCalibrationError(
            source, number, "gold", f"must be a non-empty string or null, got {excerpt(gold)}"
        )
    verdict = data.get("verdict")
    if verdict not in VERDICTS:
        raise JudgeCalibrationError(
            source, number, "verdict", f'must be "CORRECT" or "WRONG", got {excerpt(verdict)}'
        )
    return JudgeTriple(
        id=data["id"],
        kind=data["kind"],
        question=data["question"],
        gold=gold,
        answer=data["answer"],
        correct=VERDICTS[str(verdict)],
        why=data["why"],
    )
