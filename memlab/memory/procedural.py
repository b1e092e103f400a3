"""The procedural memory design: DeerFlow's fact memory plus a graph of learned procedures.

Seed 004's procedural memory keeps procedures (a name, ordered steps, the triggers that
activate them) in a graph and, before the agent answers, recalls those whose trigger occurs
in the user's message and injects them as "available procedures". Here:

- facts: DeerFlow's design by default, unchanged (one LLM update per queued update; its records
  are the primary ones and name no call kind); with ``procedural: {facts: tiered}`` the tiered
  design at the seed's values (:mod:`memlab.memory.tiers.tiered`: its records, its forgetting
  between sessions and its layout, History after the facts), the seed's memory whole;
- learning: when a session's conversation is over, one LLM call (``procedures``,
  :mod:`memlab.core.procedure_prompts`) reads the whole session and returns the procedures it
  settled; each is written to the owner's graph
  (:class:`~memlab.memory.storage.graph.ProceduralGraph`, one transaction each; a procedure learned
  again under its name replaces the earlier one). The call's record is the session end's primary
  record (``session_end``), with ``learned`` (procedures stored) and ``refused`` (ones the store
  refused) counts. Over tiered facts a session end folds twice, the tiered working memory and
  the procedures, so its step answers two updates (:attr:`memlab.memory.strategy.Step.updates`),
  one primary record each;
- snapshot: DeerFlow's document with a ``procedures`` list (name, steps, triggers), read from
  the graph, so every snapshot shows the procedures known then;
- read path: the procedures one of whose triggers occurs in the query (the next session's first
  message, or the question), case-folded, as the graph's recall query decides
  (:func:`~memlab.memory.storage.graph.recall_procedures`), enter the injection first, as lines of
  category ``available procedure``: ``Name: 1) step; 2) step``. They pass through the lane's
  injector like facts, so they count against the injection budget and the audit lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from memlab.core.base.jsontext import canonical_hash
from memlab.core.jsondoc.document import MemoryDocument
from memlab.core.pipeline.injection import Injection
from memlab.core.pipeline.messages import filter_messages_for_memory, format_conversation_for_update
from memlab.core.pipeline.queue import ConversationContext
from memlab.core.pipeline.storage import InMemoryStorage, StorageError
from memlab.core.procedure_prompts import (
    PROCEDURES_CALL,
    PROCEDURES_CONTRACT,
    procedures_prompt,
)
from memlab.memory.design import DesignContext, DesignFlags, Injector, MemoryDesign
from memlab.memory.storage.graph import ProceduralGraph, Procedure, graph_files, recall_procedures
from memlab.memory.strategy import DeerFlowStrategy, MemoryStrategy, Step
from memlab.memory.tiers.tiered import TIERED, tiered_identity
from memlab.memory.tiers.tiered import lane_settings as tiered_lane_settings
from memlab.memory.tiers.tiered_calls import TieredCaller

__all__ = [
    "PROCEDURAL",
    "PROCEDURE_CATEGORY",
    "ProceduralOptions",
    "ProceduralStrategy",
    "procedural_graph_path",
    "procedural_identity",
    "procedure_line",
    "recalled_facts",
]

PROCEDURE_CATEGORY = "available procedure"
"""The category of the lines a recalled procedure is injected as."""


class ProceduralOptions(BaseModel):
    """The procedural design's options (the lane key ``procedural``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    facts: Literal["deerflow", "tiered"] = "deerflow"
    """The design that keeps the facts beside the procedures: ``deerflow`` (the default) or
    ``tiered`` (the tiered design at the seed's values, ``tiered:`` options not taken)."""


def _facts_of(settings: Mapping[str, Any]) -> str:
    return ProceduralOptions.model_validate(settings.get("procedural") or {}).facts


def _tiered_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The lane's settings as the tiered facts read them: the seed's values."""
    return {**settings, "tiered": {}}


def procedural_graph_path(store_path: Path) -> Path:
    """The graph database of a lane's owner beside its JSON store file."""
    return store_path.with_suffix(".kuzu")


def procedural_identity(settings: Mapping[str, Any]) -> dict[str, Any]:
    """What a procedural replay depends on besides the lane's update settings: the facts'
    design (with the tiered identity when the tiered design keeps them), the call's prompt
    (by content hash) and its reply contract."""
    facts = _facts_of(settings)
    identity: dict[str, Any] = {
        "design": "procedural",
        "facts": facts,
        "prompt": procedures_prompt().sha256,
        "contract": canonical_hash(dict(PROCEDURES_CONTRACT.schema or {})),
    }
    if facts == "tiered":
        identity["tiered"] = tiered_identity(tiered_lane_settings(_tiered_settings(settings)))
    return identity


def procedure_line(procedure: Mapping[str, Any]) -> str:
    """``Name: 1) first step; 2) second step`` (how a recalled procedure is injected)."""
    steps = "; ".join(f"{i}) {step}" for i, step in enumerate(procedure.get("steps", ()), 1))
    return f"{procedure.get('name', '')}: {steps}"


