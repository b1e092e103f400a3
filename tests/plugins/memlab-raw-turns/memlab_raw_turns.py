"""An example memlab plugin: the ``raw-turns`` memory design, the ``same-words`` judge prompt,
the ``oldest-first`` injection policy and the ``first-fact`` QA condition.

``raw-turns`` is a retrieval baseline: it keeps every conversation turn (each human message
and each reply without tool calls) verbatim as a fact, ``User: ...`` or ``Assistant: ...``, and
makes no LLM call. An agent reads it (at the next session, and when answering a question) by
the ``TOP_K`` turns most relevant to its query under memlab's lexical
:func:`~memlab.core.jsondoc.similarity.relevance_score`, within the lane's injection budget.

``same-words`` is a QA judge prompt that asks for the reference's key words in the answer.

``oldest-first`` is an injection policy that offers the oldest facts (by ``createdAt``) to the
budget first. ``first-fact`` is a QA condition: the lane's memory cut to its first stored
fact, read through the lane's injection path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memlab.core.jsondoc.document import (
    MemoryDocument,
    copy_document,
    create_empty_memory,
    parse_utc,
    utc_iso,
)
from memlab.core.jsondoc.similarity import relevance_score
from memlab.core.pipeline.injection import FactRank, Injection
from memlab.core.pipeline.messages import content_text, filter_messages_for_memory, message_role
from memlab.core.pipeline.queue import ConversationContext
from memlab.core.pipeline.updater import UpdateResult
from memlab.memory.design import DesignContext, Injector, MemoryDesign
from memlab.memory.designs import MEMORY_DESIGNS
from memlab.memory.policies import INJECTION_POLICIES, InjectionPolicy, TextEmbedder
from memlab.memory.strategy import Step
from memlab.qa.conditions import QA_CONDITIONS, ConditionPoint, ContextOf, QACondition
from memlab.qa.qa_prompts import JUDGE_PROMPTS, JudgePrompt

__all__ = [
    "FIRST_FACT",
    "JUDGE",
    "OLDEST_FIRST",
    "RAW_TURNS",
    "SKIPPED",
    "TOP_K",
    "RawTurns",
    "RawTurnsOptions",
    "register",
    "top_turns",
]

TOP_K = 5
"""Turns an agent reads per query."""

SKIPPED = "raw_turns_kept"
"""The ``skipped`` reason of every record: the design asks no model."""

_SPEAKERS = {"human": "User", "ai": "Assistant"}


class RawTurnsOptions(BaseModel):
    """The design's options, as a grid sets them under ``raw_turns:``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    keep_last: int = Field(0, ge=0, le=1_000_000, strict=True)
    """The most turns kept (the oldest are dropped first); 0 keeps every turn."""


class RawTurns:
    """The strategy: every new turn of a handed-over conversation becomes one fact."""

    primary_call: str | None = None  # its records are updates, as DeerFlow's

    def __init__(self, context: DesignContext) -> None:
        options: RawTurnsOptions = RAW_TURNS.options_of(context.settings)
        self.keep_last = options.keep_last
        self.clock = context.clock
        self.ids = context.ids
        self.seen: dict[str, int] = {}
        self.memory = create_empty_memory(self.clock())

    def process(self, context: ConversationContext) -> Step:
        now = self.clock()
        kept = filter_messages_for_memory(context.messages)
        new = kept[self.seen.get(context.thread_id, 0) :]
        self.seen[context.thread_id] = len(kept)
        result = UpdateResult(context.thread_id, now, skipped=SKIPPED)
        result.facts_before = len(self.memory["facts"])
        for message in new:
            text = content_text(message.get("content")).strip()
            speaker = _SPEAKERS.get(message_role(message))
            if speaker is None or not text:
                continue
            self.memory["facts"].append(
                {
                    "id": self.ids(),
                    "content": f"{speaker}: {text}",
                    "category": "context",
                    "confidence": 1.0,
                    "createdAt": utc_iso(now),
                    "source": context.thread_id,
                }
            )
        added = len(self.memory["facts"]) > result.facts_before
        if self.keep_last and len(self.memory["facts"]) > self.keep_last:
            del self.memory["facts"][: -self.keep_last]
        result.facts_after = len(self.memory["facts"])
        result.saved = added
        if result.saved:
            self.memory["lastUpdated"] = utc_iso(now)
        return Step([result.to_record()], result.saved)

    def end_session(self, thread_id: str) -> Step | None:
        return None

    def advance(self, now: datetime) -> Step | None:
        return None  # raw turns are never forgotten

    def snapshot(self) -> MemoryDocument:
        return copy_document(self.memory)

    def close(self) -> None:
        return None


