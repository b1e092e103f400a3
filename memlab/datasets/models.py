"""Pydantic models of the labeled dataset format (docs/dataset-format.md).

The models mirror ``dataset.schema.json``. Per-object rules (which role may carry which
field) are enforced on construction; rules that span several objects (ordering, unique
ids, retractions, tool call matching, truthful tags) are reported by
:meth:`Owner.consistency_problems` so that the loader can attach exact field paths.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from memlab.core.base.safe_names import UnsafeNameError, safe_component

# The contract's vocabulary, re-exported for dataset code: categories, section names and the
# upload marker have one definition, in the contract.
from memlab.core.jsondoc.contract import (
    MAX_MESSAGE_CHARS,
    SECTION_NAMES,
    UPLOAD_MARKER,
    FactCategory,
    SectionName,
)
from memlab.datasets.questions import Question, question_problems, resolve_session
from memlab.errors import excerpt

__all__ = [
    "LONG_MESSAGE_CHARS",
    "PIPELINE_ROLES",
    "SECTION_NAMES",
    "TAG_NAMES",
    "UPLOAD_MARKER",
    "FactCategory",
    "GoldFact",
    "GoldProcedure",
    "ImagePart",
    "ImageURL",
    "Message",
    "Owner",
    "Part",
    "Role",
    "SectionName",
    "Session",
    "SessionLabels",
    "TagName",
    "TextPart",
    "ToolCall",
    "contains_cjk",
]

# A day inside the calendar's ends, so a replay's virtual clock (debounce timers) never
# leaves the years datetime can hold.
_EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
_LATEST = datetime(9999, 12, 30, tzinfo=UTC)


def _within_calendar(value: datetime) -> datetime:
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or not _EARLIEST <= utc <= _LATEST:
        raise ValueError(
            "the time lies at the very edge of the calendar (outside 0001-01-02 .. 9999-12-30 "
            "in UTC); use a real date"
        )
    return value


Moment = Annotated[AwareDatetime, AfterValidator(_within_calendar)]
"""A timezone-aware time that a replay's virtual clock can move from and to."""

Role = Literal["human", "ai", "tool", "system"]
TagName = Literal[
    "retraction",
    "restatement",
    "noise",
    "tool_calls",
    "multimodal",
    "long_message",
    "upload",
    "injection",
    "chinese",
]

TAG_NAMES: tuple[str, ...] = get_args(TagName)

#: A message whose text is longer than this is a "long message": the pipeline's cut-off.
LONG_MESSAGE_CHARS = MAX_MESSAGE_CHARS

#: Dataset role -> OpenAI-style role understood by the memory middleware.
PIPELINE_ROLES: dict[str, str] = {
    "human": "user",
    "ai": "assistant",
    "tool": "tool",
    "system": "system",
}

# CJK Unified Ideographs (+ extension A) and CJK punctuation / full-width forms.
_CJK_RE = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def contains_cjk(text: str) -> bool:
    """Return True when ``text`` contains Chinese (CJK) characters."""
    return _CJK_RE.search(text) is not None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextPart(_Model):
    """A text part of multimodal content."""

    type: Literal["text"] = "text"
    text: str


class ImageURL(_Model):
    """Location of an image."""

    url: str = Field(min_length=1)


class ImagePart(_Model):
    """An image part of multimodal content.

    ``caption`` is ground truth describing the image for humans and metrics; it is not sent
    to the pipeline (which only reads text parts). Datasets that want the pipeline to see
    the caption add it as a separate text part.
    """

    type: Literal["image_url"] = "image_url"
    image_url: ImageURL
    caption: str | None = None


