"""The tiered memory design: working memory, session summaries, semantic and episodic memory,
forgetting on the replay's virtual clock.

Per thread the strategy keeps a working memory (the context window): the conversation's
messages, oldest first. Each update the queue hands over:

1. records an episode for every interaction (a human message and the reply to it);
2. adds the new messages to the working memory and, while it holds more than
   ``working_tokens`` tokens, evicts the oldest non-system message;
3. folds the evicted messages into the thread's session summary with one LLM call
   (``summary``), whose reply also lists key points, the candidate long-term facts; the
   summary is cut to ``summary_tokens`` tokens (2,000, the seed's budget) when longer;
4. asks one LLM call (``importance``) to rate the key points not rated before in the session
   and not held as memories, and writes those rated *above* ``importance_threshold`` (0.7) as
   semantic memories; its record lists the others with their ratings (``below_threshold``:
   the threshold and each key point's ``content`` and ``importance``).

An update that evicts nothing makes no call: its record says ``skipped: in_working_memory``.
When a session ends its context window closes: the whole working memory is folded (steps 3
and 4). When virtual time passes between sessions the store forgets (importance decays, weak
memories are deleted, near duplicates merged: :meth:`TieredStore.forget`) and, once enough
memories are old, one LLM call (``compression``) merges them into one summary memory.

Every call's record is a call-table row with its kind in ``call``; the summary step's record is
the update's primary record (:mod:`memlab.memory.strategy`). The memory is seen as a memory
document through :func:`~memlab.memory.tiers.tiered_view.document_view`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from memlab.core.base.jsontext import canonical_hash
from memlab.core.jsondoc.document import MemoryDocument, normalize_fact_text
from memlab.core.pipeline.injection import TokenCounter, get_token_counter, truncate_to_tokens
from memlab.core.pipeline.messages import (
    filter_messages_for_memory,
    format_conversation_for_update,
    message_role,
)
from memlab.core.pipeline.queue import ConversationContext
from memlab.core.pipeline.updater import UpdateResult
from memlab.core.tiered_prompts import (
    CALL_CONTRACTS,
    TIERED_CALLS,
    TieredCall,
    compression_prompt,
    importance_prompt,
    summary_prompt,
    tiered_prompt,
)
from memlab.memory.design import DesignContext, MemoryDesign
from memlab.memory.storage.items import ForgettingRules
from memlab.memory.storage.store import Embed, TieredStore
from memlab.memory.strategy import Step
from memlab.memory.tiers.options import TieredOptions
from memlab.memory.tiers.tiered_bounds import TieredBounds, TieredMaxTokens
from memlab.memory.tiers.tiered_calls import TieredCaller
from memlab.memory.tiers.tiered_embedding import (
    HASHED,
    EmbeddingOptions,
    embedding_identity,
    open_embedding,
)
from memlab.memory.tiers.tiered_view import document_view

__all__ = [
    "EMBEDDING",
    "TIERED",
    "TieredSettings",
    "TieredStrategy",
    "lane_settings",
    "tiered_identity",
    "tiered_store_path",
]

EMBEDDING = HASHED
"""The default embedding the store recalls and merges with: hashed words, no model (the same
vectors on every machine; texts sharing words are similar, paraphrases are not). A lane may
choose another (``tiered.embedding``: :mod:`memlab.memory.tiers.tiered_embedding`)."""


@dataclass(frozen=True)
class TieredSettings:
    """The tiered memory's parameters (the seed's values by default).

    Attributes:
        working_tokens: Most tokens the working memory holds before evicting.
        summary_tokens: Most tokens a session summary keeps (longer ones are cut).
        importance_threshold: Key points rated *above* it become semantic memories.
        recent_episodes: Interactions the memory document shows (episodic memory).
        recall_k: Semantic memories the agent recalls for each user message (they count as
            accessed, so they do not decay).
        recall_refreshes: Whether a recall restarts the recalled memories' decay (the seed's
            behaviour); false: memories decay from their creation, recalled or not.
        rules: The store's forgetting rules.
        token_counting: How tokens are counted (the lane's ``token_counting``).
        schema_bounds: Length limits of the calls' schemas (``None``: unbounded).
        max_tokens: Each kind of call's ``max_tokens`` (a kind left out: the lane's).
        embedding: The embedding of recall and merge (``None``: hashed words).
    """

    working_tokens: int = 4000
    summary_tokens: int = 2000
    importance_threshold: float = 0.7
    recent_episodes: int = 3
    recall_k: int = 3
    rules: ForgettingRules = field(default_factory=ForgettingRules)
    token_counting: str = "tiktoken"
    recall_refreshes: bool = True
    schema_bounds: TieredBounds | None = None
    max_tokens: Mapping[TieredCall, int] = field(default_factory=dict)
    embedding: EmbeddingOptions | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (part of a lane's identity). The settings added since the first
        tiered lanes appear only when set (``recall_refreshes`` only when false), so those
        lanes keep their identities."""
        data = asdict(replace(self, schema_bounds=None, max_tokens={}, embedding=None))
        del data["schema_bounds"], data["max_tokens"], data["embedding"]
        if self.recall_refreshes:
            del data["recall_refreshes"]
        if self.schema_bounds is not None:
            data["schema_bounds"] = self.schema_bounds.model_dump(mode="json")
        if self.max_tokens:
            data["max_tokens"] = dict(self.max_tokens)
        if self.embedding is not None:
            data["embedding"] = self.embedding.model_dump(mode="json", exclude_none=True)
        return data


