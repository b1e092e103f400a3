"""Replay one memory owner's sessions through the real pipeline on a virtual clock.

Per session, the agent "finishes a run" at each AI message without tool calls; at that moment
the real :class:`MemoryMiddleware` sees the thread's messages so far and enqueues them in the
real :class:`MemoryUpdateQueue`, whose debounce timer runs on a :class:`VirtualScheduler`
driven by the dataset's timestamps. Coalesced runs therefore cost one LLM call, exactly as in
production, while a month of conversations replays in milliseconds.

In ``per_session`` mode the queue is flushed after every session instead (one update per
session, no debounce effects).

Memory snapshots: in ``debounce`` mode the snapshot for a session is taken just before the next
session starts (the memory the user returns to) and after the final timers for the last one;
in ``per_session`` mode right after the flush.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memlab.backends.base import Backend, GenerationParams
from memlab.core.clock import VirtualScheduler
from memlab.core.config import MemoryConfig
from memlab.core.document import SeededFactIds, parse_utc, utc_iso
from memlab.core.merge import get_merge_strategy
from memlab.core.middleware import MemoryMiddleware
from memlab.core.parsing import ParseOptions
from memlab.core.prompts import PromptRegistry, default_registry
from memlab.core.queue import ConversationContext, MemoryUpdateQueue
from memlab.core.storage import InMemoryStorage, JsonFileStorage, StorageError
from memlab.core.updater import MemoryUpdater
from memlab.datasets.models import Owner
from memlab.eval.grid import LaneConfig, ReplayMode

__all__ = ["OwnerReplay", "parse_options_for", "replay_owner"]

logger = logging.getLogger(__name__)

_PARSE_PRESETS: dict[str, Callable[[], ParseOptions]] = {
    "default": ParseOptions,
    "deerflow": ParseOptions.deerflow,
    "strict_only": ParseOptions.strict_only,
    "repair": lambda: ParseOptions(lenient=True, repair=True),
}


def parse_options_for(name: str) -> ParseOptions:
    """Return the parse-ladder options of a lane's ``parse`` preset."""
    return _PARSE_PRESETS[name]()


@dataclass
class OwnerReplay:
    """What replaying one owner under one lane produced.

    Attributes:
        user_id: The memory owner.
        calls: One record per LLM update (``UpdateResult.to_record()`` plus session index).
        snapshots: The memory document after each session (index-aligned with sessions).
        agent_runs: Agent runs seen by the middleware per session (updates requested).
        coalesced: Updates the debounce merged into a later one (LLM calls saved).
        final_memory: The memory document at the end.
    """

    user_id: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    agent_runs: list[int] = field(default_factory=list)
    coalesced: int = 0
    final_memory: dict[str, Any] = field(default_factory=dict)


def replay_owner(
    owner: Owner,
    lane: LaneConfig,
    *,
    backend: Backend,
    store_path: Path,
    replay_mode: ReplayMode = "debounce",
    max_sessions: int | None = None,
    prompts: PromptRegistry | None = None,
) -> OwnerReplay:
    """Replay ``owner``'s sessions under ``lane`` into a fresh store written to ``store_path``.

    A replay always starts from an empty memory; ids and timestamps come from the lane-seeded
    id generator and the virtual clock, so the same dataset and lane build byte-identical
    prompts (and hit the response cache). The lane's memory lives in memory while the replay
    runs (no other process shares it, and every update would otherwise serialise and rename a
    file); ``store_path`` is rewritten at each snapshot, so it shows the latest session's
    memory while the replay runs.
    """
    sessions = owner.sessions[:max_sessions] if max_sessions else owner.sessions
    store_path.parent.mkdir(parents=True, exist_ok=True)
    store_path.unlink(missing_ok=True)
    scheduler = VirtualScheduler(sessions[0].started_at)
    config = MemoryConfig(
        debounce_seconds=lane.debounce_seconds,
        max_facts=lane.max_facts,
        fact_confidence_threshold=lane.fact_confidence_threshold,
        storage_path=str(store_path),
    )

    def provider() -> MemoryConfig:
        return config

    storage = InMemoryStorage(clock=scheduler.now)
    # A scratch file rebuilt on every replay: atomic writes, but no fsync.
    store_file = JsonFileStorage(store_path, clock=scheduler.now, durable=False)
    registry = prompts or default_registry()
    updater = MemoryUpdater(
        backend=backend,
        storage=storage,
        prompt=registry.get(lane.prompt),
        output_mode=lane.output_mode,
        params=GenerationParams(
            temperature=lane.temperature, max_tokens=lane.max_tokens, seed=lane.seed
        ),
        parse_options=parse_options_for(lane.parse),
        merge=get_merge_strategy(lane.merge, **lane.merge_params),
        config_provider=provider,
        clock=scheduler.now,
        fact_ids=SeededFactIds(f"{lane.lane_id}/{owner.user_id}"),
        schema_bounds=lane.schema_bounds,
    )
    session_of = {s.thread_id: i for i, s in enumerate(sessions)}
    out = OwnerReplay(user_id=owner.user_id)

    def process(context: ConversationContext) -> bool:
        result = updater.run_update(context.messages, context.thread_id)
        record = result.to_record()
        record["session_index"] = session_of.get(context.thread_id, -1)
        record["virtual_time"] = utc_iso(scheduler.now())
        out.calls.append(record)
        return result.saved

    queue = MemoryUpdateQueue(process, scheduler=scheduler, config_provider=provider)
    middleware = MemoryMiddleware(queue_provider=lambda: queue, config_provider=provider)

    def snapshot() -> None:
        memory = storage.load()  # a private copy
        out.snapshots.append(memory)
        try:
            store_file.save(memory, now=parse_utc(memory.get("lastUpdated")) or scheduler.now())
        except StorageError as exc:  # the snapshot in memory is what the metrics use
            logger.warning("could not write the lane's store file %s: %s", store_path, exc)

    def move_to(moment: datetime) -> None:
        if replay_mode == "debounce":
            scheduler.advance_to(moment)  # due debounce timers fire on the way
        else:
            # Only the flush after each session processes: move time without firing timers.
            scheduler.sleep(max(0.0, (moment - scheduler.now()).total_seconds()))

    for index, session in enumerate(sessions):
        move_to(session.started_at)
        if index > 0 and replay_mode == "debounce":
            snapshot()
        history: list[dict[str, Any]] = []
        runs = 0
        for message in session.messages:
            move_to(message.timestamp)
            history.append(message.to_pipeline_message())
            if message.role == "ai" and not message.tool_calls:
                runs += 1
                middleware.after_agent(
                    {"messages": list(history)}, {"context": {"thread_id": session.thread_id}}
                )
        out.agent_runs.append(runs)
        if replay_mode == "per_session":
            queue.flush()
            snapshot()
    if replay_mode == "debounce":
        scheduler.advance(timedelta(seconds=lane.debounce_seconds + 1).total_seconds())
        scheduler.run_until_idle()
        queue.flush()
        snapshot()
    queue.close()
    out.coalesced = queue.stats.coalesced
    out.final_memory = storage.load()
    logger.debug(
        "replayed %s under %s: %d calls, %d facts",
        owner.user_id,
        lane.lane_id,
        len(out.calls),
        len(out.final_memory.get("facts", [])),
    )
    return out
