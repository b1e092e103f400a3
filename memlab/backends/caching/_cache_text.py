"""The text of the response cache's keys and entries, and a faster way to the same text.

A request's key is the SHA-256 of its canonical key document (:func:`key_document`, written by
:func:`canonical`); its entry file is the pretty-printed entry whose ``"request"`` member, the
last in sorted order, is :func:`request_summary`. Both hold the prompt, most of their text.

A cached replay looks up one request per update. :func:`request_texts` gives the same key text,
and the text the request's entry file ends with, with every message's content JSON-encoded
once: the rest of both texts depends only on the lane (backend, model, mode, parameters,
schema, sample) and the messages' other fields, so it is written once per lane, around
placeholders (:class:`_Layout`). The entry's reader then compares the file's end with that tail
and decodes only what comes before it (the completion, the key and the format), instead of
decoding the prompt again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any

from memlab.core.base.jsontext import canonical_json
from memlab.core.pipeline.llm import CompletionRequest, OutputMode

__all__ = [
    "CACHE_FORMAT",
    "canonical",
    "entry_text",
    "key_document",
    "request_summary",
    "request_texts",
    "schema_digest",
]

CACHE_FORMAT = 1
"""Version of the key derivation and the entry layout; part of every key."""


def canonical(obj: Any) -> bytes:
    """``obj`` as canonical JSON (:func:`memlab.core.base.jsontext.canonical_json`), UTF-8."""
    return canonical_json(obj).encode()


def schema_digest(request: CompletionRequest) -> str | None:
    """SHA-256 of the schema sent in ``json_schema`` mode (``None`` in other modes)."""
    if request.mode is not OutputMode.JSON_SCHEMA or request.schema is None:
        return None
    return hashlib.sha256(canonical(request.schema)).hexdigest()


def key_document(backend_name: str, model: str, request: CompletionRequest) -> dict[str, Any]:
    """The document whose canonical text is hashed into the request's key."""
    return {
        "format": CACHE_FORMAT,
        "backend": backend_name,
        "model": model,
        "messages": [{str(k): v for k, v in m.items()} for m in request.messages],
        "params": request.params.as_dict(),
        "mode": OutputMode(request.mode).value,
        "schema": (
            request.schema
            if request.mode is OutputMode.JSON_SCHEMA and request.schema is not None
            else None
        ),
        # Only repeated samples carry it, so keys of single-sample requests never change.
        **({"sample": request.sample} if request.sample else {}),
        # Only requests to the simulated model carry it (see CompletionRequest.about).
        **({"about": list(request.about)} if request.about is not None else {}),
    }


def request_summary(backend_name: str, model: str, request: CompletionRequest) -> dict[str, Any]:
    """What an entry stores under ``"request"`` (before redaction)."""
    return {
        "backend": backend_name,
        "model": model,
        "mode": OutputMode(request.mode).value,
        "params": request.params.as_dict(),
        "schema_sha256": schema_digest(request),
        "messages": [{str(k): v for k, v in m.items()} for m in request.messages],
    }


def entry_text(entry: dict[str, Any]) -> str:
    """The text of an entry file (pretty-printed, sorted keys, a final line break)."""
    return json.dumps(entry, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --- the same texts, the prompt encoded once -------------------------------------------------

# Never equal to a real message's content in practice; should a field of a lane hold it,
# the split below finds it once too often and the lane takes the plain path.
_PLACEHOLDER = "\x00memlab cache message content\x00"
_ENCODED_PLACEHOLDER = json.encoder.encode_basestring(_PLACEHOLDER)
_encode = json.encoder.encode_basestring  # the encoder of ensure_ascii=False


@dataclass(frozen=True)
class _Layout:
    """A lane's key text and entry tail, split where the message contents go."""

    key: tuple[str, ...]
    tail: tuple[str, ...]


_layouts: dict[Any, _Layout | None] = {}
_MISSING: Any = object()  # no layout built yet (None: the lane takes the plain path)
_layouts_lock = threading.Lock()
_LAYOUTS_MAX = 256


def request_texts(
    backend_name: str, model: str, request: CompletionRequest
) -> tuple[bytes, str] | None:
    """(canonical key text, text the entry file ends with) of ``request``, equal to
    ``canonical(key_document(...))`` and to the end of :func:`entry_text` from the comma
    before ``"request"`` on; ``None`` for a request off the common shape (a message whose
    content is not a string or whose keys are not strings, a value that cannot be compared
    as a dictionary key), which the caller handles the plain way."""
    if request.about is not None:  # not part of the layouts' lookup: the plain path
        return None
    contents: list[str] = []
    shapes: list[tuple[tuple[str, Any], ...]] = []
    for message in request.messages:
        content = message.get("content")
        if type(content) is not str or not all(type(k) is str for k in message):
            return None
        contents.append(content)
        shapes.append(tuple((k, None if k == "content" else v) for k, v in message.items()))
    try:
        lookup = (
            CACHE_FORMAT,
            backend_name,
            model,
            OutputMode(request.mode).value,
            tuple(request.params.as_dict().items()),
            schema_digest(request),
            request.sample,
            tuple(shapes),
        )
        with _layouts_lock:
            layout = _layouts.get(lookup, _MISSING)
    except (TypeError, ValueError):  # unhashable or not JSON: the plain path says what
        return None
    if layout is _MISSING:
        layout = _layout(backend_name, model, request)
        with _layouts_lock:
            if len(_layouts) >= _LAYOUTS_MAX:
                _layouts.clear()
            _layouts[lookup] = layout
    if layout is None:
        return None
    encoded = [_encode(content) for content in contents]
    return _filled(layout.key, encoded).encode(), _filled(layout.tail, encoded)


def _filled(pieces: tuple[str, ...], encoded: list[str]) -> str:
    parts = [pieces[0]]
    for text, piece in zip(encoded, pieces[1:], strict=True):
        parts.append(text)
        parts.append(piece)
    return "".join(parts)


def _layout(backend_name: str, model: str, request: CompletionRequest) -> _Layout | None:
    """The texts of ``request`` with placeholders for the message contents, split there."""
    messages = [{**m, "content": _PLACEHOLDER} for m in request.messages]
    shape = dataclasses.replace(request, messages=messages)
    try:
        key = canonical(key_document(backend_name, model, shape)).decode()
        summary = request_summary(backend_name, model, shape)
        # '{\n  "request": ...\n}' is how an entry ends after its "key" member.
        tail = "," + entry_text({"request": summary})[1:]
    except (TypeError, ValueError):
        return None
    key_pieces = tuple(key.split(_ENCODED_PLACEHOLDER))
    tail_pieces = tuple(tail.split(_ENCODED_PLACEHOLDER))
    if len(key_pieces) != len(messages) + 1 or len(tail_pieces) != len(messages) + 1:
        return None
    return _Layout(key_pieces, tail_pieces)
