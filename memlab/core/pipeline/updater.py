"""`MemoryUpdater`: one conversation in, one validated memory update saved (or a reason why not).

The steps follow the pipeline of the spec: format the conversation, load the current memory,
render the prompt, call the backend, run the parse ladder, apply the updates with the merge
strategy under the store's inter-process lock, save atomically. Every step's outcome is kept in
an :class:`UpdateResult` so the workbench can turn each call into numbers; `update_memory`
reduces it to the seed's boolean.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from memlab.core.base.jsontext import copy_json, scan_json
from memlab.core.base.redact import redact, redact_text
from memlab.core.base.safe_text import safe_text
from memlab.core.jsondoc.contract import (
    UPDATE_CONTRACT,
    MemoryUpdateDict,
    ReplyContract,
    SchemaBounds,
    bounded_schema,
    contract_schema,
)
from memlab.core.jsondoc.document import (
    MemoryDocument,
    normalize_fact_text,
    random_fact_ids,
    utc_iso,
    utc_now,
)
from memlab.core.jsondoc.echo import EchoCheck, find_echoes
from memlab.core.jsondoc.merge import ApplyResult, BaselineMerge, MergeStrategy
from memlab.core.jsondoc.parsing import ParseOptions, ParseResult, parse_reply
from memlab.core.pipeline.config import (
    ConfigProvider,
    MemoryConfig,
    get_memory_config,
    resolve_storage_path,
)
from memlab.core.pipeline.llm import (
    Backend,
    BackendError,
    Completion,
    CompletionRequest,
    GenerationParams,
    OutputMode,
    default_backend,
)
from memlab.core.pipeline.messages import format_conversation_for_update
from memlab.core.pipeline.storage import (
    InMemoryStorage,
    JsonFileStorage,
    MemoryStorage,
    StorageError,
)
from memlab.core.prompt_template import PromptVariant
from memlab.core.prompts import get_prompt
from memlab.errors import one_line

__all__ = [
    "MAX_ERROR_CHARS",
    "UNFINISHED_STAGES",
    "MemoryUpdater",
    "UpdateResult",
    "ask_backend",
    "record_failure",
    "update_memory_from_conversation",
]

logger = logging.getLogger(__name__)

UNFINISHED_STAGES = frozenset({"backend", "internal"})
"""Failure stages that say nothing about the model's reply (the backend failed, or a step
raised unexpectedly): a replay with such a call is unfinished and is retried on resume."""

MAX_ERROR_CHARS = 2000
"""The longest error message kept in a call's record (a server may send megabytes)."""


