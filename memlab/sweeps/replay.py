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
in ``per_session`` mode right after the flush. With each snapshot but the last, the replay
audits what the next session's agent would receive from that memory under the lane's
injection settings (see :mod:`memlab.scoring.qa.injection_audit`).

The lane's ``memory`` setting names the memory design the updates go to
(:mod:`memlab.memory.designs`): DeerFlow's document (one LLM update per queued update), the
tiered memory, which also closes each session's working memory before the snapshot and
forgets as virtual time passes between sessions, or a design a plugin registers. A design
that forgets has its forgetting events recorded with the index of the first snapshot that
shows them.

A lane whose grid forks (:mod:`memlab.sweeps.fork`) starts each owner at the fork's session from
the reference memory: earlier sessions are not played, and their snapshots are the
reference's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, cast

from memlab.core.base.clock import VirtualScheduler
from memlab.core.base.redact import redact
from memlab.core.jsondoc.document import (
    MemoryDocument,
    SeededFactIds,
    copy_document,
    parse_utc,
    utc_iso,
)
from memlab.core.pipeline.config import MemoryConfig
from memlab.core.pipeline.llm import Backend
from memlab.core.pipeline.middleware import MemoryMiddleware
from memlab.core.pipeline.queue import ConversationContext, MemoryUpdateQueue
from memlab.core.pipeline.storage import InMemoryStorage, JsonFileStorage, StorageError
from memlab.core.pipeline.updater import MemoryUpdater, UpdateResult
from memlab.datasets.models import Owner, Session
from memlab.grids.lane import ReplayMode
from memlab.memory.design import DesignContext
from memlab.memory.designs import memory_design
from memlab.memory.strategy import MemoryStrategy, Step, is_primary
from memlab.scoring.qa.injection_audit import audit_injection, next_query, policy_embedder
from memlab.sweeps.fork import ForkStart
from memlab.sweeps.plan import ResolvedLane, build_updater, generation_params

__all__ = ["OwnerReplay", "replay_owner"]

