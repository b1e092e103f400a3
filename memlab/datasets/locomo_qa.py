"""LoCoMo's questions as memlab questions, with the original or the audited answer key.

Each item of a conversation's ``qa`` list becomes one :class:`~memlab.datasets.questions.Question`
of one of the conversation's two owners:

- id ``<sample_id>/qa<n>`` with ``n`` the item's 0-based position (the audit's
  ``locomo_<conversation>_qa<n>`` names the same item);
- category from LoCoMo's number (:data:`LOCOMO_CATEGORIES`: 1 multi-hop, 2 temporal,
  3 open-domain, 4 single-hop, 5 adversarial); category 5 is ``kind: adversarial`` with its
  ``adversarial_answer`` as ``wrong_answer``, the others are ``answerable``;
- the owner it is asked of: the speaker the question names; when it names both or neither,
  the speaker of most of its evidence turns (the first speaker on a tie or without evidence);
- ``after_session``: the conversation's last session. LoCoMo, and the harnesses that publish
  scores on it, ask every question after the whole conversation, so later sessions are there
  to interfere; asking right after the last evidence session would be an easier test that no
  published number uses, and it would rest on evidence ids that the audit finds wrong for 57
  questions;
- evidence turns from the dialogue ids (``D3:12`` -> the 12th turn of ``session_3``, found by
  its ``dia_id``; ``D30:05`` and ``D:11:26`` are read as ``D30:5`` and ``D11:26``); ids that
  name no turn are dropped and counted; evidence facts are the owner's observations that cite
  one of those turns. An audit's corrected evidence must name turns: an audit entry with an
  id that names none is refused.

``answer_key="audited"`` applies an audit of the answer key (``audit/errors.json`` beside
``locomo10.json``, github.com/dial481/locomo-audit, CC BY-NC 4.0 like LoCoMo; read at run
time, never committed): each audited question takes the audit's corrected evidence, and its
corrected answer unless the finding is ``WRONG_CITATION`` (the audit's "answer right, evidence
ids wrong", whose ``correct_answer`` repeats the answer, sometimes with a remark); its
``audit`` field keeps the finding's type and the original answer and evidence. The original
key with the audit (``answer_key="original"`` and an audit file) keeps LoCoMo's answers and
evidence and records each finding with the audit's answer (``audit.audited_answer``), so that
the answer-key ceiling of the original key can be shown.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from memlab.core.base.files import FileReadError, read_bytes
from memlab.core.base.jsontext import JsonDepthError, loads_json
from memlab.datasets.models import Owner
from memlab.datasets.questions import AnswerAudit, Evidence, Question, TurnRef
from memlab.errors import MemlabError, excerpt

__all__ = [
    "ANSWER_KEYS",
    "CITATION_ONLY",
    "LOCOMO_CATEGORIES",
    "AnswerKey",
    "AuditFinding",
    "LocomoAuditError",
    "LocomoFormatError",
    "QuestionCounts",
    "check_audit_matches",
    "default_audit_path",
    "dia_ref",
    "load_audit",
    "locomo_questions",
]

logger = logging.getLogger(__name__)

AnswerKey = Literal["original", "audited"]
ANSWER_KEYS: tuple[str, ...] = get_args(AnswerKey)

LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""LoCoMo's category numbers (its evaluation scores 1 with a multi-answer F1 and 5 by
abstention; its reports order them 4, 1, 2, 3, 5: single-hop first)."""

CITATION_ONLY = "WRONG_CITATION"
"""The audit finding whose answer is right and only the evidence ids are wrong."""

_DIA_REF = re.compile(r"D:?(\d+):0*(\d+)")
_AUDIT_ID = re.compile(r"locomo_(\d+)_qa(\d+)")
_MAX_AUDIT_BYTES = 64 * 1024 * 1024


class LocomoFormatError(MemlabError, ValueError):
    """The source file does not have the LoCoMo structure expected here."""


class LocomoAuditError(MemlabError, ValueError):
    """The audit file cannot be read, has an unexpected shape or belongs to another source."""


def _format_error(message: str) -> MemlabError:
    return LocomoFormatError(message)


