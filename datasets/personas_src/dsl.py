"""Small authoring vocabulary for the personas dataset.

Sessions are written as local wall-clock start times plus messages; the builder turns them into
UTC timestamps. Gaps between messages default to a simple reading/typing-time model so the
source stays readable; pass ``gap=`` (seconds) to override, e.g. for a follow-up a few minutes
later in the same thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "IMG",
    "TXT",
    "A",
    "F",
    "H",
    "Msg",
    "Q",
    "Question",
    "S",
    "Session",
    "T",
    "User",
    "upload",
]

UPLOAD_DIR = "/mnt/user-data/uploads/"


@dataclass
class Msg:
    """One message before timestamps are assigned."""

    role: str
    content: str | list[dict[str, Any]]
    gap: int | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None


@dataclass
class Fact:
    """One gold fact."""

    id: str
    content: str
    category: str
    evidence: list[str] | None = None


@dataclass
class Session:
    """One thread with its labels; ``restates`` is checked by the builder, never emitted."""

    start: str
    msgs: list[Msg]
    facts: list[Fact] = field(default_factory=list)
    retracts: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    noise: bool = False
    must_not_store: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    restates: list[str] = field(default_factory=list)


@dataclass
class User:
    """One memory owner."""

    user_id: str
    persona: str
    language: str
    tz: str
    sessions: list[Session]


@dataclass
class Question:
    """One question about the owner's memory; ``after`` is a 1-based session number (None:
    the last session); ``turns`` are (1-based session number, text the message contains)."""

    id: str
    question: str
    answer: str | None
    category: str
    kind: str = "answerable"
    after: int | None = None
    facts: list[str] = field(default_factory=list)
    turns: list[tuple[int, str]] = field(default_factory=list)
    wrong: str | None = None


def H(content: str | list[dict[str, Any]], gap: int | None = None) -> Msg:
    """A human message."""
    return Msg("human", content, gap)


def A(
    content: str,
    gap: int | None = None,
    calls: list[tuple[str, str, dict[str, Any]]] | None = None,
) -> Msg:
    """An ai message, optionally with tool calls given as (id, name, args)."""
    tool_calls = None
    if calls:
        tool_calls = [{"id": i, "name": n, "args": a} for i, n, a in calls]
    return Msg("ai", content, gap, tool_calls=tool_calls)


def T(call_id: str, name: str, content: str, gap: int | None = None) -> Msg:
    """A tool result answering an earlier tool call."""
    return Msg("tool", content, gap, tool_call_id=call_id, name=name)


def TXT(text: str) -> dict[str, Any]:
    """A text part of multimodal content."""
    return {"type": "text", "text": text}


def IMG(url: str, caption: str) -> dict[str, Any]:
    """An image part of multimodal content."""
    return {"type": "image_url", "image_url": {"url": url}, "caption": caption}


def upload(*names: str) -> str:
    """An ``<uploaded_files>`` block listing files in the uploads folder."""
    lines = "\n".join(UPLOAD_DIR + n for n in names)
    return f"<uploaded_files>\n{lines}\n</uploaded_files>"


def F(fid: str, content: str, category: str, evidence: list[str] | None = None) -> Fact:
    """A gold fact."""
    return Fact(fid, content, category, evidence)


def Q(
    qid: str,
    question: str,
    answer: str | None,
    category: str,
    *facts: str,
    **options: Any,
) -> Question:
    """A question whose evidence is the gold facts ``facts``; options: ``kind``, ``after``,
    ``turns``, ``wrong`` (see :class:`Question`)."""
    return Question(qid, question, answer, category, facts=list(facts), **options)


def S(start: str, msgs: list[Msg], **labels: Any) -> Session:
    """A session starting at local time ``start`` ("YYYY-MM-DD HH:MM")."""
    return Session(start, msgs, **labels)