Part = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class ToolCall(_Model):
    """A tool call requested by an ``ai`` message."""

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)

    def to_openai_dict(self) -> dict[str, Any]:
        """Return the OpenAI chat-completions shape of this call."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.args, sort_keys=True)},
        }


class Message(_Model):
    """One timestamped message of a session."""

    role: Role
    content: str | list[Part]
    timestamp: Moment
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = Field(default=None, min_length=1)
    name: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _role_fields(self) -> Message:
        if self.tool_calls is not None and self.role != "ai":
            raise ValueError("only ai messages may carry tool_calls")
        if self.role == "tool" and self.tool_call_id is None:
            raise ValueError("a tool message needs tool_call_id")
        if self.role != "tool" and (self.tool_call_id is not None or self.name is not None):
            raise ValueError("only tool messages carry tool_call_id and name")
        return self

    @property
    def text(self) -> str:
        """The text the pipeline sees: the string content, or text parts joined by a space."""
        if isinstance(self.content, str):
            return self.content
        return " ".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def is_multimodal(self) -> bool:
        """True when the content is a list of parts."""
        return isinstance(self.content, list)

    @property
    def images(self) -> list[ImagePart]:
        """Image parts of the content (empty for string content)."""
        if isinstance(self.content, str):
            return []
        return [p for p in self.content if isinstance(p, ImagePart)]

    def to_openai_dict(self) -> dict[str, Any]:
        """Return the OpenAI-style dict that the memory middleware accepts.

        Roles map ``human``->``user``, ``ai``->``assistant``; image parts become
        ``{"type": "image_url", "image_url": {"url": ...}}`` without the caption.
        """
        content: str | list[dict[str, Any]]
        if isinstance(self.content, str):
            content = self.content
        else:
            content = []
            for part in self.content:
                if isinstance(part, TextPart):
                    content.append({"type": "text", "text": part.text})
                else:
                    content.append({"type": "image_url", "image_url": {"url": part.image_url.url}})
        out: dict[str, Any] = {"role": PIPELINE_ROLES[self.role], "content": content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_openai_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out

    to_pipeline_message = to_openai_dict


class GoldFact(_Model):
    """A fact the session reveals, which a good memory should hold afterwards."""

    id: str = Field(min_length=1)
    content: str = Field(min_length=1)
    category: FactCategory
    evidence: list[str] | None = None


class GoldProcedure(_Model):
    """A procedure the session teaches (how the user does a task, step by step), which a
    procedural memory should learn: its steps in order and the phrases that should recall it."""

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    steps: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    triggers: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)


class SessionLabels(_Model):
    """Ground-truth labels of one session (all fields optional)."""

    facts: list[GoldFact] = Field(default_factory=list)
    procedures: list[GoldProcedure] = Field(default_factory=list)
    retracts: list[str] = Field(default_factory=list)
    sections: list[SectionName] = Field(default_factory=list)
    noise: bool = False
    must_not_store: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    tags: list[TagName] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _without_empty_procedures(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Labels without procedures dump as before procedures existed: an owner's hash (which
        # decides whether a replay is reused) stays the same.
        data = handler(self)
        if isinstance(data, dict) and not self.procedures:
            data.pop("procedures", None)
        return data


class Session(_Model):
    """One conversation thread."""

    thread_id: str = Field(min_length=1)
    started_at: Moment
    messages: list[Message] = Field(min_length=1)
    labels: SessionLabels = Field(default_factory=SessionLabels)

    @property
    def ended_at(self) -> datetime:
        """Timestamp of the last message."""
        return self.messages[-1].timestamp

    def has_cjk(self) -> bool:
        """True when any message text contains Chinese characters."""
        return any(contains_cjk(m.text) for m in self.messages)

    def to_pipeline_messages(self) -> list[dict[str, Any]]:
        """All messages as OpenAI-style dicts, in order."""
        return [m.to_openai_dict() for m in self.messages]

    def tag_problems(self) -> list[tuple[str, str]]:
        """Tags that the session content does not back, as ``(field, message)`` pairs."""
        problems: list[tuple[str, str]] = []
        for k, tag in enumerate(self.labels.tags):
            reason = self._tag_unbacked_reason(tag)
            if reason:
                problems.append((f"labels.tags[{k}]", f"tag {tag!r} is not backed: {reason}"))
        return problems

    def _tag_unbacked_reason(self, tag: str) -> str | None:
        msgs = self.messages
        if tag == "tool_calls" and not any(m.role == "ai" and m.tool_calls for m in msgs):
            return "no ai message has tool_calls"
        if tag == "multimodal" and not any(m.is_multimodal for m in msgs):
            return "no message has list (multimodal) content"
        if tag == "long_message" and not any(len(m.text) > LONG_MESSAGE_CHARS for m in msgs):
            return f"no message text is longer than {LONG_MESSAGE_CHARS} characters"
        if tag == "upload" and not any(UPLOAD_MARKER in m.text for m in msgs):
            return f"no message contains an {UPLOAD_MARKER} block"
        if tag == "retraction" and not self.labels.retracts:
            return "labels.retracts is empty"
        if tag == "noise" and not self.labels.noise:
            return "labels.noise is false"
        return None


class Owner(_Model):
    """A memory owner: one user and their ordered sessions (one JSONL line)."""

    user_id: str = Field(min_length=1)
    persona: str | None = None
    language: str = Field(default="en", pattern=r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
    sessions: list[Session] = Field(min_length=1)
    questions: list[Question] = Field(default_factory=list)

    def gold_facts(self) -> dict[str, GoldFact]:
        """All gold facts of the owner by id (later duplicates overwrite earlier ones)."""
        return {f.id: f for s in self.sessions for f in s.labels.facts}

    def active_gold_facts(self, through: int) -> list[GoldFact]:
        """Gold facts revealed by ``sessions[through]`` and not retracted by then, in order."""
        revealed: dict[str, GoldFact] = {}
        retracted: set[str] = set()
        for session in self.sessions[: through + 1]:
            for fact in session.labels.facts:
                revealed.setdefault(fact.id, fact)
            retracted.update(session.labels.retracts)
        return [fact for gold_id, fact in revealed.items() if gold_id not in retracted]

    def session_index(self, ref: int | str) -> int:
        """The index of the session ``ref`` names (an index or a thread id).

        Raises:
            KeyError: No session has that index or thread id.
        """
        index = resolve_session(self.sessions, ref)
        if index is None:
            raise KeyError(f"{self.user_id}: no session {excerpt(ref)}")
        return index

    def questions_after(self, index: int) -> list[Question]:
        """The judged questions asked right after ``sessions[index]``, in file order (a
        question after a session the owner no longer has, cut by ``max_sessions``, is asked
        nowhere); procedure questions are scored apart (:meth:`procedure_questions`)."""
        return [
            q
            for q in self.questions
            if q.judged and resolve_session(self.sessions, q.after_session) == index
        ]

    def gold_procedures(self) -> dict[str, GoldProcedure]:
        """All labelled procedures of the owner by id."""
        return {p.id: p for s in self.sessions for p in s.labels.procedures}

    def procedure_questions(self) -> list[tuple[int, Question]]:
        """The procedure questions with the index of the session they are asked after."""
        found: list[tuple[int, Question]] = []
        for question in self.questions:
            index = resolve_session(self.sessions, question.after_session)
            if question.kind == "procedure" and index is not None:
                found.append((index, question))
        return found

    def to_json_line(self) -> str:
        """Serialize as one compact JSONL line (no trailing newline)."""
        # An owner without questions is written as before questions existed.
        exclude = None if self.questions else {"questions"}
        data = self.model_dump(mode="json", exclude_none=True, exclude=exclude)
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    def consistency_problems(self) -> list[tuple[str, str]]:
        """Cross-field problems as ``(field path, message)`` pairs; empty when consistent.

        Checks: a user id that can name a file (replays store each owner under it, see
        :func:`memlab.core.base.safe_names.safe_component`), unique thread ids, session order and
        non-overlap, message timestamps
        non-decreasing and not before ``started_at``, tool messages answer an earlier tool
        call of the session, unique gold ids, retractions name a gold id of an earlier
        session, noise sessions reveal no facts, tags are backed by content, and the questions
        fit the sessions (:func:`~memlab.datasets.questions.question_problems`).
        """
        problems: list[tuple[str, str]] = []
        try:
            safe_component(self.user_id, "user_id")
        except UnsafeNameError as exc:
            problems.append(("user_id", str(exc)))
        seen_threads: dict[str, int] = {}
        gold_session: dict[str, int] = {}  # gold fact id -> the session that defines it
        prev_end: datetime | None = None
        for i, session in enumerate(self.sessions):
            at = f"sessions[{i}]"
            first = seen_threads.setdefault(session.thread_id, i)
            if first != i:
                problems.append(
                    (
                        f"{at}.thread_id",
                        f"duplicate thread id {excerpt(session.thread_id)} "
                        f"(already used by sessions[{first}])",
                    )
                )
            if prev_end is not None and session.started_at < prev_end:
                problems.append(
                    (
                        f"{at}.started_at",
                        f"session starts at {_iso(session.started_at)}, before "
                        f"the previous session's last message ({_iso(prev_end)}); sessions must be "
                        "ordered and must not overlap",
                    )
                )
            problems.extend(_message_problems(session, at))
            problems.extend(_label_problems(self.sessions, i, gold_session))
            problems.extend((f"{at}.{field}", msg) for field, msg in session.tag_problems())
            prev_end = session.ended_at
        problems.extend(question_problems(self.sessions, self.questions))
        return problems


def _label_problems(
    sessions: list[Session], i: int, gold_session: dict[str, int]
) -> list[tuple[str, str]]:
    """Problems of ``sessions[i]``'s labels; records its gold ids in ``gold_session``."""
    at, labels = f"sessions[{i}]", sessions[i].labels
    problems: list[tuple[str, str]] = []
    for k, fact in enumerate(labels.facts):
        earlier = gold_session.get(fact.id)
        if earlier is not None:
            problems.append(
                (
                    f"{at}.labels.facts[{k}].id",
                    f"duplicate gold fact id {excerpt(fact.id)} "
                    f"(already defined in sessions[{earlier}])",
                )
            )
    for k, gold_id in enumerate(labels.retracts):
        if gold_id not in gold_session:
            defined_later = any(f.id == gold_id for s in sessions[i:] for f in s.labels.facts)
            why = (
                "it is defined in this or a later session"
                if defined_later
                else "no session defines it"
            )
            problems.append(
                (
                    f"{at}.labels.retracts[{k}]",
                    f"retracts unknown gold fact id {excerpt(gold_id)}: {why}; only "
                    "facts of earlier sessions can be retracted",
                )
            )
    for fact in labels.facts:
        gold_session.setdefault(fact.id, i)
    if labels.noise and labels.facts:
        problems.append(
            (
                f"{at}.labels.noise",
                f"a noise session must not reveal facts "
                f"(found {len(labels.facts)}); set noise to false or remove the facts",
            )
        )
    return problems


def _message_problems(session: Session, at: str) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    prev = session.started_at
    call_ids: set[str] = set()
    for j, msg in enumerate(session.messages):
        if msg.timestamp < prev:
            what = "the session's started_at" if j == 0 else "the previous message"
            problems.append(
                (
                    f"{at}.messages[{j}].timestamp",
                    f"timestamp {_iso(msg.timestamp)} is before "
                    f"{what} ({_iso(prev)}); timestamps must never decrease",
                )
            )
        prev = max(prev, msg.timestamp)
        if msg.tool_calls:
            call_ids.update(call.id for call in msg.tool_calls)
        if msg.role == "tool" and msg.tool_call_id not in call_ids:
            problems.append(
                (
                    f"{at}.messages[{j}].tool_call_id",
                    f"tool_call_id {excerpt(msg.tool_call_id)} does "
                    "not match any tool_calls[].id of an earlier ai message in this session",
                )
            )
    return problems


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")