def dia_ref(text: str) -> str | None:
    """A LoCoMo dialogue id in its plain form (``D30:05`` -> ``D30:5``), or None."""
    match = _DIA_REF.fullmatch(text.strip())
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else None


def _dia_refs(raw: Sequence[str]) -> tuple[list[str], list[str]]:
    """Plain dialogue ids of an evidence list, and the pieces that are no dialogue id."""
    good: list[str] = []
    bad: list[str] = []
    for item in raw:
        for piece in re.split(r"[,;\s]+", item):
            if piece:
                ref = dia_ref(piece)
                (good if ref else bad).append(ref or piece)
    return list(dict.fromkeys(good)), bad


@dataclass(frozen=True)
class AuditFinding:
    """One finding of the answer-key audit, located in the source."""

    question_id: str
    conversation: int
    item: int
    question: str
    category: int
    error_type: str
    correct_answer: str
    correct_evidence: tuple[str, ...]
    applied: bool = True
    """False for the original key: the question keeps its answer and evidence and records the
    finding (:attr:`~memlab.datasets.questions.AnswerAudit.audited_answer`)."""
    where: str = ""
    """The entry in the audit file (``errors.json: [12]``), for messages."""

    @property
    def changes_answer(self) -> bool:
        """True unless the finding is only about the evidence ids."""
        return self.error_type != CITATION_ONLY


@dataclass
class QuestionCounts:
    """What the conversion of one or more conversations' questions found."""

    questions: int = 0
    audited: int = 0
    answers_changed: int = 0
    unresolved_evidence: list[str] = field(default_factory=list)

    def add(self, other: QuestionCounts) -> None:
        """Add ``other``'s counts to these."""
        self.questions += other.questions
        self.audited += other.audited
        self.answers_changed += other.answers_changed
        self.unresolved_evidence.extend(other.unresolved_evidence)


def default_audit_path(src: str | os.PathLike[str]) -> Path:
    """Where the audit lives beside the LoCoMo source: ``<dir>/audit/errors.json``."""
    return Path(src).parent / "audit" / "errors.json"


def load_audit(path: str | os.PathLike[str]) -> dict[tuple[int, int], AuditFinding]:
    """Read the audit's findings by ``(conversation index, qa index)``.

    Raises:
        LocomoAuditError: The file is missing or unreadable, or an entry has another shape.
    """
    source = Path(path)
    try:
        raw = read_bytes(source, what="answer-key audit", max_bytes=_MAX_AUDIT_BYTES)
        data = loads_json(raw.decode("utf-8"))
    except FileReadError as exc:  # a FIFO, a device, larger than any audit
        raise LocomoAuditError(str(exc)) from None
    except FileNotFoundError:
        raise LocomoAuditError(
            f"answer-key audit not found: {source}; pass --audit PATH (errors.json of "
            "github.com/dial481/locomo-audit) or use --answer-key original"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, JsonDepthError) as exc:
        raise LocomoAuditError(f"{source}: cannot read the audit: {exc}") from None
    if not isinstance(data, list):
        raise LocomoAuditError(f"{source}: expected a JSON list of findings")
    findings: dict[tuple[int, int], AuditFinding] = {}
    for k, entry in enumerate(data):
        finding = _finding(entry, f"{source}: [{k}]")
        key = (finding.conversation, finding.item)
        if key in findings:
            raise LocomoAuditError(f"{source}: [{k}]: {finding.question_id} is audited twice")
        findings[key] = finding
    return findings


def _finding(entry: Any, where: str) -> AuditFinding:
    if not isinstance(entry, dict):
        raise LocomoAuditError(f"{where}: expected an object, got {excerpt(entry, 40)}")
    strings = ("question_id", "question", "error_type", "correct_answer")
    for key in strings:
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise LocomoAuditError(f"{where}.{key}: expected a non-empty string")
    match = _AUDIT_ID.fullmatch(entry["question_id"])
    if match is None:
        raise LocomoAuditError(
            f"{where}.question_id: expected locomo_<conversation>_qa<n>, "
            f"got {excerpt(entry['question_id'])}"
        )
    evidence = entry.get("correct_evidence")
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise LocomoAuditError(f"{where}.correct_evidence: expected a list of dialogue ids")
    category = entry.get("category")
    if category not in LOCOMO_CATEGORIES:
        raise LocomoAuditError(f"{where}.category: expected 1-5, got {excerpt(category)}")
    return AuditFinding(
        question_id=entry["question_id"],
        conversation=int(match.group(1)),
        item=int(match.group(2)),
        question=entry["question"],
        category=category,
        error_type=entry["error_type"],
        correct_answer=entry["correct_answer"],
        correct_evidence=tuple(evidence),
        where=where,
    )


