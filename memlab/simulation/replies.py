"""A simulated reply broken as a failure category says: one definition for every kind of call.

The simulated model answers update, summary, importance and compression prompts with a JSON
object of the call's contract; :func:`broken_reply` turns that object into reply text and, for
an injected failure, breaks it the way the category of the parse ladder's taxonomy describes
(:class:`memlab.core.jsondoc.parsing.FailureCategory`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from memlab.core.jsondoc.parsing import FailureCategory

__all__ = ["Breakage", "broken_reply"]


@dataclass(frozen=True)
class Breakage:
    """How one kind of reply is broken.

    Attributes:
        prose: The reply around the object for ``prose_wrapped`` (``{body}`` marks it).
        think: The same for ``think_block``.
        no_json: The whole reply for ``no_json``.
        wrong_shape: The object for ``wrong_shape`` (lacks a key the contract requires).
        violation: The object for ``schema_violation`` (a value of the wrong type).
    """

    prose: str
    think: str
    no_json: str
    wrong_shape: dict[str, Any]
    violation: dict[str, Any]


def broken_reply(
    reply: dict[str, Any], failure: FailureCategory | None, breakage: Breakage
) -> tuple[str, str]:
    """The reply text of ``reply``, broken as ``failure`` says, and the finish reason."""
    body = json.dumps(reply, ensure_ascii=False)
    if failure is None:
        return body, "stop"
    if failure is FailureCategory.TRUNCATED:
        return body[: max(1, len(body) * 2 // 3)], "length"
    texts: dict[FailureCategory, str] = {
        FailureCategory.EMPTY: "",
        FailureCategory.NO_JSON: breakage.no_json,
        FailureCategory.FENCED: f"```json\n{body}\n```",
        FailureCategory.PROSE_WRAPPED: breakage.prose.format(body=body),
        FailureCategory.THINK_BLOCK: breakage.think.format(body=body),
        FailureCategory.INVALID_JSON: body[:-1] + ",}",
        FailureCategory.WRONG_SHAPE: json.dumps(breakage.wrong_shape, ensure_ascii=False),
        FailureCategory.SCHEMA_VIOLATION: json.dumps(breakage.violation, ensure_ascii=False),
    }
    return texts[failure], "stop"