logger = logging.getLogger(__name__)


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
        injections: Per session, what the next session's agent would receive from the
            snapshot (:func:`~memlab.scoring.qa.injection_audit.audit_injection`); ``None`` for
            the last session and for sessions before a fork.
        fork: The fork this replay started from (run, lane, session, snapshot hash), or
            ``None`` for a replay from an empty memory.
        updates: Updates handed to the memory (by the queue, and for the tiered memory at
            each session's end; a composite design's session end counts one per part that
            folds, :attr:`~memlab.memory.strategy.Step.updates`): each gives exactly one
            primary record in ``calls``
            (:func:`memlab.memory.strategy.is_primary`), so a replay whose counts differ
            lost one and is not finished. A session end's primary record says
            ``session_end: true`` (the debounce saves only the queue's updates).
        forgetting: The tiered memory's forgetting events (each with ``session_index``, the
            first snapshot that shows it); ``None`` for a design that never forgets.
    """

    user_id: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[MemoryDocument] = field(default_factory=list)
    agent_runs: list[int] = field(default_factory=list)
    coalesced: int = 0
    final_memory: MemoryDocument = field(default_factory=lambda: cast(MemoryDocument, {}))
    injections: list[dict[str, Any] | None] = field(default_factory=list)
    fork: dict[str, Any] | None = None
    updates: int = 0
    forgetting: list[dict[str, Any]] | None = None

    def to_record(self) -> dict[str, Any]:
        """The fields an owner record stores (``forgetting`` only where a design forgets)."""
        fields = dict(vars(self))
        if fields["forgetting"] is None:
            del fields["forgetting"]
        return fields


def replay_owner(
    owner: Owner,
    lane: ResolvedLane,
    *,
    backend: Backend,
    store_path: Path,
    replay_mode: ReplayMode = "debounce",
    sample: int = 0,
    on_session: Callable[[], None] | None = None,
) -> OwnerReplay:
    """Replay ``owner``'s sessions under ``lane`` into a fresh store written to ``store_path``.

    A replay starts from an empty memory (or, when the lane forks, from the reference memory
    at the fork's session); ids and timestamps come from the id generator
    seeded by the lane's grid point and the virtual clock, so the same dataset and lane build
    byte-identical prompts (and hit the response cache). The lane's memory lives in memory
    while the replay runs (no other process shares it, and every update would otherwise
    serialise and rename a file); ``store_path`` receives the final memory when the replay
    ends (writing it at every snapshot took half of a cached replay's time). ``sample`` is the
    index of a repeated sample: it shifts the generation seed (see
    :func:`~memlab.sweeps.plan.build_updater`). ``on_session`` is called after each session
    played (a progress count: a real model's replay of one owner can take minutes).
    """
    replayer = _Replayer(owner, lane, backend, store_path, replay_mode, sample)
    replayer.on_session = on_session
    replayer.run(owner.sessions)
    out = replayer.out
    logger.debug(
        "replayed %s under %s: %d calls, %d facts",
        owner.user_id,
        lane.lane_id,
        len(out.calls),
        len(out.final_memory.get("facts", [])),
    )
    return out


class _Replayer:
    """The pipeline of one (lane, owner) replay: middleware, queue, updater, virtual clock."""

    def __init__(
        self,
        owner: Owner,
        lane: ResolvedLane,
        backend: Backend,
        store_path: Path,
        replay_mode: ReplayMode,
        sample: int,
    ) -> None:
        config = lane.config
        self.sessions = owner.sessions
        self.out = OwnerReplay(user_id=owner.user_id)
        start = self._fork_start(lane, owner.user_id)
        self.first = len(start.snapshots) if start is not None else 0
        self.scheduler = scheduler = VirtualScheduler(owner.sessions[self.first].started_at)
        self.memory_config = config.memory_config(storage_path=str(store_path))
        self.design = memory_design(config.memory)
        self.policy = config.injection_policy
        self.history_last = self.design.history_last_in(config.settings())
        self.embedder = policy_embedder(self.policy)
        store_path.parent.mkdir(parents=True, exist_ok=True)
        store_path.unlink(missing_ok=True)
        self.store_path = store_path
        # A scratch file rebuilt on every replay: atomic writes, but no fsync.
        self.store_file = JsonFileStorage(store_path, clock=scheduler.now, durable=False)
        self.strategy = self._strategy(lane, backend, sample, start, owner.user_id)
        if self.design.forgets_in(config.settings()):
            self.out.forgetting = []
        self.replay_mode = replay_mode
        self.debounce_seconds = config.debounce_seconds
        self.session_of = {s.thread_id: i for i, s in enumerate(owner.sessions)}
        self.on_session: Callable[[], None] | None = None
        self.queue = MemoryUpdateQueue(
            self.process, scheduler=scheduler, config_provider=self.config
        )
        self.middleware = MemoryMiddleware(
            queue_provider=lambda: self.queue, config_provider=self.config
        )

    def _fork_start(self, lane: ResolvedLane, user_id: str) -> ForkStart | None:
        """The fork's start for ``user_id``; the sessions before it take the reference's
        snapshots (no agent runs, no audits)."""
        if lane.fork is None:
            return None
        start = lane.fork.start(user_id)
        skipped = len(start.snapshots)
        self.out.snapshots = [copy_document(s) for s in start.snapshots]
        self.out.agent_runs = [0] * skipped
        self.out.injections = [None] * skipped
        self.out.fork = lane.fork.record(user_id)
        return start

    def _strategy(
        self,
        lane: ResolvedLane,
        backend: Backend,
        sample: int,
        start: ForkStart | None,
        user_id: str,
    ) -> MemoryStrategy:
        """The lane's memory design, its ids seeded by the grid point and the owner."""
        config = lane.config
        fact_ids = SeededFactIds(f"{config.point_id}/{user_id}")

        def updater(storage: InMemoryStorage) -> MemoryUpdater:
            return build_updater(
                config,
                lane.prompt,
                backend,
                sample,
                storage=storage,
                config_provider=self.config,
                clock=self.scheduler.now,
                fact_ids=fact_ids,
            )

        return self.design.open(
            DesignContext(
                backend=backend,
                output_mode=config.output_mode,
                params=generation_params(config, sample),
                parse_options=lane.parse_options,
                sample=sample,
                clock=self.scheduler.now,
                store_path=self.store_path,
                ids=fact_ids,
                settings=config.settings(),
                updater=updater,
                start=start.memory if start is not None else None,
            )
        )

    def config(self) -> MemoryConfig:
        return self.memory_config

    def process(self, context: ConversationContext) -> bool:
        return self._handle(context.thread_id, lambda: self.strategy.process(context))

    def _handle(self, thread_id: str, step: Callable[[], Step | None]) -> bool:
        """Run one handed-over update of the strategy and record its calls."""
        self.out.updates += 1
        try:
            done = step() or Step()
        except Exception as exc:  # the queue would only log it: record it as a failed call
            done = self._failure(thread_id, exc)
        self._record(done, thread_id)
        return done.saved

    def _failure(self, thread_id: str, exc: Exception) -> Step:
        """A step that raised, as one failed primary record (the replay is unfinished)."""
        result = UpdateResult(thread_id, self.scheduler.now())
        result.error, result.error_stage = f"unexpected {type(exc).__name__}", "internal"
        kind = self.strategy.primary_call
        if kind is not None:
            result.extra["call"] = kind
        return Step([result.to_record()])

    def _record(self, step: Step, thread_id: str | None) -> None:
        for record in step.records:
            session = record.get("thread_id", thread_id)
            # A call of no session (compression between sessions): the snapshot taken next.
            index = len(self.out.snapshots) if session is None else self.session_of.get(session)
            record["session_index"] = -1 if index is None else index
            record["virtual_time"] = utc_iso(self.scheduler.now())
            self.out.calls.append(record)
        if self.out.forgetting is not None:
            # The first snapshot that shows the event: the one taken next.
            upcoming = len(self.out.snapshots)
            self.out.forgetting.extend({**e, "session_index": upcoming} for e in step.forgetting)

    def end_session(self, thread_id: str) -> None:
        """Close a session's conversation (the tiered memory folds its working memory)."""
        try:
            step = self.strategy.end_session(thread_id)
        except Exception as exc:  # recorded, never lost: the replay is then unfinished
            step = self._failure(thread_id, exc)
        if step is not None:
            self.out.updates += step.updates
            for record in step.records:
                # Its primary records (one per part of a composite design): updates, but not
                # ones the queue handed over.
                if is_primary(record):
                    record["session_end"] = True
            self._record(step, thread_id)

    def pass_time(self) -> None:
        """Let the strategy see the virtual clock (forgetting between sessions)."""
        step = self.strategy.advance(self.scheduler.now())
        if step is not None:
            self._record(step, None)

    def snapshot(self) -> None:
        memory = self.strategy.snapshot()  # never changed later: no copy needed
        self.out.snapshots.append(memory)
        upcoming = len(self.out.snapshots)
        audit = None
        if upcoming < len(self.sessions):
            audit = audit_injection(
                memory,
                self.memory_config,
                self.policy,
                next_query(self.sessions[upcoming]),
                self.embedder,
                history_last=self.history_last,
                read=self.design.read,
            )
        self.out.injections.append(audit)

    def write_store_file(self, memory: MemoryDocument) -> None:
        now = parse_utc(memory.get("lastUpdated")) or self.scheduler.now()
        try:
            self.store_file.save(memory, now=now)
        except StorageError as exc:  # the snapshots in memory are what the metrics use
            logger.warning("could not write the lane's store file %s: %s", self.store_path, exc)

    def move_to(self, moment: datetime) -> None:
        if self.replay_mode == "debounce":
            self.scheduler.advance_to(moment)  # due debounce timers fire on the way
        else:
            # Only the flush after each session processes: move time without firing timers.
            self.scheduler.sleep(max(0.0, (moment - self.scheduler.now()).total_seconds()))

    def run(self, sessions: Sequence[Session]) -> None:
        debounce = self.replay_mode == "debounce"
        try:
            for index, session in enumerate(sessions):
                if index < self.first:
                    continue  # before the fork: the reference's memory stands in
                self.move_to(session.started_at)
                if index > self.first and debounce:
                    self.close_session(sessions[index - 1].thread_id)
                    self.snapshot()  # the memory the user returns to
                elif index > self.first:
                    self.pass_time()
                self.out.agent_runs.append(self.play(session))
                if not debounce:
                    self.queue.flush()
                    self.end_session(session.thread_id)
                    self.snapshot()
                if self.on_session is not None:
                    self.on_session()
            if debounce:
                self.scheduler.advance(timedelta(seconds=self.debounce_seconds + 1).total_seconds())
                self.scheduler.run_until_idle()
                self.queue.flush()
                self.end_session(sessions[-1].thread_id)
                self.snapshot()
            self.queue.close()
            self.out.coalesced = self.queue.stats.coalesced
            # What leaves the replay is redacted once more (the updater redacts each reply).
            self.out.final_memory = redact(self.strategy.snapshot())
            self.write_store_file(self.out.final_memory)
        finally:
            self.strategy.close()

    def close_session(self, thread_id: str) -> None:
        """A session is over and time has passed: fold it, then forget."""
        self.end_session(thread_id)
        self.pass_time()

    def play(self, session: Session) -> int:
        """Feed one session's messages; return the agent runs that requested an update."""
        history: list[dict[str, Any]] = []
        runs = 0
        for message in session.messages:
            self.move_to(message.timestamp)
            history.append(message.to_pipeline_message())
            if message.role == "ai" and not message.tool_calls:
                runs += 1
                self.middleware.after_agent(
                    {"messages": list(history)}, {"context": {"thread_id": session.thread_id}}
                )
        return runs