def check_audit_matches(
    findings: Mapping[tuple[int, int], AuditFinding], samples: Sequence[Any], source: str
) -> None:
    """Refuse an audit of another file: each finding must name a source question by its text.

    Raises:
        LocomoAuditError: A finding names no question, or another question than the source's.
    """
    for (conv, item), finding in findings.items():
        qa = samples[conv].get("qa") if 0 <= conv < len(samples) else None
        entry = qa[item] if isinstance(qa, list) and 0 <= item < len(qa) else None
        if not isinstance(entry, dict) or entry.get("question") != finding.question:
            raise LocomoAuditError(
                f"{source}: the audit's {finding.question_id} ({excerpt(finding.question, 50)}) "
                "is not that question of this LoCoMo file; the audit belongs to another version"
            )


@dataclass(frozen=True)
class _Turns:
    """Where each dialogue id of a conversation is: its session, message index and speaker."""

    where: dict[str, tuple[str, int, str]]

    @classmethod
    def of(cls, conv: Mapping[str, Any], sample_id: str, numbers: Sequence[int]) -> _Turns:
        where: dict[str, tuple[str, int, str]] = {}
        for n in numbers:
            for k, turn in enumerate(conv[f"session_{n}"]):
                ref = dia_ref(str(turn.get("dia_id", "")))
                if ref is not None:
                    where.setdefault(ref, (f"{sample_id}/session_{n}", k, str(turn["speaker"])))
        return cls(where)


def locomo_questions(
    sample: Mapping[str, Any],
    owners: Sequence[Owner],
    numbers: Sequence[int],
    findings: Mapping[int, AuditFinding] | None,
    where: str,
) -> tuple[list[list[Question]], QuestionCounts]:
    """The questions of one conversation, per owner (in ``owners`` order), and their counts.

    Args:
        sample: The LoCoMo conversation object.
        owners: Its two owners, speaker A's first (as :func:`convert_conversation` builds).
        numbers: The numbers of its non-empty sessions.
        findings: Audit findings by qa index (the audited key), or None (the original key).
        where: How errors name the conversation.

    Raises:
        LocomoFormatError: A qa item of another shape.
    """
    sample_id = str(sample["sample_id"])
    conv = sample["conversation"]
    speakers = (str(conv["speaker_a"]), str(conv["speaker_b"]))
    qa = sample.get("qa", [])
    if not isinstance(qa, list):
        raise _format_error(f"{where}.qa: expected a list of questions")
    turns = _Turns.of(conv, sample_id, numbers)
    cites = [_cited_by(owner) for owner in owners]
    out: list[list[Question]] = [[] for _ in owners]
    counts = QuestionCounts()
    for n, item in enumerate(qa):
        at = f"{where}.qa[{n}]"
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            raise _format_error(f"{at}: expected an object with a question")
        finding = (findings or {}).get(n)
        refs, unresolved = _evidence_refs(item, turns, at)
        counts.unresolved_evidence.extend(f"{sample_id}/qa{n}: {ref}" for ref in unresolved)
        asked = _asked_of(item["question"], refs, turns, speakers)
        question = _question(item, f"{sample_id}/qa{n}", at, owners[asked])
        question = question.model_copy(update={"evidence": _evidence(refs, turns, cites[asked])})
        if finding is not None:
            question = _audited(question, finding, turns, cites[asked], counts)
        out[asked].append(question)
        counts.questions += 1
    return out, counts


