"""A backend that returns scripted replies: the test double for the whole pipeline.

It ships inside the package (like pydantic-ai's ``TestModel``) so users can unit-test their own
prompts and merge strategies without a model, and so the workbench can replay hand-crafted
replies to measure failure handling exactly.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from memlab import plugins
from memlab.core.jsondoc.contract import FACT_CATEGORIES, minimal_update
from memlab.core.pipeline.llm import BackendError, Completion, CompletionRequest

__all__ = ["SCRIPTS", "ScriptExhaustedError", "ScriptedBackend", "user_lines_reply"]

ReplyFunction = Callable[[CompletionRequest], "str | Completion"]


class ScriptExhaustedError(BackendError):
    """The scripted backend was called more times than it has replies."""


@dataclass
class _Call:
    request: CompletionRequest


class ScriptedBackend:
    """Return given replies in order, or compute them with a function; record every request.

    Args:
        replies: Replies returned in order (a ``str`` or a full :class:`Completion`).
        function: Alternative to ``replies``: called with each request, returns the reply.
        model: Model id reported in completions.
        repeat_last: When the replies run out, keep returning the last one instead of raising.
        latency_s: Seconds to wait before each reply, imitating a model's latency.

    Example:
        >>> backend = ScriptedBackend(['{"user": {}}'])
        >>> backend.complete(CompletionRequest(messages=[{"role": "user", "content": "hi"}])).text
        '{"user": {}}'
    """

    name = "scripted"

    def __init__(
        self,
        replies: Iterable[str | Completion] | None = None,
        *,
        function: ReplyFunction | None = None,
        model: str = "scripted",
        repeat_last: bool = False,
        latency_s: float = 0.0,
    ) -> None:
        if (replies is None) == (function is None):
            raise ValueError("ScriptedBackend needs exactly one of 'replies' or 'function'.")
        self._replies = list(replies) if replies is not None else []
        self._function = function
        self._model = model
        self._repeat_last = repeat_last
        self._latency_s = latency_s
        self._index = 0
        self._lock = threading.Lock()
        self.requests: list[CompletionRequest] = []

    @property
    def model(self) -> str:
        return self._model

    @property
    def call_count(self) -> int:
        """Number of completed calls so far."""
        return len(self.requests)

    @property
    def prompts(self) -> list[str]:
        """The text of the last message of every request, in call order."""
        return [str(r.messages[-1]["content"]) if r.messages else "" for r in self.requests]

    def complete(self, request: CompletionRequest) -> Completion:
        if self._latency_s > 0:
            time.sleep(self._latency_s)
        with self._lock:
            self.requests.append(_recorded(request))
            if self._function is not None:
                reply: str | Completion = self._function(request)
            elif self._index < len(self._replies):
                reply = self._replies[self._index]
                self._index += 1
            elif self._repeat_last and self._replies:
                reply = self._replies[-1]
            else:
                raise ScriptExhaustedError(
                    f"ScriptedBackend has {len(self._replies)} replies but was called "
                    f"{len(self.requests)} times; add replies or pass repeat_last=True."
                )
        if isinstance(reply, Completion):
            return copy.copy(reply)
        prompt_chars = sum(len(str(m.get("content", ""))) for m in request.messages)
        return Completion(
            text=reply,
            prompt_tokens=max(1, prompt_chars // 4),
            completion_tokens=max(0, len(reply) // 4),
            latency_s=0.0,
            finish_reason="stop",
            model=request.model or self._model,
            backend=self.name,
        )


def _recorded(request: CompletionRequest) -> CompletionRequest:
    """A copy of ``request`` for :attr:`ScriptedBackend.requests` (JSON parts copied)."""
    return dataclasses.replace(
        request,
        # Text messages need a shallow copy only; anything nested is copied deeply.
        messages=[
            dict(message)
            if all(type(value) is str for value in message.values())
            else copy.deepcopy(dict(message))
            for message in request.messages
        ],
        schema=copy.deepcopy(request.schema) if request.schema is not None else None,
    )


# --- a built-in script: replies computed from the prompt ------------------------------------

_USER_LINE = re.compile(r"^User: (.+)$", re.MULTILINE)  # conversation lines, not memory JSON
_FACT_ID = re.compile(r'"id": "(fact_[0-9a-f]{8})"')


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)


def user_lines_reply(request: CompletionRequest) -> str:
    """A test instrument's reply: every user line of the conversation becomes a fact.

    Deterministic in the prompt, so any process computes the same replies (a sweep's remote
    workers build it from the spec ``scripted:user-lines``). Category and confidence (0.5 to
    0.99) come from a hash of the line, so a threshold filters some; a repeated line is a
    duplicate; one prompt in three removes the first fact of the memory shown, and the last
    user line becomes the top-of-mind summary. It measures plumbing, not a model.
    """
    prompt = str(request.messages[-1].get("content", "")) if request.messages else ""
    data = minimal_update()
    lines = [line.strip()[:200] for line in _USER_LINE.findall(prompt) if line.strip()]
    for line in lines:
        digest = _digest(line)
        data["newFacts"].append(
            {
                "content": line,
                "category": FACT_CATEGORIES[digest % len(FACT_CATEGORIES)],
                "confidence": round(0.5 + (digest % 50) / 100, 2),
            }
        )
    if lines:
        data["user"]["topOfMind"] = {"summary": lines[-1], "shouldUpdate": True}
    ids = _FACT_ID.findall(prompt)
    if ids and _digest(prompt) % 3 == 0:
        data["factsToRemove"] = ids[:1]
    return json.dumps(data, ensure_ascii=False)


SCRIPTS: plugins.Registry[ReplyFunction] = plugins.declare(
    "script",
    "scripted reply function",
    check=plugins.callable_entry,
    builtins={"user-lines": user_lines_reply},
)
"""Reply functions by name: the spec ``scripted:NAME`` answers with ``SCRIPTS[NAME]``."""
