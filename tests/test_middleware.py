"""MemoryMiddleware.after_agent (SPEC §1.2)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from memlab.core.base.clock import VirtualScheduler
from memlab.core.pipeline.middleware import MemoryMiddleware, resolve_thread_id
from memlab.core.pipeline.queue import ConversationContext, MemoryUpdateQueue

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


@dataclass
class Msg:
    type: str
    content: Any
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


class Harness:
    """A middleware wired to a queue on a virtual clock whose processor records contexts."""

    def __init__(self, enabled: bool = True) -> None:
        self.settings = SimpleNamespace(enabled=enabled, debounce_seconds=30)
        self.scheduler = VirtualScheduler(T0)
        self.processed: list[ConversationContext] = []
        self.queue = MemoryUpdateQueue(
            self.processed.append,
            scheduler=self.scheduler,
            config_provider=lambda: self.settings,
        )
        self.middleware = MemoryMiddleware(
            queue_provider=lambda: self.queue, config_provider=lambda: self.settings
        )


def runtime(thread_id: str | None = "t-1") -> SimpleNamespace:
    return SimpleNamespace(context={"thread_id": thread_id})


CONVERSATION = [
    {"role": "system", "content": "be nice"},
    {"role": "user", "content": "I am vegetarian."},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "1", "type": "function"}]},
    {"role": "tool", "content": "recipes"},
    {"role": "assistant", "content": "Here are vegetarian recipes."},
]


def test_after_agent_queues_filtered_dict_messages() -> None:
    h = Harness()
    assert h.middleware.after_agent({"messages": CONVERSATION}, runtime()) is None
    assert h.queue.pending_count == 1
    assert h.processed == []  # deferred: nothing ran yet
    h.scheduler.advance(30)
    (ctx,) = h.processed
    assert ctx.thread_id == "t-1"
    assert ctx.messages == [CONVERSATION[1], CONVERSATION[4]]


def test_after_agent_with_object_messages_and_object_state() -> None:
    h = Harness()
    messages = [
        Msg("human", "My name is Ana."),
        Msg("ai", "", [{"name": "lookup", "args": {}, "id": "x"}]),
        Msg("tool", "done"),
        Msg("ai", "Nice to meet you, Ana."),
    ]
    state = SimpleNamespace(messages=messages)
    assert h.middleware.after_agent(state, runtime("t-2")) is None
    h.queue.flush()
    (ctx,) = h.processed
    assert [m.content for m in ctx.messages] == ["My name is Ana.", "Nice to meet you, Ana."]


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "hello?"}],
        [
            {"role": "user", "content": "hello?"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "1"}]},
            {"role": "tool", "content": "x"},
        ],
        [{"role": "assistant", "content": "Hi, how can I help?"}],
        [],
    ],
)
def test_skips_without_human_and_final_ai(messages: list[Any]) -> None:
    h = Harness()
    assert h.middleware.after_agent({"messages": messages}, runtime()) is None
    assert h.queue.pending_count == 0


def test_skips_without_thread_id() -> None:
    h = Harness()
    for rt in (runtime(None), runtime(""), SimpleNamespace(), None, {"context": {}}):
        assert h.middleware.after_agent({"messages": CONVERSATION}, rt) is None
    assert h.queue.pending_count == 0


def test_disabled_short_circuits() -> None:
    h = Harness(enabled=False)

    def no_queue() -> MemoryUpdateQueue:
        raise AssertionError("the queue must not be touched when memory is disabled")

    mw = MemoryMiddleware(queue_provider=no_queue, config_provider=lambda: h.settings)
    assert mw.after_agent({"messages": CONVERSATION}, runtime()) is None


def test_async_hook_queues_too() -> None:
    h = Harness()
    assert asyncio.run(h.middleware.aafter_agent({"messages": CONVERSATION}, runtime())) is None
    assert h.queue.pending_count == 1


@pytest.mark.parametrize(
    ("rt", "expected"),
    [
        (SimpleNamespace(context={"thread_id": "a"}), "a"),
        (SimpleNamespace(context=SimpleNamespace(thread_id="b")), "b"),
        ({"context": {"thread_id": "c"}}, "c"),
        ({"thread_id": "d"}, "d"),
        (SimpleNamespace(config={"configurable": {"thread_id": "e"}}), "e"),
        ({"config": {"configurable": {"thread_id": 42}}}, "42"),
        # context wins over config
        ({"context": {"thread_id": "f"}, "config": {"configurable": {"thread_id": "g"}}}, "f"),
        (SimpleNamespace(context=None, config=None), None),
    ],
)
def test_resolve_thread_id(rt: Any, expected: str | None) -> None:
    assert resolve_thread_id(rt) == expected