@dataclass
class UpdateResult:
    """Everything one update attempt did, step by step.

    Attributes:
        thread_id: The conversation's thread id (``None`` when unknown).
        started_at: When the update started (the updater's clock).
        skipped: Why no LLM call was made (``"disabled"``, ``"no_messages"``,
            ``"empty_conversation"``), else ``None``.
        prompt: The rendered prompt sent to the model ("" when skipped).
        completion: The backend's reply, or ``None`` if no call was made or it failed.
        parse: The parse ladder's result, or ``None`` if there was no reply.
        applied: The merge strategy's bookkeeping, or ``None`` if nothing was applied.
        saved: True when the new memory document was written.
        error: A human-readable error for backend, storage or parse failures.
        error_stage: ``"load"``, ``"backend"``, ``"parse"``, ``"save"`` or ``"internal"`` (an
            unexpected error in a step) when ``error`` is set.
        facts_before: Number of stored facts before the update.
        facts_after: Number of stored facts after it (equal to before unless saved).
        duration_s: Wall-clock seconds the whole update took.
    """

    thread_id: str | None
    started_at: datetime
    skipped: str | None = None
    prompt: str = ""
    completion: Completion | None = None
    parse: ParseResult | None = None
    applied: ApplyResult | None = None
    saved: bool = False
    error: str | None = None
    error_stage: str | None = None
    facts_before: int = 0
    facts_after: int = 0
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the update was saved."""
        return self.saved

    def to_record(self) -> dict[str, Any]:
        """Return a flat JSON-serialisable record (one row of the workbench's call table).

        Credentials a server or model echoed into the reply or an error message are redacted
        (:func:`memlab.core.base.redact.redact`), as in the response cache.
        """
        counts = self.applied.counts() if self.applied is not None else {}
        completion = self.completion
        record = {
            "thread_id": self.thread_id,
            "started_at": utc_iso(self.started_at),
            "skipped": self.skipped,
            "saved": self.saved,
            "error": self.error,
            "error_stage": self.error_stage,
            "prompt_chars": len(self.prompt),
            # Which prompt was sent: equal lengths do not mean equal prompts.
            # (surrogatepass: a prompt a plug-in built from unsafe text still gets a digest)
            "prompt_sha256": hashlib.sha256(
                self.prompt.encode("utf-8", "surrogatepass")
            ).hexdigest()[:16],
            "reply": completion.text if completion is not None else None,
            "prompt_tokens": completion.prompt_tokens if completion is not None else 0,
            "completion_tokens": completion.completion_tokens if completion is not None else 0,
            "latency_s": completion.latency_s if completion is not None else 0.0,
            "finish_reason": completion.finish_reason if completion is not None else None,
            "model": completion.model if completion is not None else None,
            "backend": completion.backend if completion is not None else None,
            "cached": completion.cached if completion is not None else False,
            # Only when some were, so the records of normal replies keep their columns.
            **(
                {"replaced_chars": completion.replaced_chars}
                if completion is not None and completion.replaced_chars
                else {}
            ),
            "parse": self.parse.to_dict() if self.parse is not None else None,
            "facts_before": self.facts_before,
            "facts_after": self.facts_after,
            "duration_s": self.duration_s,
            **{f"n_{name}": value for name, value in counts.items()},
            # What the merge did, fact by fact (operation scoring replays it).
            "applied": self.applied.to_record() if self.applied is not None else None,
            **self.extra,
        }
        return redact(record)


class MemoryUpdater:
    """Turn a conversation into a memory update with one LLM call.

    Every collaborator is injectable; the defaults reproduce the seed's behaviour (global
    config, default backend, JSON file store at the configured path, default prompt, baseline
    merge, wall clock, random fact ids).

    Args:
        backend: The LLM backend. ``None`` resolves the default backend on first use
            (OpenAI-compatible when ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` is set, else the
            bundled local model).
        storage: The memory store. ``None`` uses a JSON file at the configured storage path,
            re-resolved at each call because the config may change at run time.
        prompt: The prompt variant; ``None`` uses the built-in ``"default"``.
        output_mode: Free text, JSON mode, or schema-constrained output.
        params: Sampling parameters (deterministic defaults).
        parse_options: Which rungs of the parse ladder are enabled.
        merge: The merge strategy; ``None`` is the DeerFlow-compatible baseline.
        config_provider: Called at each update for the current config.
        clock: Returns the current tz-aware time (virtual in replays).
        fact_ids: Returns a new fact id per call (seeded in replays).
        model_name: Model override; the config's ``model_name`` wins when set.
        sample: Index of a repeated sample (sent with every request; see
            :class:`~memlab.core.pipeline.llm.CompletionRequest`).
        schema_bounds: In ``json_schema`` mode, length limits added to the schema sent (the
            grammar), so a small model cannot loop until ``max_tokens``; replies are still
            validated against the unbounded contract.
    """

    def __init__(
        self,
        *,
        backend: Backend | None = None,
        storage: MemoryStorage | None = None,
        prompt: PromptVariant | None = None,
        output_mode: OutputMode = OutputMode.FREE,
        params: GenerationParams | None = None,
        parse_options: ParseOptions | None = None,
        merge: MergeStrategy | None = None,
        config_provider: ConfigProvider | None = None,
        clock: Callable[[], datetime] | None = None,
        fact_ids: Callable[[], str] | None = None,
        model_name: str | None = None,
        sample: int = 0,
        schema_bounds: SchemaBounds | None = None,
    ) -> None:
        self._backend = backend
        self._storage = storage
        self._file_stores: dict[Path, JsonFileStorage] = {}
        self.prompt = prompt if prompt is not None else get_prompt("default")
        self.output_mode = output_mode
        self.params = params if params is not None else GenerationParams()
        self.parse_options = parse_options if parse_options is not None else ParseOptions()
        self.merge = merge if merge is not None else BaselineMerge()
        self._config_provider = config_provider or get_memory_config
        self._clock = clock or utc_now
        self._fact_ids = fact_ids or random_fact_ids()
        self.model_name = model_name
        self.sample = sample
        self.schema_bounds = schema_bounds
        self._lock = threading.Lock()

    @property
    def backend(self) -> Backend:
        """The backend, resolved on first use when none was given."""
        with self._lock:
            if self._backend is None:
                self._backend = default_backend()
            return self._backend

    def storage_for(self, config: MemoryConfig) -> MemoryStorage:
        """Return the store to use under ``config``."""
        if self._storage is not None:
            return self._storage
        path = resolve_storage_path(config)
        with self._lock:
            store = self._file_stores.get(path)
            if store is None:
                store = self._file_stores[path] = JsonFileStorage(path)
            return store

    def update_memory(self, messages: Sequence[Any], thread_id: str | None = None) -> bool:
        """Update the memory from ``messages``; True when a new memory was saved."""
        return self.run_update(messages, thread_id).saved

    def build_request(self, prompt: str, config: MemoryConfig) -> CompletionRequest:
        """Return the completion request the updater sends for ``prompt``."""
        schema = None
        if self.output_mode is OutputMode.JSON_SCHEMA:
            schema = contract_schema()
            if self.schema_bounds is not None:
                schema = bounded_schema(schema, self.schema_bounds)
        return CompletionRequest(
            messages=[{"role": "user", "content": prompt}],
            mode=self.output_mode,
            schema=schema,
            params=self.params,
            model=config.model_name or self.model_name,
            sample=self.sample,
        )

    def run_update(self, messages: Sequence[Any], thread_id: str | None = None) -> UpdateResult:
        """Run one update and return what every step did.

        Never raises for LLM, backend or storage failures, nor for an unexpected error in
        any step: that is recorded as a failure at stage ``"internal"`` (see
        :data:`UNFINISHED_STAGES`), so a replay never loses an update silently.
        """
        started = time.perf_counter()
        result = UpdateResult(thread_id=thread_id, started_at=self._clock())
        try:
            self._run(result, messages, thread_id)
        except Exception as exc:  # a bug in a step or a plug-in: recorded, never lost
            result.saved = False
            record_failure(result, "internal", f"unexpected {type(exc).__name__}: {exc}")
            logger.debug("memory update for thread %s raised", thread_id, exc_info=True)
        finally:
            result.duration_s = time.perf_counter() - started
        return result

    def _run(self, result: UpdateResult, messages: Sequence[Any], thread_id: str | None) -> None:
        config = self._config_provider()
        conversation = _conversation(result, config, messages)
        if conversation is None:
            return
        storage = self.storage_for(config)
        try:
            current = self._read(storage)
        except StorageError as exc:
            record_failure(result, "load", str(exc))
            return
        result.facts_before = result.facts_after = len(current.get("facts", []))
        update = self._ask(result, current, conversation, config)
        if update is not None:
            # Text copied from the template itself says nothing about the user: counted here,
            # merged as any other text (the pipeline under test is not changed by measuring it).
            check = EchoCheck(self.prompt.template, self.prompt.placeholders, (conversation,))
            echoed = find_echoes(update, check)
            self._apply(result, storage, update, config, thread_id, echoed)

    def _read(self, storage: MemoryStorage) -> MemoryDocument:
        """The current memory, to render into the prompt: the in-memory store's own document
        when the prompt is a built-in variant (its rendering only reads it, and the store
        never changes a document it keeps), else a copy."""
        if type(storage) is InMemoryStorage and type(self.prompt).render is PromptVariant.render:
            return storage.view()
        return storage.load()

    def _ask(
        self,
        result: UpdateResult,
        current: MemoryDocument,
        conversation: str,
        config: MemoryConfig,
    ) -> MemoryUpdateDict | None:
        """Render the prompt, call the backend, parse the reply: the update, or ``None``."""
        result.prompt = self.prompt.render(current, conversation)
        request = self.build_request(result.prompt, config)
        return ask_backend(self.backend, request, result, self.parse_options)

    def _apply(
        self,
        result: UpdateResult,
        storage: MemoryStorage,
        update: MemoryUpdateDict,
        config: MemoryConfig,
        thread_id: str | None,
        echoed: list[dict[str, Any]],
    ) -> None:
        """Merge ``update`` into the stored memory and save it (``echoed``: its echoes of the
        prompt, kept in the merge's bookkeeping with the id of each one stored)."""
        merge = _merge_function(self.merge)

        def apply(fresh: MemoryDocument) -> MemoryDocument:
            # Applied to the freshly reloaded document under the store's lock, so a concurrent
            # writer's facts are kept.
            applied: ApplyResult = merge(
                fresh,
                update,
                thread_id=thread_id,
                threshold=config.fact_confidence_threshold,
                max_facts=config.max_facts,
                now=self._clock(),
                new_id=self._fact_ids,
            )
            applied.echoed = _with_stored_ids(echoed, applied)
            result.applied = applied
            return applied.memory

        try:
            saved = storage.modify(apply)
        except StorageError as exc:
            result.applied = None
            record_failure(result, "save", str(exc))
            return
        result.saved = True
        if result.applied is not None:
            # The store kept applied.memory; the result gets copies, never references into it.
            result.applied = _detached(result.applied, saved)
        result.facts_after = len(saved.get("facts", []))
        if logger.isEnabledFor(logging.INFO):  # the counts are built for the message only
            logger.info(
                "memory updated for thread %s: %d facts (%s)",
                thread_id,
                result.facts_after,
                result.applied.counts() if result.applied else {},
            )


def ask_backend(
    backend: Backend,
    request: CompletionRequest,
    result: UpdateResult,
    options: ParseOptions,
    contract: ReplyContract = UPDATE_CONTRACT,
    *,
    label: str = "memory update",
) -> MemoryUpdateDict | None:
    """The one path of an LLM call of the pipeline or of a memory design: send ``request``,
    redact the reply, parse it against ``contract``; the reply's object, or ``None`` with the
    failure recorded in ``result`` (:func:`record_failure`, ``label`` naming the call).

    ``result`` gets the (redacted) completion and the parse ladder's result.
    """
    try:
        completion = backend.complete(request)
    except BackendError as exc:
        record_failure(result, "backend", str(exc), label=label)
        return None
    except Exception as exc:  # a backend that breaks its contract on an odd reply
        record_failure(result, "backend", f"unexpected {type(exc).__name__}: {exc}", label=label)
        return None
    if not isinstance(completion, Completion) or not isinstance(completion.text, str):
        message = f"the backend returned {type(completion).__name__}"
        record_failure(result, "backend", message, label=label)
        return None
    # Where replies enter the pipeline: a key a server echoed never reaches the memory.
    text = redact_text(completion.text)
    result.completion = (
        completion if text == completion.text else dataclasses.replace(completion, text=text)
    )
    result.parse = parse_reply(text, options, contract)
    if not result.parse.ok or result.parse.data is None:
        category = result.parse.category.value if result.parse.category else "unknown"
        record_failure(result, "parse", f"{category}: {result.parse.error}", label=label)
        return None
    return result.parse.data


def record_failure(
    result: UpdateResult, stage: str, message: str, *, label: str = "memory update"
) -> None:
    """Record in ``result`` that the call failed at ``stage``, and log it.

    ``message`` (a server's error text is text from outside too) is made writable and
    redacted like replies, and cut to :data:`MAX_ERROR_CHARS`. A reply that does not parse is
    an outcome the run measures (and counts per lane), not a fault: logged at INFO (-v);
    every other stage is a fault (WARNING).
    """
    message = redact_text(safe_text(message)[0])
    result.error = message[:MAX_ERROR_CHARS]
    result.error_stage = stage
    logger.log(
        logging.INFO if stage == "parse" else logging.WARNING,
        "%s for thread %s failed at %s: %s",
        label,
        result.thread_id,
        stage,
        one_line(message, 500),
    )


def _conversation(
    result: UpdateResult, config: MemoryConfig, messages: Sequence[Any]
) -> str | None:
    """The conversation text to send, or ``None`` with ``result.skipped`` saying why not."""
    if not config.enabled:
        result.skipped = "disabled"
        return None
    if not messages:
        result.skipped = "no_messages"
        return None
    conversation = format_conversation_for_update(list(messages))
    if not conversation.strip():
        result.skipped = "empty_conversation"
        return None
    return conversation


def _with_stored_ids(echoed: list[dict[str, Any]], applied: ApplyResult) -> list[dict[str, Any]]:
    """``echoed`` with the ``id`` of the fact each echoed fact was stored as (when it was
    added), so scoring can leave stored echoes out."""
    if not echoed:
        return echoed
    stored: dict[str, str] = {}
    for fact in applied.added:
        content, fact_id = fact.get("content"), fact.get("id")
        if isinstance(content, str) and isinstance(fact_id, str):
            stored.setdefault(normalize_fact_text(content), fact_id)
    marked = []
    for entry in echoed:
        text = entry.get("content")
        key = normalize_fact_text(text) if isinstance(text, str) else None
        if "section" not in entry and key in stored:
            entry = {**entry, "id": stored[key]}
        marked.append(entry)
    return marked


def _merge_function(strategy: MergeStrategy) -> Callable[..., ApplyResult]:
    """``apply_in_place`` for strategies that inherit BaselineMerge's ``apply``, else ``apply``.

    The in-place form changes the store's private copy directly (one copy less per update);
    a strategy that overrides ``apply`` gets its own method.
    """
    in_place = getattr(strategy, "apply_in_place", None)
    if in_place is not None and getattr(type(strategy), "apply", None) is BaselineMerge.apply:
        return cast(Callable[..., ApplyResult], in_place)
    return strategy.apply


def _detached(applied: ApplyResult, saved: MemoryDocument) -> ApplyResult:
    """``applied`` with the saved copy as its memory and its own copies of the fact lists.

    Falls back to ``applied`` itself (memory replaced) for a custom result that cannot be
    copied, since the update is saved by then and must not fail.
    """
    try:
        detached = copy.copy(applied)
        for f in dataclasses.fields(applied):
            if f.name != "memory":
                setattr(detached, f.name, _copied(getattr(applied, f.name)))
        detached.memory = saved
    except Exception:  # a custom ApplyResult subclass (frozen, uncopyable values)
        logger.debug("could not copy the merge result; keeping it as it is", exc_info=True)
        return applied
    return detached


def _copied(value: Any) -> Any:
    """A deep copy of one bookkeeping list: plain JSON (the facts a merge touched, every
    update) through the JSON copier, anything else (tuples, other types) by ``copy.deepcopy``."""
    if type(value) is list and not value:
        return []  # most of an update's lists are empty
    plain, _ = scan_json(value)
    return copy_json(value) if plain else copy.deepcopy(value)


def update_memory_from_conversation(messages: Sequence[Any], thread_id: str | None = None) -> bool:
    """Update the global memory from a conversation with the default updater (seed API)."""
    return MemoryUpdater().update_memory(messages, thread_id)
