"""Message normalisation, filtering and formatting for the memory pipeline.

Two message shapes are accepted without any LangChain dependency:

* OpenAI-style dicts: ``{"role": "user" | "assistant" | "tool" | "system", "content": ...,
  "tool_calls": [...]}`` (the role names ``human`` and ``ai`` are accepted as well);
* LangChain-style objects: anything with a ``.type`` attribute (``human``, ``ai``, ``tool``,
  ``system``), ``.content`` and, for AI messages, ``.tool_calls``.

Content may be a string or a list of multimodal parts; only text parts carry meaning for memory.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memlab.core.jsondoc.contract import MAX_MESSAGE_CHARS, UPLOAD_MARKER

__all__ = [
    "UPLOAD_BLOCK_RE",
    "content_text",
    "filter_messages_for_memory",
    "format_conversation_for_update",
    "has_enough_for_update",
    "message_content",
    "message_role",
    "message_tool_calls",
]

UPLOAD_BLOCK_RE = re.compile(
    re.escape(UPLOAD_MARKER) + r"[\s\S]*?" + re.escape("</" + UPLOAD_MARKER[1:]) + r"\n*",
    re.IGNORECASE,
)
"""An ``<uploaded_files>…</uploaded_files>`` block (and the newlines after it)."""

_ROLE_ALIASES: dict[str, str] = {
    "human": "human",
    "user": "human",
    "humanmessage": "human",
    "humanmessagechunk": "human",
    "ai": "ai",
    "assistant": "ai",
    "aimessage": "ai",
    "aimessagechunk": "ai",
    "tool": "tool",
    "function": "tool",
    "toolmessage": "tool",
    "toolmessagechunk": "tool",
    "system": "system",
    "developer": "system",
    "systemmessage": "system",
    "systemmessagechunk": "system",
}

# Multimodal part types whose "text" is user-visible text (chat and responses APIs).
_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


def message_role(msg: Any) -> str:
    """Return the normalised role of a message.

    Args:
        msg: An OpenAI-style dict or a LangChain-style object.

    Returns:
        One of ``"human"``, ``"ai"``, ``"tool"``, ``"system"`` or ``"other"``.
    """
    raw: Any
    if isinstance(msg, Mapping):
        raw = msg.get("role", msg.get("type"))
    else:
        raw = getattr(msg, "type", None)
        if not isinstance(raw, str):
            raw = getattr(msg, "role", None)
    if not isinstance(raw, str):
        return "other"
    return _ROLE_ALIASES.get(raw.strip().lower(), "other")


def message_content(msg: Any) -> Any:
    """Return the raw content of a message (a string, a list of parts, or None)."""
    if isinstance(msg, Mapping):
        return msg.get("content")
    return getattr(msg, "content", None)


def message_tool_calls(msg: Any) -> list[Any]:
    """Return the tool calls a message carries (an empty list when there are none).

    The legacy OpenAI ``function_call`` field counts as one tool call.
    """
    if isinstance(msg, Mapping):
        calls = msg.get("tool_calls")
        legacy = msg.get("function_call")
    else:
        calls = getattr(msg, "tool_calls", None)
        legacy = None
    result = list(calls) if isinstance(calls, Iterable) and not isinstance(calls, str) else []
    if legacy:
        result.append(legacy)
    return result


def _text_parts(content: Sequence[Any]) -> list[str]:
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping):
            text = part.get("text")
            part_type = part.get("type", "text")
            if isinstance(text, str) and part_type in _TEXT_PART_TYPES:
                parts.append(text)
    return parts


def content_text(content: Any) -> str:
    """Extract the text of a message content.

    A string is returned as is; a list of parts keeps only text parts (plain strings and dicts
    with a ``text`` field of type text), joined by a single space. Anything else gives ``""``.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        return " ".join(p for p in _text_parts(content) if p)
    return ""