def tiered_identity(settings: TieredSettings) -> dict[str, Any]:
    """What a tiered replay depends on besides the lane's update settings: its parameters,
    each call's prompt (by content hash) and reply contract, and the embedding."""
    prompts = {call: tiered_prompt(call).sha256 for call in TIERED_CALLS}
    contracts = {
        call: canonical_hash(dict(CALL_CONTRACTS[call].schema or {})) for call in TIERED_CALLS
    }
    return {
        "design": "tiered",
        "settings": settings.to_dict(),
        "prompts": prompts,
        "contracts": contracts,
        "embedding": embedding_identity(settings.embedding),
    }


def tiered_store_path(store_path: Path) -> Path:
    """The SQLite database of a lane's owner beside its JSON store file."""
    return store_path.with_suffix(".sqlite")


def lane_settings(lane: Mapping[str, Any]) -> TieredSettings:
    """The parameters of a lane's settings (JSON values, ``LaneConfig.settings()``): its
    ``tiered`` options (the seed's values unless the grid sets them), counting tokens as the
    lane counts them."""
    options = TieredOptions.model_validate(lane.get("tiered") or {})
    return TieredSettings(
        working_tokens=options.working_tokens,
        summary_tokens=options.summary_tokens,
        importance_threshold=options.importance_threshold,
        recall_k=options.recall_k,
        recall_refreshes=options.recall_refreshes,
        rules=options.rules(),
        token_counting=str(lane.get("token_counting", TieredSettings.token_counting)),
        schema_bounds=options.schema_bounds,
        max_tokens=_call_max_tokens(options.max_tokens),
        embedding=options.embedding,
    )


def _call_max_tokens(asked: TieredMaxTokens | None) -> dict[TieredCall, int]:
    """The kinds of call given a number of their own (``auto`` is resolved by the grid)."""
    if asked is None:
        return {}
    return {call: value for call in TIERED_CALLS if (value := asked.of(call)) is not None}


@dataclass
class _Thread:
    """One conversation's working memory."""

    seen: int = 0
    window: list[Any] = field(default_factory=list)
    pending_input: str | None = None
    last_at: datetime | None = None
    rated: set[str] = field(default_factory=set)


