"""``MemoryMiddleware``: after an agent run, queue its conversation for a memory update.

The hook only filters messages and calls :meth:`MemoryUpdateQueue.add`; the LLM work happens
later on the queue's timer, so the agent's response is never delayed by it. The middleware
follows the shape of an agent-framework ``after_agent(state, runtime)`` hook but needs no
framework: ``state`` and ``runtime`` may be plain mappings or objects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, NotRequired, Protocol, TypedDict

from memlab.core.pipeline.messages import filter_messages_for_memory, has_enough_for_update
from memlab.core.pipeline.queue import MemoryUpdateQueue, get_memory_queue

__all__ = [
    "MemoryMiddleware",
    "MemoryMiddlewareState",
    "resolve_thread_id",
]

logger = logging.getLogger(__name__)


class _EnabledSettings(Protocol):
    @property
    def enabled(self) -> bool:
        """False makes the middleware a no-op."""


class MemoryMiddlewareState(TypedDict):
    """The state keys the middleware reads (compatible with an agent's message state)."""

    messages: NotRequired[list[Any]]


def _default_config() -> _EnabledSettings:
    from memlab.core.pipeline.config import get_memory_config

    config: _EnabledSettings = get_memory_config()
    return config


def _get(obj: Any, key: str) -> Any:
    """Read ``key`` from a mapping or an attribute from an object (None when absent)."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _as_thread_id(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text or None


def resolve_thread_id(runtime: Any) -> str | None:
    """Find the thread id in an agent runtime.

    Looked up in this order, the first non-empty value winning:

    1. ``runtime.context["thread_id"]`` (or ``runtime["context"]["thread_id"]``; the context
       itself may be a mapping or an object with a ``thread_id`` attribute);
    2. ``runtime["thread_id"]`` / ``runtime.thread_id``;
    3. ``runtime.config["configurable"]["thread_id"]`` (or ``runtime["config"][...]``).

    Returns:
        The thread id as a string, or None when none is found.
    """
    if runtime is None:
        return None
    candidates = (
        _get(_get(runtime, "context"), "thread_id"),
        _get(runtime, "thread_id"),
        _get(_get(_get(runtime, "config"), "configurable"), "thread_id"),
    )
    for candidate in candidates:
        thread_id = _as_thread_id(candidate)
        if thread_id is not None:
            return thread_id
    return None


class MemoryMiddleware:
    """Queue the filtered conversation of each finished agent run for a memory update.

    Args:
        queue_provider: Returns the queue to add to (default: the process-wide queue).
        config_provider: Returns the settings (``enabled``); read at every call. Defaults to
            ``memlab.core.pipeline.config.get_memory_config``.
    """

    state_schema = MemoryMiddlewareState

    def __init__(
        self,
        queue_provider: Callable[[], MemoryUpdateQueue] = get_memory_queue,
        config_provider: Callable[[], _EnabledSettings] | None = None,
    ) -> None:
        self._queue_provider = queue_provider
        self._config_provider = config_provider or _default_config

    def after_agent(self, state: Any, runtime: Any) -> None:
        """Filter the run's messages and queue them; never blocks on the LLM.

        Args:
            state: The agent state (mapping with ``"messages"`` or object with ``.messages``).
            runtime: The agent runtime carrying the thread id (see :func:`resolve_thread_id`).

        Returns:
            None: the state is never modified.
        """
        if not self._config_provider().enabled:
            return None
        thread_id = resolve_thread_id(runtime)
        if thread_id is None:
            logger.debug("no thread id in the runtime; skipping memory update")
            return None
        messages = _get(state, "messages")
        if not messages:
            logger.debug("no messages in the state of thread %s; skipping memory update", thread_id)
            return None
        filtered = filter_messages_for_memory(messages)
        if not has_enough_for_update(filtered):
            logger.debug(
                "thread %s has no user message with a final reply; skipping memory update",
                thread_id,
            )
            return None
        self._queue_provider().add(thread_id, filtered)
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> None:
        """Async form of :meth:`after_agent` (queueing is quick and never awaits the LLM)."""
        self.after_agent(state, runtime)