def top_turns(memory: Mapping[str, Any], query: str, k: int = TOP_K) -> list[Mapping[str, Any]]:
    """The ``k`` stored turns most relevant to ``query`` (ties: the older first)."""
    facts = [f for f in memory.get("facts", []) if isinstance(f, Mapping)]
    ranked = sorted(
        range(len(facts)),
        key=lambda i: (-relevance_score(str(facts[i].get("content", "")), query), i),
    )
    return [facts[i] for i in ranked[:k]]


def _read(inject: Injector) -> Injector:
    def read(memory: Mapping[str, Any], query: str) -> Injection:
        return inject({**memory, "facts": top_turns(memory, query)}, query)

    return read


RAW_TURNS = MemoryDesign(
    "every turn kept verbatim; the top-k turns by lexical relevance are read "
    "(an example plugin, tests/plugins/memlab-raw-turns)",
    RawTurns,
    # The changed options only: a lane at the defaults keeps its id.
    identity=lambda lane: {"design": "raw-turns", "top_k": TOP_K, **lane.get("raw_turns", {})},
    read=_read,
    options="raw_turns",
    options_model=RawTurnsOptions,
)

JUDGE = JudgePrompt(
    "same-words",
    "Grade an answer to a question about a user against the reference answer.\n\n"
    "The answer is CORRECT when it contains the key words of the reference answer (names, "
    "places, numbers, dates), whatever else it says; otherwise it is WRONG.\n\n"
    "<<<QUESTION\n{question}\nQUESTION>>>\n\n"
    "<<<REFERENCE\n{gold_answer}\nREFERENCE>>>\n\n"
    "<<<ANSWER\n{answer}\nANSWER>>>\n\n"
    'Reply with one JSON object and nothing else: {"label": "CORRECT"} or {"label": "WRONG"}\n',
    "Correct when the answer contains the reference's key words (an example plugin).",
    source="memlab_raw_turns.py",
)


def _oldest_first(
    facts: Sequence[Mapping[str, Any]], query: str, embedder: TextEmbedder | None
) -> FactRank:
    def rank(fact: Mapping[str, Any]) -> float:
        moment = parse_utc(fact.get("createdAt"))
        return -moment.timestamp() if moment is not None else float("-inf")

    return rank


OLDEST_FIRST = InjectionPolicy("oldest createdAt first (an example plugin)", _oldest_first)


def _first_fact(point: ConditionPoint) -> ContextOf:
    memory = point.memory or {}
    first = {**memory, "facts": list(memory.get("facts", []))[:1]}
    return lambda question: point.read.render(first, question)


FIRST_FACT = QACondition(
    "the lane's memory cut to its first stored fact (an example plugin)", _first_fact
)


def register() -> None:
    """Called once per process by memlab when it loads its plugins."""
    MEMORY_DESIGNS.register("raw-turns", RAW_TURNS)
    JUDGE_PROMPTS.register("same-words", lambda: JUDGE)
    INJECTION_POLICIES.register("oldest-first", OLDEST_FIRST)
    QA_CONDITIONS.register("first-fact", FIRST_FACT)