class ProceduralStrategy:
    """DeerFlow's memory and a procedure graph behind the replay's interface (module docstring).

    Args:
        facts: The fact memory (DeerFlow's strategy).
        caller: Sends the ``procedures`` call as the lane says.
        graph: The owner's graph (fresh for a replay).
        clock: The replay's virtual clock.
    """

    def __init__(
        self,
        facts: MemoryStrategy,
        caller: TieredCaller,
        graph: ProceduralGraph,
        clock: Callable[[], datetime],
    ) -> None:
        self.facts = facts
        self.caller = caller
        self.graph = graph
        self.clock = clock
        self.prompt = procedures_prompt()
        self.conversations: dict[str, list[Any]] = {}

    @property
    def primary_call(self) -> str | None:
        """The facts' primary call kind (a queued update is the facts' step)."""
        return self.facts.primary_call

    def process(self, context: ConversationContext) -> Step:
        self.conversations[context.thread_id] = filter_messages_for_memory(context.messages)
        return self.facts.process(context)

    def end_session(self, thread_id: str) -> Step | None:
        """The facts' session end (the tiered fold; DeerFlow's has none), then the
        procedures call: one step answering one update per part that returned one."""
        folded = self.facts.end_session(thread_id)
        learned = self._learn(thread_id)
        if folded is None or learned is None:
            return folded or learned
        return Step(
            [*folded.records, *learned.records],
            folded.saved or learned.saved,
            folded.forgetting,
            updates=folded.updates + learned.updates,
        )

    def _learn(self, thread_id: str) -> Step | None:
        """The procedures call over the session's conversation; its procedures learned."""
        messages = self.conversations.pop(thread_id, None)
        if not messages:
            return None
        now = self.clock()
        prompt = self.prompt.render(format_conversation_for_update(messages))
        result, data = self.caller.ask(PROCEDURES_CALL, prompt, thread_id)
        learned = refused = 0
        for item in data["procedures"] if data is not None else []:
            procedure = Procedure(
                str(item["name"]),
                tuple(str(s) for s in item["steps"]),
                tuple(str(t) for t in item["triggers"]),
                source=thread_id,
            )
            try:
                self.graph.learn(procedure, now)
            except StorageError:  # no usable step or trigger left after cleaning
                refused += 1
                continue
            learned += 1
        result.saved = learned > 0
        result.extra.update({"learned": learned, "refused": refused})
        return Step([result.to_record()], result.saved)

    def advance(self, now: datetime) -> Step | None:
        return self.facts.advance(now)

    def snapshot(self) -> MemoryDocument:
        document: dict[str, Any] = dict(self.facts.snapshot())
        document["procedures"] = [p.to_dict() for p in self.graph.procedures()]
        return document  # type: ignore[return-value]  # a document with one key more

    def close(self) -> None:
        try:
            self.facts.close()
        finally:
            self.graph.close()


def recalled_facts(memory: Mapping[str, Any], query: str) -> list[dict[str, Any]]:
    """The procedures ``query`` recalls, as fact entries of :data:`PROCEDURE_CATEGORY`."""
    procedures = memory.get("procedures")
    if not isinstance(procedures, list):
        return []
    valid = [p for p in procedures if isinstance(p, Mapping)]
    return [
        {"content": procedure_line(p), "category": PROCEDURE_CATEGORY, "confidence": 1.0}
        for p in recall_procedures(valid, query)
    ]


def _read(inject: Injector) -> Injector:
    def read(memory: Mapping[str, Any], query: str) -> Injection:
        recalled = recalled_facts(memory, query)
        if not recalled:
            return inject(memory, query)
        facts = memory.get("facts")
        kept: Sequence[Any] = facts if isinstance(facts, list) else []
        return inject({**memory, "facts": [*recalled, *kept]}, query)

    return read


def _open(context: DesignContext) -> ProceduralStrategy:
    facts: MemoryStrategy
    if _facts_of(context.settings) == "tiered":
        facts = TIERED.open(replace(context, settings=_tiered_settings(context.settings)))
    else:
        storage = InMemoryStorage(context.start, clock=context.clock)
        facts = DeerFlowStrategy(context.updater(storage), storage)
    caller = TieredCaller(
        context.backend,
        context.output_mode,
        context.params,
        context.parse_options,
        context.sample,
        context.clock,
        contracts={PROCEDURES_CALL: PROCEDURES_CONTRACT},
    )
    path = procedural_graph_path(context.store_path)
    for stale in graph_files(path):  # a replay always starts from an empty memory
        stale.unlink(missing_ok=True)
    return ProceduralStrategy(facts, caller, ProceduralGraph(path), context.clock)


def _lane_flags(settings: Mapping[str, Any]) -> DesignFlags:
    """Over tiered facts, the tiered design's flags (it forgets; History after the facts)."""
    if _facts_of(settings) == "tiered":
        return DesignFlags(TIERED.forgets, TIERED.history_last)
    return DesignFlags()


PROCEDURAL = MemoryDesign(
    "DeerFlow's (or tiered) facts and a graph of procedures learned per session, recalled by "
    "trigger (memlab.memory.procedural; needs memlab[procedural])",
    _open,
    identity=procedural_identity,
    scratch=lambda store_path: graph_files(procedural_graph_path(store_path)),
    read=_read,
    options="procedural",
    options_model=ProceduralOptions,
    lane_flags=_lane_flags,
)
"""The procedural design as the registry of :mod:`memlab.memory.designs` holds it."""