class TieredStrategy:
    """The tiered memory design behind the replay's strategy interface (module docstring).

    Args:
        caller: Sends the calls as the lane says.
        store: The tiered store (fresh for a replay).
        settings: The design's parameters.
        clock: The replay's virtual clock.
    """

    primary_call: str | None = "summary"

    def __init__(
        self,
        caller: TieredCaller,
        store: TieredStore,
        settings: TieredSettings,
        clock: Callable[[], datetime],
    ) -> None:
        self.caller = caller
        self.store = store
        self.settings = settings
        self.clock = clock
        self.counter: TokenCounter = get_token_counter(settings.token_counting)
        self.summary_prompt = summary_prompt()
        self.importance_prompt = importance_prompt()
        self.compression_prompt = compression_prompt()
        self.threads: dict[str, _Thread] = {}
        self.forgotten_at: datetime | None = None

    @classmethod
    def open(
        cls,
        caller: TieredCaller,
        path: Path | None,
        settings: TieredSettings,
        clock: Callable[[], datetime],
        ids: Callable[[], str] | None = None,
        embed: Embed = EMBEDDING,
    ) -> TieredStrategy:
        """A strategy on a fresh database at ``path`` (an earlier one is removed: a replay
        always starts from an empty memory); ``None``: in memory. ``embed``: the
        embedding of recall and merge."""
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                stale.unlink(missing_ok=True)
        store = TieredStore(path, embed=embed, ids=ids)
        return cls(caller, store, settings, clock)

    # ------------------------------------------------------------------ strategy interface

    def process(self, context: ConversationContext) -> Step:
        now = self.clock()
        thread_id = context.thread_id
        state = self.threads.setdefault(thread_id, _Thread())
        kept = filter_messages_for_memory(context.messages)
        new = kept[state.seen :] if len(kept) >= state.seen else kept
        state.seen = len(kept)
        state.last_at = now
        self._record_episodes(state, thread_id, new, now)
        state.window.extend(new)
        evicted = self._evict(state.window)
        if not evicted:
            result = UpdateResult(thread_id, now, skipped="in_working_memory")
            result.extra["call"] = "summary"
            result.facts_before = result.facts_after = len(self.store.memories())
            return Step([result.to_record()])
        return self._fold(thread_id, evicted, now)

    def end_session(self, thread_id: str) -> Step | None:
        state = self.threads.get(thread_id)
        if state is None or not state.window:
            return None
        evicted, state.window = state.window, []
        return self._fold(thread_id, evicted, state.last_at or self.clock())

    def advance(self, now: datetime) -> Step | None:
        if self.forgotten_at is not None and now <= self.forgotten_at:
            return None
        self.forgotten_at = now
        rules = self.settings.rules
        events = list(self.store.forget(now, rules))
        records: list[dict[str, Any]] = []
        old = self.store.compression_candidates(now, rules)
        if old:
            prompt = self.compression_prompt.render([m.content for m in old])
            result, data = self.caller.ask("compression", prompt, None)
            result.facts_before = len(self.store.memories())
            if data is not None:
                events.append(self.store.replace_with_summary(old, str(data["summary"]), now))
                result.saved = True
            result.facts_after = len(self.store.memories())
            result.extra["compressed"] = len(old) if result.saved else 0
            records.append(result.to_record())
        if not events and not records:
            return None
        return Step(records, bool(events), [e.to_record() for e in events])

    def snapshot(self) -> MemoryDocument:
        episodes = self.store.episodes()
        recent = episodes[-self.settings.recent_episodes :] if self.settings.recent_episodes else []
        return document_view(
            self.store.memories(), self.store.session_summary(None), recent, self.clock()
        )

    def close(self) -> None:
        self.store.close()

    # ------------------------------------------------------------------ steps

    def _record_episodes(
        self, state: _Thread, thread_id: str, new: Sequence[Any], now: datetime
    ) -> None:
        """An episode per interaction: a human message and the reply that follows it.

        Each human message is also what the agent recalled semantic memories for (the
        seed's top-k recall before answering): the recalled memories count as accessed, so
        they do not decay while they stay in use (unless ``recall_refreshes`` is off: then
        nothing is recalled here, as the recall's only effect on the memory is that access).
        """
        for message in new:
            text = format_conversation_for_update([message]).split(": ", 1)[-1]
            role = message_role(message)
            if role == "human":
                state.pending_input = text
                if self.settings.recall_k and self.settings.recall_refreshes:
                    self.store.recall_memories(text, self.settings.recall_k, at=now)
            elif role == "ai" and state.pending_input is not None:
                self.store.add_episode(
                    at=now,
                    thread_id=thread_id,
                    input=state.pending_input,
                    output=text,
                    outcome="success",
                )
                state.pending_input = None

    def _tokens(self, message: Any) -> int:
        return self.counter.count(format_conversation_for_update([message]))

    def _evict(self, window: list[Any]) -> list[Any]:
        """Evict the oldest non-system messages while the window holds too many tokens."""
        evicted: list[Any] = []
        sizes = [self._tokens(m) for m in window]
        while sum(sizes) > self.settings.working_tokens and len(window) > 1:
            index = next((i for i, m in enumerate(window) if message_role(m) != "system"), None)
            if index is None:
                break
            evicted.append(window.pop(index))
            sizes.pop(index)
        return evicted

    def _fold(self, thread_id: str, evicted: Sequence[Any], at: datetime) -> Step:
        """Fold evicted messages into the session summary; rate and keep its key points."""
        previous = self.store.session_summary(thread_id)
        prompt = self.summary_prompt.render(
            previous[0] if previous else "", format_conversation_for_update(list(evicted))
        )
        result, data = self.caller.ask("summary", prompt, thread_id)
        result.facts_before = result.facts_after = len(self.store.memories())
        records = [result]
        if data is not None:
            summary = str(data["summary"])
            if self.counter.count(summary) > self.settings.summary_tokens:
                summary = truncate_to_tokens(summary, self.settings.summary_tokens, self.counter)
                result.extra["summary_cut"] = True
            points = [str(p).strip() for p in data["keyPoints"] if str(p).strip()]
            self.store.set_session_summary(thread_id, summary, points, at)
            result.saved = True
            result.extra["key_points"] = len(points)
            fresh = self._candidates(thread_id, points)
            if fresh:
                records.append(self._rate(thread_id, fresh, at))
        return Step([r.to_record() for r in records], any(r.saved for r in records))

    def _candidates(self, thread_id: str, points: Sequence[str]) -> list[str]:
        """Key points to rate: not rated before in this session, not held as a memory."""
        state = self.threads.setdefault(thread_id, _Thread())
        held = {normalize_fact_text(m.content) for m in self.store.memories()}
        fresh: list[str] = []
        for point in dict.fromkeys(points):
            key = normalize_fact_text(point)
            if key not in state.rated and key not in held:
                state.rated.add(key)
                fresh.append(point)
        return fresh

    def _rate(self, thread_id: str, candidates: Sequence[str], at: datetime) -> UpdateResult:
        """Rate ``candidates``; write those rated above the threshold as semantic memories."""
        result, data = self.caller.ask(
            "importance", self.importance_prompt.render(candidates), thread_id
        )
        result.facts_before = len(self.store.memories())
        rated: set[int] = set()
        below: list[dict[str, Any]] = []
        stored = ignored = 0
        for rating in data["ratings"] if data is not None else []:
            index = int(rating["index"])
            if not 1 <= index <= len(candidates) or index in rated:
                ignored += 1  # a number the prompt did not give, or a second rating
                continue
            rated.add(index)
            importance = float(rating["importance"])
            if importance <= self.settings.importance_threshold:
                below.append({"content": candidates[index - 1], "importance": importance})
                continue
            self.store.add_memory(
                candidates[index - 1],
                category=str(rating["category"]),
                importance=importance,
                at=at,
                source=thread_id,
            )
            stored += 1
        result.saved = stored > 0
        result.facts_after = len(self.store.memories())
        result.extra.update({"candidates": len(candidates), "rated": len(rated), "stored": stored})
        if ignored:
            result.extra["ignored_ratings"] = ignored
        if below:  # what the causes of wrong answers read (the owner record keeps it)
            threshold = self.settings.importance_threshold
            result.extra["below_threshold"] = {"threshold": threshold, "key_points": below}
        return result


def _open(context: DesignContext) -> TieredStrategy:
    settings = lane_settings(context.settings)
    caller = TieredCaller(
        context.backend,
        context.output_mode,
        context.params,
        context.parse_options,
        context.sample,
        context.clock,
        bounds=settings.schema_bounds,
        max_tokens=settings.max_tokens,
    )
    return TieredStrategy.open(
        caller,
        tiered_store_path(context.store_path),
        settings,
        context.clock,
        ids=context.ids,
        embed=open_embedding(settings.embedding, context.backend),
    )


TIERED = MemoryDesign(
    "working memory, session summaries, importance-rated semantic memories, episodes, "
    "forgetting (memlab.memory.tiers.tiered)",
    _open,
    identity=lambda lane: tiered_identity(lane_settings(lane)),
    forgets=True,
    # The seed's layout: summary, semantic memories, then episodes.
    history_last=True,
    options="tiered",
    options_model=TieredOptions,
    scratch=lambda store_path: (tiered_store_path(store_path),),
)
"""The tiered design as the registry of :mod:`memlab.memory.designs` holds it."""