def _with_content(msg: Any, content: Any) -> Any:
    """Return a copy of ``msg`` with new content; the caller's message is never mutated."""
    if isinstance(msg, Mapping):
        new = dict(msg)
        new["content"] = content
        return new
    model_copy = getattr(msg, "model_copy", None)
    if callable(model_copy):
        return model_copy(update={"content": content})
    new_obj = copy.copy(msg)
    new_obj.content = content
    return new_obj


def _strip_upload_blocks(content: Any) -> tuple[Any, bool]:
    """Remove upload blocks from content.

    Returns:
        ``(new_content, only_uploads)`` where ``only_uploads`` is true when no text is left.
    """
    if isinstance(content, str):
        stripped = UPLOAD_BLOCK_RE.sub("", content).strip()
        return stripped, not stripped
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        new_parts: list[Any] = []
        has_text = False
        for part in content:
            if isinstance(part, str):
                text = UPLOAD_BLOCK_RE.sub("", part).strip()
                if text:
                    new_parts.append(text)
                    has_text = True
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                text = UPLOAD_BLOCK_RE.sub("", part["text"]).strip()
                if text:
                    new_parts.append({**part, "text": text})
                    has_text = has_text or part.get("type", "text") in _TEXT_PART_TYPES
            else:
                new_parts.append(part)
        return new_parts, not has_text
    return content, False


def _has_upload_block(content: Any) -> bool:
    if isinstance(content, str):
        return UPLOAD_BLOCK_RE.search(content) is not None
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        for part in content:
            text = part if isinstance(part, str) else None
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                text = part["text"]
            if text is not None and UPLOAD_BLOCK_RE.search(text):
                return True
    return False


def filter_messages_for_memory(messages: Iterable[Any]) -> list[Any]:
    """Keep only the messages worth remembering.

    Rules: human messages are kept; AI messages are kept only when they carry no tool calls;
    tool, system and any other messages are dropped. A human message whose content only
    carries an ``<uploaded_files>`` block is dropped together with the final AI reply that
    follows it; otherwise the block is removed from a copy of the message.

    Args:
        messages: Messages in conversation order (dicts or objects, mixed shapes allowed).

    Returns:
        A new list; messages whose content changed are copies, the input is never mutated.
    """
    filtered: list[Any] = []
    skip_next_ai = False
    for msg in messages:
        role = message_role(msg)
        if role == "human":
            content = message_content(msg)
            if _has_upload_block(content):
                new_content, only_uploads = _strip_upload_blocks(content)
                if only_uploads:
                    # The reply to an upload-only turn only acknowledges the files.
                    skip_next_ai = True
                    continue
                filtered.append(_with_content(msg, new_content))
            else:
                filtered.append(msg)
            skip_next_ai = False
        elif role == "ai":
            if message_tool_calls(msg):
                continue
            if skip_next_ai:
                skip_next_ai = False
                continue
            filtered.append(msg)
    return filtered


def has_enough_for_update(filtered: Iterable[Any]) -> bool:
    """Return True when at least one human and one AI message are present."""
    roles = {message_role(m) for m in filtered}
    return "human" in roles and "ai" in roles


def format_conversation_for_update(messages: Iterable[Any]) -> str:
    """Format messages as ``User: …`` / ``Assistant: …`` paragraphs for the update prompt.

    Multimodal content keeps only its text parts (joined by a space); a text longer than
    :data:`MAX_MESSAGE_CHARS` is cut to that length and gets ``...``; roles other than human
    and AI are dropped, as are messages with no text.

    Returns:
        The paragraphs joined by a blank line; ``""`` when nothing is left.
    """
    lines: list[str] = []
    for msg in messages:
        role = message_role(msg)
        if role == "human":
            prefix = "User"
        elif role == "ai":
            prefix = "Assistant"
        else:
            continue
        text = content_text(message_content(msg))
        if not text.strip():
            continue
        if len(text) > MAX_MESSAGE_CHARS:
            text = text[:MAX_MESSAGE_CHARS] + "..."
        lines.append(f"{prefix}: {text}")
    return "\n\n".join(lines)