def _evidence_refs(item: Mapping[str, Any], turns: _Turns, at: str) -> tuple[list[str], list[str]]:
    raw = item.get("evidence", [])
    if not isinstance(raw, list) or not all(isinstance(e, str) for e in raw):
        raise _format_error(f"{at}.evidence: expected a list of dialogue ids")
    refs, bad = _dia_refs(raw)
    missing = [r for r in refs if r not in turns.where]
    return [r for r in refs if r in turns.where], bad + missing


def _asked_of(text: str, refs: Sequence[str], turns: _Turns, speakers: tuple[str, str]) -> int:
    """Index of the speaker the question is about (see the module docstring)."""
    named = [i for i, s in enumerate(speakers) if re.search(rf"\b{re.escape(s)}\b", text)]
    if len(named) == 1:
        return named[0]
    said_by = [turns.where[r][2] for r in refs]
    votes = Counter(speakers.index(who) for who in said_by if who in speakers)
    if votes:
        top = max(votes.values())
        return min(i for i, v in votes.items() if v == top)
    return 0


def _cited_by(owner: Owner) -> dict[str, list[str]]:
    """Dialogue id -> the owner's gold facts (observations) that cite it."""
    cited: dict[str, list[str]] = {}
    for session in owner.sessions:
        for fact in session.labels.facts:
            for ref in _dia_refs(fact.evidence or [])[0]:
                cited.setdefault(ref, []).append(fact.id)
    return cited


def _evidence(refs: Sequence[str], turns: _Turns, cited: Mapping[str, list[str]]) -> Evidence:
    facts = [gold for ref in refs for gold in cited.get(ref, [])]
    return Evidence(
        facts=list(dict.fromkeys(facts)),
        turns=[TurnRef(session=turns.where[r][0], message=turns.where[r][1]) for r in refs],
    )


def _text(value: Any) -> str | None:
    """LoCoMo answers are strings or numbers (``2022``); empty means none."""
    if isinstance(value, bool) or value is None:
        return None
    text = str(value).strip() if isinstance(value, str | int | float) else None
    return text or None


def _question(item: Mapping[str, Any], question_id: str, at: str, owner: Owner) -> Question:
    category = item.get("category")
    if category not in LOCOMO_CATEGORIES:
        raise _format_error(f"{at}.category: expected 1-5, got {excerpt(category)}")
    answer = _text(item.get("answer"))
    adversarial = category == 5
    if not adversarial and answer is None:
        raise _format_error(f"{at}.answer: expected the answer of a category {category} item")
    trap = _text(item.get("adversarial_answer")) if adversarial else None
    if trap is not None and answer is not None and trap.casefold() == answer.casefold():
        trap = None
    return Question(
        id=question_id,
        question=str(item["question"]).strip(),
        answer=answer,
        category=LOCOMO_CATEGORIES[category],
        kind="adversarial" if adversarial else "answerable",
        after_session=owner.sessions[-1].thread_id,
        wrong_answer=trap,
    )


def _audited(
    question: Question,
    finding: AuditFinding,
    turns: _Turns,
    cited: Mapping[str, list[str]],
    counts: QuestionCounts,
) -> Question:
    refs, bad = _dia_refs(list(finding.correct_evidence))
    missing = bad + [r for r in refs if r not in turns.where]
    if missing:  # the correction is the evidence: a piece naming no turn is no correction
        raise LocomoAuditError(
            f"{finding.where or finding.question_id}.correct_evidence: {excerpt(missing[0])} "
            f"names no turn of {question.id} (dialogue ids look like D3:12); correct the "
            "audit entry"
        )
    evidence = _evidence(refs, turns, cited)
    answer = finding.correct_answer.strip() if finding.changes_answer else question.answer
    counts.audited += 1
    counts.answers_changed += answer != question.answer
    if not finding.applied:  # the original key, recording what the audit says
        kept = AnswerAudit(
            error_type=finding.error_type,
            original_answer=question.answer,
            audited_answer=answer or question.answer,
        )
        return question.model_copy(update={"audit": kept})
    audit = AnswerAudit(
        error_type=finding.error_type,
        original_answer=question.answer,
        original_evidence=question.evidence,
    )
    return question.model_copy(update={"answer": answer, "evidence": evidence, "audit": audit})
