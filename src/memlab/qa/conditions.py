"""What the agent sees when it answers: the conditions of memory QA.

A question is asked at a point of the replay (right after one of the owner's sessions). The
agent's answer prompt receives a *context* (:class:`Context`) built under one condition:

- ``memory``: the lane's memory at that point, rendered through the lane's injection path
  (:func:`~memlab.core.injection.render_injection` with the lane's budget, token counting and
  policy; :class:`ReadPath`);
- ``none``: nothing (what the agent knows without memory);
- ``full_context``: the raw conversations so far instead of a memory: messages are taken
  newest first while they fit the lane's budget, and shown in conversation order under a
  heading per session (:class:`History`);
- ``gold_memory``: the labelled facts active at that point as a memory document
  (:func:`gold_memory_document`), rendered through the same injection path: what a perfect
  write side would give the agent, the ceiling of the write side.

The conditions form an axis: the baselines sit in the same table as the lane's memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from memlab.core.document import MemoryDocument, create_empty_memory, utc_iso
from memlab.core.injection import Injection, get_token_counter, render_injection
from memlab.datasets.models import Owner

__all__ = [
    "CONDITIONS",
    "Condition",
    "Context",
    "History",
    "Injector",
    "ReadPath",
    "gold_memory_document",
]

Condition = Literal["memory", "none", "full_context", "gold_memory"]
CONDITIONS: tuple[Condition, ...] = get_args(Condition)
"""Every condition, in the order tables list them."""

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
    summaries are empty (the labels say nothing about them).
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
        self._counter = get_token_counter(token_counting)
        self._headers: list[str] = []
        self._blocks: list[tuple[int, str, int]] = []  # (session, text, tokens)
        for index, session in enumerate(owner.sessions):
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
