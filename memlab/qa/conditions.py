"""What the agent sees when it answers: the conditions of memory QA.

A question is asked at a point of the replay (right after one of the owner's sessions). The
agent's answer prompt receives a *context* (:class:`Context`) built under one condition:

- ``memory``: the lane's memory at that point, rendered through the lane's injection path
  (:func:`~memlab.core.pipeline.injection.render_injection` with the lane's budget, token counting
  and policy; :class:`ReadPath`);
- ``none``: nothing (what the agent knows without memory);
- ``full_context``: the raw conversations so far instead of a memory: messages are taken
  newest first while they fit the lane's budget, and shown in conversation order under a
  heading per session (:class:`History`);
- ``gold_memory``: the labelled facts active at that point as a memory document
  (:func:`gold_memory_document`), rendered through the same injection path: what a perfect
  write side would give the agent, the ceiling of the write side.

The conditions form an axis: the baselines sit in the same table as the lane's memory. Each
is a :class:`QACondition` in :data:`QA_CONDITIONS`, the registry a plugin adds one to with
``QA_CONDITIONS.register("name", QACondition(...))`` (:mod:`memlab.plugins`); a grid's
``qa: {conditions: [...]}`` then names it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memlab.core.jsondoc.document import (
    MemoryDocument,
    create_empty_memory,
    normalize_fact_text,
    utc_iso,
)
from memlab.core.pipeline.injection import Injection, get_token_counter, render_injection
from memlab.datasets.models import Owner
from memlab.plugins import PluginError, Registry, declare, failure_hint

__all__ = [
    "CONDITIONS",
    "MEMORY_CONDITION",
    "QA_CONDITIONS",
    "Condition",
    "ConditionPoint",
    "Context",
    "History",
    "Injector",
    "QACondition",
    "ReadPath",
    "UnknownConditionError",
    "gold_memory_document",
    "qa_condition",
]

Condition = str
"""A name of :data:`QA_CONDITIONS`."""

MEMORY_CONDITION: Condition = "memory"
"""The condition QA measures (always asked, listed first); the others are its baselines."""

Injector = Callable[[Mapping[str, Any], str], Injection]
"""Renders a memory document for a question: ``(memory, question) -> Injection`` (the lane's
policy ranks facts, e.g. by relevance to the question)."""

GOLD_CONFIDENCE = 1.0
"""The confidence a labelled fact carries in the gold memory."""


@dataclass(frozen=True)
class Context:
    """The text an answer prompt receives under one condition, and what it holds.

    Attributes:
        text: What replaces ``{memory}`` in the answer prompt.
        tokens: Its length under the read path's token counter.
        injected: Ids of the memory facts in ``text`` (``memory`` and ``gold_memory``; gold
            fact ids for the latter).
        dropped: Ids of the facts the budget left out.
    """

    text: str = ""
    tokens: int = 0
    injected: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    @classmethod
    def of(cls, injection: Injection) -> Context:
        """The context of a rendered memory."""
        return cls(
            injection.text,
            injection.tokens,
            tuple(str(f.get("id")) for f in injection.injected),
            tuple(str(f.get("id")) for f in injection.dropped),
        )


@dataclass(frozen=True)
class ReadPath:
    """How the agent reads memory: the lane's injection settings.

    Attributes:
        max_tokens: The injection budget (``max_injection_tokens``); also the budget of the
            raw history under ``full_context``.
        token_counting: ``tiktoken`` or ``char``.
        enabled: ``injection_enabled``: when false the agent receives no memory (the memory
            conditions render nothing).
        inject: Renders a memory for a question under the lane's policy; ``None``: the
            pipeline's order (confidence, highest first).
    """

    max_tokens: int = 2000
    token_counting: str = "tiktoken"
    enabled: bool = True
    inject: Injector | None = field(default=None, compare=False)

    def render(self, memory: Mapping[str, Any] | None, question: str) -> Context:
        """The context of ``memory`` for ``question`` (empty when injection is disabled)."""
        if not self.enabled or not memory:
            return Context()
        if self.inject is not None:
            return Context.of(self.inject(memory, question))
        injection = render_injection(memory, self.max_tokens, token_counting=self.token_counting)
        return Context.of(injection)


def gold_memory_document(owner: Owner, index: int) -> MemoryDocument:
    """The labelled facts active right after ``owner.sessions[index]`` as a memory document.

    Each fact keeps its gold id, content and category, with confidence 1 and the start of the
    session that revealed it as ``createdAt`` (so a recency policy orders them by that);
    summaries are empty (the labels say nothing about them). When the sessions so far teach
    labelled procedures, the document also has ``procedures`` as a procedural memory's
    snapshot has them (name, steps, case-folded triggers; one taught again under its name
    replaces the earlier): a read path that recalls procedures by trigger injects them.
    """
    revealed_at: dict[str, str] = {}
    for session in owner.sessions[: index + 1]:
        for fact in session.labels.facts:
            revealed_at.setdefault(fact.id, utc_iso(session.started_at))
    memory = create_empty_memory(owner.sessions[index].ended_at)
    memory["facts"] = [
        {
            "id": fact.id,
            "content": fact.content,
            "category": fact.category,
            "confidence": GOLD_CONFIDENCE,
            "createdAt": revealed_at[fact.id],
            "source": "gold",
        }
        for fact in owner.active_gold_facts(index)
    ]
    procedures = {
        p.name: {
            "name": p.name,
            "steps": list(p.steps),
            "triggers": [normalize_fact_text(t) for t in p.triggers],
        }
        for session in owner.sessions[: index + 1]
        for p in session.labels.procedures
    }
    if procedures:  # a document without procedures stays as it was
        memory["procedures"] = list(procedures.values())  # type: ignore[typeddict-unknown-key]
    return memory


_SPEAKERS = {"human": "User", "ai": "Assistant"}


class History:
    """The raw conversations of one owner, for the ``full_context`` condition.

    Each human and AI message is one block ``User: ...`` / ``Assistant: ...`` (tool and system
    messages are left out, as the memory pipeline leaves them out); its tokens are counted
    once, so that a context for each of many questions costs a walk over the blocks.
    """

    def __init__(self, owner: Owner, token_counting: str = "tiktoken") -> None:
        self.token_counting = token_counting
        self._owner = owner
        self._counter = get_token_counter(token_counting)
        self._headers: list[str] = []
        self._blocks: list[tuple[int, str, int]] = []  # (session, text, tokens)
        self._counted = False

    def _count(self) -> None:
        """Split and count the conversations once, when a context is first asked for (an
        owner's history costs nothing unless a condition reads it)."""
        if self._counted:
            return
        self._counted = True
        for index, session in enumerate(self._owner.sessions):
            self._headers.append(
                f"[Conversation {session.thread_id} on {utc_iso(session.started_at)}]"
            )
            for message in session.messages:
                speaker = _SPEAKERS.get(message.role)
                text = message.text.strip()
                if speaker is None or not text:
                    continue
                block = f"{speaker}: {text}"
                self._blocks.append((index, block, self._counter.count(block) + 1))

    def context(self, index: int, max_tokens: int) -> Context:
        """The newest messages of sessions ``0..index`` that fit ``max_tokens``, in order."""
        self._count()
        blocks = [b for b in self._blocks if b[0] <= index]
        chosen: list[tuple[int, str, int]] = []
        spent = 0
        for block in reversed(blocks):
            header = 0 if chosen and chosen[-1][0] == block[0] else self._header_tokens(block[0])
            if spent + block[2] + header > max_tokens:
                break
            chosen.append(block)
            spent += block[2] + header
        chosen.reverse()
        # Token counts are not exactly additive: drop the oldest message until the text fits.
        text = self._render(chosen)
        while chosen and self._counter.count(text) > max_tokens:
            chosen.pop(0)
            text = self._render(chosen)
        return Context(text, self._counter.count(text))

    def _header_tokens(self, session: int) -> int:
        return self._counter.count(self._headers[session]) + 2

    def _render(self, blocks: Sequence[tuple[int, str, int]]) -> str:
        lines: list[str] = []
        current = -1
        for session, text, _tokens in blocks:
            if session != current:
                lines.append(("\n" if lines else "") + self._headers[session])
                current = session
            lines.append(text)
        return "\n".join(lines)


@dataclass(frozen=True)
class ConditionPoint:
    """What a condition sees at one point of a replay (right after one session).

    Attributes:
        owner: The memory owner.
        index: The session just replayed (0-based).
        memory: The lane's memory at that point (``None`` when none was recorded).
        read: The lane's read path (budget, token counting, policy, design).
        history: The owner's raw conversations (counted when first read).
    """

    owner: Owner
    index: int
    memory: Mapping[str, Any] | None
    read: ReadPath
    history: History


ContextOf = Callable[[str], Context]
"""The context a question receives at one point: ``question -> Context``."""


@dataclass(frozen=True)
class QACondition:
    """One QA condition, registered by name (see the module docstring).

    Attributes:
        description: One line for listings (``memlab plugins``).
        open: ``open(point)``: the context of each question asked at ``point`` (work shared
            by the point's questions, such as building a memory, is done once here).
    """

    description: str
    open: Callable[[ConditionPoint], ContextOf]


class UnknownConditionError(PluginError, ValueError):
    """A QA condition that no registry entry has."""


def _unknown(name: str, known: Sequence[str]) -> UnknownConditionError:
    return UnknownConditionError(
        f"unknown condition {name!r}; conditions: {', '.join(known)} (or register one with "
        "QA_CONDITIONS.register in a memlab.plugins entry point)" + failure_hint()
    )


def qa_condition(name: str) -> QACondition:
    """The condition called ``name``.

    Raises:
        UnknownConditionError: No condition has that name (the message lists the known ones).
    """
    return QA_CONDITIONS.lookup(name)


def _memory(point: ConditionPoint) -> ContextOf:
    return lambda question: point.read.render(point.memory, question)


def _none(point: ConditionPoint) -> ContextOf:
    return lambda question: Context()


def _full_context(point: ConditionPoint) -> ContextOf:
    context = point.history.context(point.index, point.read.max_tokens)
    return lambda question: context


def _gold_memory(point: ConditionPoint) -> ContextOf:
    gold = gold_memory_document(point.owner, point.index)
    return lambda question: point.read.render(gold, question)


_BUILTIN_CONDITIONS: dict[str, QACondition] = {
    MEMORY_CONDITION: QACondition("the lane's memory, through the lane's injection path", _memory),
    "none": QACondition("nothing: what the agent knows without memory", _none),
    "full_context": QACondition(
        "the raw conversations so far, newest first within the budget", _full_context
    ),
    "gold_memory": QACondition(
        "the labelled facts active at that point, through the same injection path", _gold_memory
    ),
}

QA_CONDITIONS: Registry[QACondition] = declare(
    "qa_condition",
    "QA condition",
    unknown=_unknown,
    entry_type=QACondition,
    builtins=_BUILTIN_CONDITIONS,
)
"""Every QA condition by the name ``qa: {conditions: [...]}`` gives, in the order tables list
them."""

CONDITIONS: tuple[Condition, ...] = tuple(_BUILTIN_CONDITIONS)
"""The conditions memlab ships, in the order tables list them (plugins may register more)."""
