"""Builders for small test datasets and scripted model replies."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from memlab.backends.base import CompletionRequest
from memlab.backends.scripted import ScriptedBackend
from memlab.core.contract import MINIMAL_VALID_UPDATE

__all__ = ["iso", "marker_backend", "one_turn", "update"]


def iso(moment: datetime) -> str:
    """The dataset's timestamp form: ISO 8601 with a ``Z``."""
    return moment.isoformat().replace("+00:00", "Z")


def update(*facts: str | tuple[str, float]) -> str:
    """A valid update reply adding ``facts`` (text, or (text, confidence); default 0.9)."""
    data = json.loads(json.dumps(MINIMAL_VALID_UPDATE))
    data["newFacts"] = [
        {"content": fact, "category": "context", "confidence": 0.9}
        if isinstance(fact, str)
        else {"content": fact[0], "category": "context", "confidence": fact[1]}
        for fact in facts
    ]
    return json.dumps(data)


def one_turn(
    thread: str, start: datetime, human: str, ai: str = "OK.", **labels: Any
) -> dict[str, Any]:
    """A session of one human message and the AI's answer two seconds later."""
    return {
        "thread_id": thread,
        "started_at": iso(start),
        "messages": [
            {"role": "human", "content": human, "timestamp": iso(start)},
            {"role": "ai", "content": ai, "timestamp": iso(start + timedelta(seconds=2))},
        ],
        "labels": labels,
    }


def marker_backend(replies: Mapping[str, str]) -> ScriptedBackend:
    """A scripted model answering with the reply of the first marker found in the prompt.

    Markers are conversation phrases that never appear in the stored memory JSON. A prompt
    without a marker gets a valid update that changes nothing.
    """

    def reply(request: CompletionRequest) -> str:
        prompt = str(request.messages[-1]["content"])
        return next((text for marker, text in replies.items() if marker in prompt), update())

    return ScriptedBackend(function=reply)
