"""The response cache's key and entry texts built around the message contents
(``memlab.backends.caching._cache_text.request_texts``) equal the plain ``json.dumps`` texts, and an
entry is served from its head only when its end is exactly the request summary's text."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from memlab.backends.caching import _cache_text
from memlab.backends.caching.cache import (
    CacheCorruptError,
    CachedBackend,
    CacheMode,
    decode_entry,
    entry_path,
    request_key,
)
from memlab.backends.scripted import ScriptedBackend
from memlab.core.pipeline.llm import CompletionRequest, GenerationParams, OutputMode

SCHEMA = {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}

REQUESTS = [
    CompletionRequest(messages=[{"role": "user", "content": "hello"}]),
    CompletionRequest(
        messages=[
            {"role": "system", "content": 'quotes " and \\ back\nslash\t\u2028 \x01 é 猫 😀'},
            {"role": "user", "content": "", "name": "ann"},
        ],
        params=GenerationParams(temperature=0.7, max_tokens=64, seed=3, top_p=0.9),
        model="other-model",
    ),
    CompletionRequest(
        messages=[{"content": '{"memory": [1, 2]}', "role": "user"}],
        mode=OutputMode.JSON_SCHEMA,
        schema=SCHEMA,
        sample=2,
    ),
    CompletionRequest(messages=[{"role": "user", "content": "x"}], mode=OutputMode.JSON_OBJECT),
    # The placeholder itself as a content: filled in after the split, so still exact.
    CompletionRequest(messages=[{"role": "user", "content": _cache_text._PLACEHOLDER}]),
]


@pytest.mark.parametrize("request_", REQUESTS)
def test_the_texts_equal_the_plain_key_document_and_entry_end(request_: CompletionRequest) -> None:
    texts = _cache_text.request_texts("local", "m", request_)
    assert texts is not None
    key_text, tail = texts
    assert key_text == _cache_text.canonical(_cache_text.key_document("local", "m", request_))
    assert hashlib.sha256(key_text).hexdigest() == request_key("local", "m", request_)
    entry = {
        "format": 1,
        "key": "k",
        "created_at": "2026-01-01T00:00:00Z",
        "completion": {"text": "reply"},
        "request": _cache_text.request_summary("local", "m", request_),
    }
    written = _cache_text.entry_text(entry)
    assert written.endswith(tail) and tail.startswith(',\n  "request": {')
    assert written[: len(written) - len(tail)].endswith('"key": "k"')


def test_requests_off_the_common_shape_take_the_plain_path() -> None:
    listed: Any = [{"type": "text", "text": "hi"}]
    assert (
        _cache_text.request_texts(
            "local", "m", CompletionRequest([{"role": "user", "content": listed}])
        )
        is None
    )
    odd_key: Any = {"role": "user", "content": "hi", 1: "x"}
    assert _cache_text.request_texts("local", "m", CompletionRequest([odd_key])) is None
    # A lane whose fields hold the placeholder: the split finds it twice, no layout.
    clash = CompletionRequest([{"role": _cache_text._PLACEHOLDER, "content": "hi"}])
    assert _cache_text.request_texts("local", "m", clash) is None
    assert request_key("local", "m", clash)  # the plain path still keys it


def _recorded(tmp_path: Path, request_: CompletionRequest) -> tuple[Path, str]:
    CachedBackend(ScriptedBackend(["stored reply"]), tmp_path).complete(request_)
    key = request_key("scripted", request_.model or "scripted", request_)
    return entry_path(tmp_path, key), key


def test_a_hit_decodes_the_head_only_and_gets_what_the_full_decode_gets(tmp_path: Path) -> None:
    request_ = REQUESTS[1]
    path, key = _recorded(tmp_path, request_)
    raw = path.read_bytes()
    texts = _cache_text.request_texts("scripted", "other-model", request_)
    assert texts is not None
    tail = texts[1]
    assert raw.decode().endswith(tail)
    assert decode_entry(raw, key, tail) == decode_entry(raw, key)
    replay = CachedBackend(ScriptedBackend([]), tmp_path, CacheMode.READ_ONLY)
    assert replay.complete(request_).text == "stored reply"
    assert replay.counters.hits == 1


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda t: t.replace('"format": 1,', '"format": 1'), "not valid JSON"),
        (lambda t: "{" + t[t.index(',\n  "request"') :], "not valid JSON"),
        (lambda t: t.replace('"format": 1', '"format": 2'), "not a cache entry of format 1"),
        (lambda t: t.replace('"stored reply"', "7"), "bad completion"),
    ],
)
def test_a_damaged_head_before_an_intact_end_is_still_corrupt(
    tmp_path: Path, damage: Any, problem: str
) -> None:
    request_ = REQUESTS[0]
    path, key = _recorded(tmp_path, request_)
    texts = _cache_text.request_texts("scripted", "scripted", request_)
    assert texts is not None
    damaged = damage(path.read_text(encoding="utf-8"))
    assert damaged.endswith(texts[1])
    path.write_text(damaged, encoding="utf-8")
    found, completion = decode_entry(damaged.encode(), key, texts[1])
    assert completion is None and found.startswith(problem)
    assert decode_entry(damaged.encode(), key)[0].startswith(problem)  # as the full decode says
    with pytest.raises(CacheCorruptError):
        CachedBackend(ScriptedBackend([]), tmp_path, CacheMode.READ_ONLY).complete(request_)


def test_an_entry_whose_end_differs_is_decoded_in_full(tmp_path: Path) -> None:
    request_ = REQUESTS[0]
    path, _key = _recorded(tmp_path, request_)
    entry = json.loads(path.read_text(encoding="utf-8"))
    entry["request"]["messages"][0]["content"] = "[REDACTED] was here"  # as a redacted prompt
    path.write_text(json.dumps(entry), encoding="utf-8")  # another layout too
    replay = CachedBackend(ScriptedBackend([]), tmp_path, CacheMode.READ_ONLY)
    assert replay.complete(request_).text == "stored reply"
