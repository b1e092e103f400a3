"""The response cache's contract, part by part: what goes into a key, what an entry holds,
which entries are served, and what happens to every entry that is refused.

Fast and file-based (no server), so that ``scripts/mutation.py`` runs it for every mutant of
``memlab.backends.caching.cache``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memlab.backends.caching import _cache_text as cache_text_module
from memlab.backends.caching import cache as cache_module
from memlab.backends.caching.cache import (
    CACHE_FORMAT,
    CacheCorruptError,
    CachedBackend,
    CacheError,
    CacheMissError,
    CacheMode,
    entry_path,
    read_entries,
    request_key,
)
from memlab.backends.caching.cache_admin import cache_stats
from memlab.backends.scripted import ScriptedBackend
from memlab.core.pipeline.llm import Completion, CompletionRequest, GenerationParams, OutputMode

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}
MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "I like tea"}]


def req(**changes: Any) -> CompletionRequest:
    fields: dict[str, Any] = {"messages": MESSAGES, "params": GenerationParams(max_tokens=16)}
    return CompletionRequest(**{**fields, **changes})


def sha256_of(document: Any) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


PARAMS = {"temperature": 0.0, "max_tokens": 16, "seed": 0, "top_p": None}


# ---------------------------------------------------------------------- keys


def test_the_key_is_the_sha256_of_the_documented_request_document() -> None:
    document = {
        "format": 1,
        "backend": "local",
        "model": "m",
        "messages": MESSAGES,
        "params": PARAMS,
        "mode": "free",
        "schema": None,
    }
    assert CACHE_FORMAT == 1
    assert request_key("local", "m", req()) == sha256_of(document)
    # Other modes ignore the schema; json_schema mode keys it.
    assert request_key("local", "m", req(schema=SCHEMA)) == sha256_of(document)
    schema_mode = req(mode=OutputMode.JSON_SCHEMA, schema=SCHEMA)
    expected = {**document, "mode": "json_schema", "schema": SCHEMA}
    assert request_key("local", "m", schema_mode) == sha256_of(expected)
    no_schema = req(mode=OutputMode.JSON_SCHEMA)
    assert request_key("local", "m", no_schema) == sha256_of({**document, "mode": "json_schema"})
    # Only repeated samples carry their index: sample 0 is the plain request's key.
    assert request_key("local", "m", req(sample=0)) == sha256_of(document)
    assert request_key("local", "m", req(sample=2)) == sha256_of({**document, "sample": 2})
    # Non-ASCII text is keyed as UTF-8, not as \\u escapes.
    accents = [{"role": "user", "content": "Café ☕"}]
    assert request_key("local", "m", req(messages=accents)) == sha256_of(
        {**document, "messages": accents}
    )


@pytest.mark.parametrize(
    ("backend", "model", "changed"),
    [
        ("openai", "m", req()),
        ("local", "m2", req()),
        ("local", "m", req(messages=[*MESSAGES[:1], {"role": "user", "content": "I like tee"}])),
        ("local", "m", req(messages=[{**MESSAGES[0], "role": "user"}, MESSAGES[1]])),
        ("local", "m", req(messages=MESSAGES[1:])),
        ("local", "m", req(params=GenerationParams(max_tokens=17))),
        ("local", "m", req(params=GenerationParams(max_tokens=16, temperature=0.5))),
        ("local", "m", req(params=GenerationParams(max_tokens=16, seed=None))),
        ("local", "m", req(params=GenerationParams(max_tokens=16, top_p=0.9))),
        ("local", "m", req(mode=OutputMode.JSON_OBJECT)),
        ("local", "m", req(mode=OutputMode.JSON_SCHEMA)),
        ("local", "m", req(sample=1)),
    ],
    ids=[
        "backend", "model", "prompt", "role", "messages", "max_tokens", "temperature", "seed",
        "top_p", "mode", "schema mode", "sample",
    ],
)  # fmt: skip
def test_every_part_of_a_request_changes_its_key(
    backend: str, model: str, changed: CompletionRequest
) -> None:
    assert request_key(backend, model, changed) != request_key("local", "m", req())


def test_schemas_and_samples_are_keyed_apart() -> None:
    def key(**changes: Any) -> str:
        return request_key("local", "m", req(**changes))

    other = {"type": "object", "properties": {"b": {"type": "string"}}}
    assert key(mode=OutputMode.JSON_SCHEMA, schema=SCHEMA) != key(
        mode=OutputMode.JSON_SCHEMA, schema=other
    )
    assert len({key(sample=1), key(sample=2), key(sample=3)}) == 3


def test_a_new_format_version_gives_new_keys_and_refuses_old_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old_key = request_key("local", "m", req())
    cached = CachedBackend(ScriptedBackend(["old"]), tmp_path)
    cached.complete(req())
    monkeypatch.setattr(cache_text_module, "CACHE_FORMAT", CACHE_FORMAT + 1)  # defined there
    assert request_key("local", "m", req()) != old_key
    fresh = CachedBackend(ScriptedBackend(["new"]), tmp_path)
    assert fresh.complete(req()).text == "new"  # the old entry is not served
    assert fresh.counters.misses == 1 and fresh.counters.corrupt == 0


def test_the_request_model_overrides_the_backends_default() -> None:
    cached = CachedBackend(ScriptedBackend(["x"], model="default"), "unused")
    assert cached.model == "default"
    assert cached.key_for(req()) == request_key("scripted", "default", req())
    assert cached.key_for(req(model="other")) == request_key("scripted", "other", req())
    assert entry_path("cache", "ab" + "0" * 62) == Path("cache", "ab", "ab" + "0" * 62 + ".json")


# ---------------------------------------------------------------------- entries


_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def test_an_entry_holds_the_request_summary_and_the_reply(tmp_path: Path) -> None:
    backend = ScriptedBackend(["the reply"], model="m1")
    cached = CachedBackend(backend, tmp_path, secret_values=["", "I like tea"])
    request = req(mode=OutputMode.JSON_SCHEMA, schema=SCHEMA)
    reply = cached.complete(request)
    key = cached.key_for(request)
    data = json.loads(entry_path(tmp_path, key).read_text(encoding="utf-8"))
    assert _STAMP.fullmatch(data.pop("created_at"))
    assert data == {
        "format": 1,
        "key": key,
        "request": {
            "backend": "scripted",
            "model": "m1",
            "mode": "json_schema",
            "params": PARAMS,
            "schema_sha256": sha256_of(SCHEMA),
            # A secret value given to the cache is redacted (the empty one is ignored).
            "messages": [MESSAGES[0], {"role": "user", "content": "[REDACTED]"}],
        },
        "completion": {k: v for k, v in reply.to_dict().items() if k != "cached"},
    }
    # The hit is the stored reply itself, marked cached and without latency.
    again = CachedBackend(ScriptedBackend([], model="m1"), tmp_path, CacheMode.READ_ONLY)
    hit = again.complete(request)
    assert hit == Completion(
        text="the reply",
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        latency_s=0.0,
        finish_reason=reply.finish_reason,
        model="m1",
        backend="scripted",
        cached=True,
    )
    assert (again.counters.hits, again.counters.misses, again.counters.backend_calls) == (1, 0, 0)


def test_other_modes_store_no_schema_digest(tmp_path: Path) -> None:
    cached = CachedBackend(ScriptedBackend(["r"]), tmp_path)
    cached.complete(req(schema=SCHEMA))
    data = json.loads(entry_path(tmp_path, cached.key_for(req())).read_text(encoding="utf-8"))
    assert data["request"]["schema_sha256"] is None and data["request"]["mode"] == "free"


def test_the_smallest_sound_entry_is_served_with_defaults(tmp_path: Path) -> None:
    key = request_key("scripted", "scripted", req())
    path = entry_path(tmp_path, key)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"format": 1, "key": key, "completion": {"text": "t"}}), "utf-8")
    hit = CachedBackend(ScriptedBackend([]), tmp_path, CacheMode.READ_ONLY).complete(req())
    assert hit == Completion(
        text="t",
        prompt_tokens=0,
        completion_tokens=0,
        latency_s=0.0,
        finish_reason=None,
        model="",
        backend="",
        cached=True,
    )


# ---------------------------------------------------------------------- refused entries


def _sound(key: str) -> dict[str, Any]:
    completion = {"text": "t", "prompt_tokens": 3, "completion_tokens": 1, "finish_reason": "stop"}
    return {"format": 1, "key": key, "completion": completion}


def _with(**changes: Any) -> Any:
    def tamper(entry: dict[str, Any]) -> Any:
        return {**entry, **changes}

    return tamper


def _completion(**changes: Any) -> Any:
    def tamper(entry: dict[str, Any]) -> Any:
        return {**entry, "completion": {**entry["completion"], **changes}}

    return tamper


_LONG = "9" * 150 + "x" * 150

TAMPERED: list[tuple[str, Any, str]] = [
    ("format 2", _with(format=2), "not a cache entry of format 1"),
    ("format as text", _with(format="1"), "not a cache entry of format 1"),
    ("no format", lambda e: {k: v for k, v in e.items() if k != "format"}, "not a cache entry "),
    ("a list", lambda e: [e], "not a cache entry of format 1"),
    ("foreign key", _with(key="0" * 64), "it holds the entry of another request "),
    ("no key", lambda e: {k: v for k, v in e.items() if k != "key"}, "it holds the entry of "),
    ("no completion", _with(completion=None), "bad completion: no completion text"),
    ("text not a string", _completion(text=1), "bad completion: no completion text"),
    ("no text", lambda e: {**e, "completion": {}}, "bad completion: no completion text"),
    ("bad finish", _completion(finish_reason=1), "bad completion: finish_reason is not a string"),
    (
        "bad tokens",
        _completion(prompt_tokens=_LONG),
        "bad completion: " + f"invalid literal for int() with base 10: '{_LONG}'"[:200],
    ),
    (
        "bad completion tokens",
        _completion(completion_tokens="many"),
        "bad completion: invalid literal for int() with base 10: 'many'",
    ),
    ("huge tokens", _completion(prompt_tokens=float("inf")), "bad completion: cannot convert "),
]


def _record(tmp_path: Path, tamper: Any) -> tuple[Path, bytes]:
    key = request_key("scripted", "scripted", req())
    path = entry_path(tmp_path, key)
    path.parent.mkdir(parents=True)
    raw = json.dumps(tamper(_sound(key))).encode()
    path.write_bytes(raw)
    return path, raw


def test_a_sound_entry_is_served(tmp_path: Path) -> None:
    _record(tmp_path, lambda e: e)
    hit = CachedBackend(ScriptedBackend([]), tmp_path, CacheMode.READ_ONLY).complete(req())
    assert (hit.text, hit.prompt_tokens, hit.completion_tokens, hit.finish_reason) == (
        "t",
        3,
        1,
        "stop",
    )


@pytest.mark.parametrize(
    ("tamper", "problem"), [t[1:] for t in TAMPERED], ids=[t[0] for t in TAMPERED]
)
def test_a_tampered_entry_is_refused_in_one_line_and_left_as_it_is(
    tmp_path: Path, tamper: Any, problem: str
) -> None:
    path, raw = _record(tmp_path, tamper)
    cached = CachedBackend(ScriptedBackend([]), tmp_path, CacheMode.READ_ONLY)
    with pytest.raises(CacheCorruptError) as info:
        cached.complete(req())
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"cache entry {path} is corrupt ({problem}")
    assert message.endswith(
        "); read-only mode leaves it as it is: delete it and re-record with cache mode 'read_write'"
    )
    assert cached.counters.corrupt == 1
    assert path.read_bytes() == raw and os.listdir(path.parent) == [path.name]
    ((key, listed),) = read_entries(tmp_path).items()  # a worker is told the same problem
    assert path.name == f"{key}.json" and isinstance(listed, str)
    assert message == f"cache entry {path} is corrupt ({listed}); " + message.split("); ")[-1]
    assert listed.startswith(problem)


def test_read_write_mode_sets_a_tampered_entry_aside_and_records_anew(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, raw = _record(tmp_path, _with(format=2))
    cached = CachedBackend(ScriptedBackend(["new"]), tmp_path)
    with caplog.at_level(logging.WARNING, logger="memlab.backends.caching.cache"):
        assert cached.complete(req()).text == "new"
    (aside,) = [p for p in path.parent.iterdir() if p != path]
    assert re.fullmatch(re.escape(path.name) + r"\.corrupt-\d{8}T\d{12}Z", aside.name)
    assert aside.read_bytes() == raw
    assert json.loads(path.read_text(encoding="utf-8"))["completion"]["text"] == "new"
    counters = cached.counters
    assert (counters.hits, counters.misses, counters.backend_calls, counters.corrupt) == (
        0,
        1,
        1,
        1,
    )
    assert caplog.messages == [
        f"cache entry {path} is corrupt (not a cache entry of format 1); moved aside to {aside}"
    ]


def test_a_link_in_place_of_an_entry_is_set_aside_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    key = request_key("scripted", "scripted", req())
    outside.write_text(json.dumps(_sound(key)), encoding="utf-8")
    path = entry_path(tmp_path / "cache", key)
    path.parent.mkdir(parents=True)
    path.symlink_to(outside)
    with pytest.raises(CacheCorruptError, match=r"is corrupt \(.*symbolic link"):
        CachedBackend(ScriptedBackend([]), tmp_path / "cache", CacheMode.READ_ONLY).complete(req())
    cached = CachedBackend(ScriptedBackend(["new"]), tmp_path / "cache")
    assert cached.complete(req()).text == "new" and cached.counters.corrupt == 1
    assert outside.read_text(encoding="utf-8") == json.dumps(_sound(key))
    assert not path.is_symlink()


def test_a_linked_shard_is_refused_with_the_fix(tmp_path: Path) -> None:
    key = request_key("scripted", "scripted", req())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / key[:2]).symlink_to(elsewhere)
    cached = CachedBackend(ScriptedBackend(["new"]), tmp_path / "cache")
    with pytest.raises(CacheError) as info:
        cached.complete(req())
    assert str(info.value).endswith(
        "remove the link from the cache directory (memlab writes real directories and files only)"
    )
    assert "symbolic link" in str(info.value) and "\n" not in str(info.value)
    assert list(elsewhere.iterdir()) == []
    cached.mark_used(key)  # says nothing: the entry is not touched through the link


# ---------------------------------------------------------------------- misses, put, mark_used


def test_a_read_only_miss_says_how_to_record_it(tmp_path: Path) -> None:
    long_prompt = "remember   my\nbirthday " * 10
    request = req(messages=[{"role": "user", "content": long_prompt}])
    cached = CachedBackend(ScriptedBackend([]), tmp_path, "read_only")
    with pytest.raises(CacheMissError) as info:
        cached.complete(request)
    key = request_key("scripted", "scripted", request)
    preview = " ".join(long_prompt.split())[:80]
    assert str(info.value) == (
        "Response cache miss in read-only mode: backend='scripted' model='scripted' "
        f"mode='free' key={key} (last message starts {preview!r}) in {tmp_path}. Re-record it "
        "by running once with cache mode 'read_write' (needs the model), or check that the "
        "prompt, parameters and dataset are the ones the cache was recorded with."
    )
    assert (cached.counters.misses, cached.counters.backend_calls) == (1, 0)
    empty = CompletionRequest(messages=[])
    with pytest.raises(CacheMissError, match=r"\(last message starts ''\)"):
        cached.complete(empty)
    # The preview is taken from the first 400 characters only.
    spaced = req(messages=[{"role": "user", "content": " " * 399 + "ab"}])
    with pytest.raises(CacheMissError, match=r"\(last message starts 'a'\)"):
        cached.complete(spaced)
    no_content = req(messages=[{"role": "user"}])
    with pytest.raises(CacheMissError, match=r"\(last message starts ''\)"):
        cached.complete(no_content)


def test_put_stores_only_new_replies_in_read_write_mode(tmp_path: Path) -> None:
    reply = Completion(text="remote", prompt_tokens=2, completion_tokens=1, latency_s=0.5)
    for mode in (CacheMode.READ_ONLY, CacheMode.OFF):
        CachedBackend(ScriptedBackend([]), tmp_path, mode).put(req(), reply)
        assert not tmp_path.exists() or not any(tmp_path.iterdir())
    cached = CachedBackend(ScriptedBackend([]), tmp_path)
    cached.put(req(), reply)
    later = Completion(text="later", prompt_tokens=2, completion_tokens=1, latency_s=0.5)
    cached.put(req(), later)  # the first reply recorded wins
    hit = cached.complete(req())
    assert (hit.text, hit.cached, hit.prompt_tokens) == ("remote", True, 2)
    assert cached.counters.backend_calls == 0
    # A corrupt entry in the way is set aside and replaced.
    path = entry_path(tmp_path, cached.key_for(req()))
    path.write_text("{", encoding="utf-8")
    cached.put(req(), later)
    assert json.loads(path.read_text(encoding="utf-8"))["completion"]["text"] == "later"
    assert cached.counters.corrupt == 1


def test_mark_used_touches_the_entry_only(tmp_path: Path) -> None:
    cached = CachedBackend(ScriptedBackend(["r"]), tmp_path)
    cached.complete(req())
    path = entry_path(tmp_path, cached.key_for(req()))
    old = time.time() - 86400
    os.utime(path, (old, old))
    before = path.read_bytes()
    cached.mark_used(cached.key_for(req()))
    assert path.stat().st_mtime > old + 3600 and path.read_bytes() == before
    cached.mark_used("ff" + "0" * 62)  # no such entry: nothing happens
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.parent.name]


def test_a_hit_marks_the_entry_used(tmp_path: Path) -> None:
    cached = CachedBackend(ScriptedBackend(["r"]), tmp_path)
    cached.complete(req())
    path = entry_path(tmp_path, cached.key_for(req()))
    old = time.time() - 86400
    os.utime(path, (old, old))
    assert cached.complete(req()).cached
    assert path.stat().st_mtime > old + 3600


def test_off_mode_accepts_any_path_and_names_itself(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x", encoding="utf-8")
    off = CachedBackend(ScriptedBackend(["r"]), a_file, "off")
    assert off.complete(req()).text == "r" and off.counters.backend_calls == 1
    assert repr(off) == f"CachedBackend(ScriptedBackend(...), {str(a_file)!r}, 'off')".replace(
        "ScriptedBackend(...)", repr(off.backend)
    )
    assert off.name == "scripted"
    with pytest.raises(CacheError) as info:
        CachedBackend(ScriptedBackend([]), a_file, "read_only")
    assert str(info.value) == (
        f"cache directory {a_file} is a file, not a directory; pass a directory "
        "(it is created on the first write)"
    )


# ---------------------------------------------------------------------- whole directory


def test_read_entries_lists_entries_by_key_and_skips_everything_else(tmp_path: Path) -> None:
    cached = CachedBackend(ScriptedBackend(["a", "b"]), tmp_path)
    good = cached.complete(req())
    other = req(sample=1)
    cached.complete(other)
    key, bad_key = cached.key_for(req()), cached.key_for(other)
    entry_path(tmp_path, bad_key).write_text("[]", encoding="utf-8")
    shard = tmp_path / key[:2]
    (shard / ".tmp-abc_1.json").write_text("{", encoding="utf-8")
    (shard / f"{key}.json.corrupt-20260101T000000000000Z").write_text("{", encoding="utf-8")
    (shard / "notes.txt").write_text("mine", encoding="utf-8")
    (shard / f"{key[:63]}.json").write_text("{", encoding="utf-8")  # not a key's name
    wrong_shard = "00" if key[:2] != "00" else "11"
    (tmp_path / wrong_shard).mkdir(exist_ok=True)
    (tmp_path / wrong_shard / f"{key}.json").write_text("{", encoding="utf-8")
    (tmp_path / "not-a-shard").mkdir()
    (tmp_path / "not-a-shard" / f"{key}.json").write_text("{", encoding="utf-8")
    (tmp_path / "ZZ").mkdir()
    (tmp_path / "ZZ" / f"{key}.json").write_text("{", encoding="utf-8")
    entries = read_entries(tmp_path)
    assert entries == {
        key: Completion(
            text="a",
            prompt_tokens=good.prompt_tokens,
            completion_tokens=good.completion_tokens,
            latency_s=0.0,
            finish_reason=good.finish_reason,
            model="scripted",
            backend="scripted",
            cached=True,
        ),
        bad_key: "not a cache entry of format 1",
    }
    assert read_entries(tmp_path / "missing") == {}
    with pytest.raises(CacheError, match="is a file, not a directory"):
        read_entries(shard / "notes.txt")


def test_read_entries_reports_an_unreadable_entry(tmp_path: Path) -> None:
    cached = CachedBackend(ScriptedBackend(["a"]), tmp_path)
    cached.complete(req())
    key = cached.key_for(req())
    path = entry_path(tmp_path, key)
    path.write_bytes(b"\xff")
    assert read_entries(tmp_path) == {key: "not UTF-8: invalid byte at offset 0"}
    path.write_bytes(b"{no")
    (problem,) = read_entries(tmp_path).values()
    assert isinstance(problem, str) and problem.startswith("not valid JSON: Expecting")


def test_the_directory_tools_count_set_aside_and_temporary_files(tmp_path: Path) -> None:
    cached = CachedBackend(ScriptedBackend(["a", "b"]), tmp_path)
    cached.complete(req())
    key = cached.key_for(req())
    path = entry_path(tmp_path, key)
    path.write_text("{", encoding="utf-8")
    cached.complete(req())  # sets the broken entry aside and records anew
    (aside,) = path.parent.glob("*.corrupt-*")
    (path.parent / ".tmp-x1.json").write_text("{", encoding="utf-8")
    (path.parent / f"{key}.json.corrupt-2026").write_text("{", encoding="utf-8")  # not ours
    stats = cache_stats(tmp_path)
    assert (stats.entries, stats.corrupt_files, stats.temp_files) == (1, [str(aside)], 1)


def test_a_directory_that_cannot_be_listed_is_a_cache_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    CachedBackend(ScriptedBackend(["a"]), tmp_path).complete(req())

    def refuse(path: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "scandir", refuse)
    with pytest.raises(CacheError) as info:
        read_entries(tmp_path)
    assert str(info.value) == f"cannot list cache directory {tmp_path}: Permission denied"


def test_a_hit_is_served_when_its_time_cannot_be_updated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    CachedBackend(ScriptedBackend(["a"]), tmp_path).complete(req())

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(30, "Read-only file system")

    monkeypatch.setattr(os, "utime", refuse)
    cached = CachedBackend(ScriptedBackend([]), tmp_path, CacheMode.READ_ONLY)
    assert cached.complete(req()).text == "a"
    cached.mark_used(cached.key_for(req()))


def test_an_entry_that_cannot_be_set_aside_is_an_error_and_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, raw = _record(tmp_path, _with(format=2))
    original = os.replace

    def refuse_aside(src: Any, dst: Any) -> None:
        if ".corrupt-" in str(dst):
            raise PermissionError(13, "Permission denied")
        original(src, dst)

    monkeypatch.setattr(os, "replace", refuse_aside)
    backend = ScriptedBackend(["new"])
    with pytest.raises(CacheError) as info:
        CachedBackend(backend, tmp_path).complete(req())
    assert str(info.value) == (
        f"cache entry {path} is corrupt (not a cache entry of format 1) and cannot be moved "
        "aside (Permission denied); remove it by hand"
    )
    assert path.read_bytes() == raw and backend.call_count == 0


def test_an_entry_another_worker_set_aside_first_is_recorded_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = _record(tmp_path, _with(format=2))
    original = os.replace

    def moved_meanwhile(src: Any, dst: Any) -> None:
        if ".corrupt-" in str(dst):
            original(src, str(dst) + "-other")  # the other worker's move
            raise FileNotFoundError(2, "No such file or directory")
        original(src, dst)

    monkeypatch.setattr(os, "replace", moved_meanwhile)
    cached = CachedBackend(ScriptedBackend(["new"]), tmp_path)
    assert cached.complete(req()).text == "new"
    assert json.loads(path.read_text(encoding="utf-8"))["completion"]["text"] == "new"
    assert cached.counters.corrupt == 1


def test_times_are_utc_whatever_the_local_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "Asia/Kathmandu")  # UTC+05:45 all year
    time.tzset()
    try:
        path, _ = _record(tmp_path, _with(format=2))
        cached = CachedBackend(ScriptedBackend(["new"]), tmp_path)
        cached.complete(req())
        stored = json.loads(path.read_text(encoding="utf-8"))["created_at"]
        (aside,) = path.parent.glob("*.corrupt-*")
    finally:
        monkeypatch.undo()
        time.tzset()
    now = datetime.now(UTC)
    created = datetime.strptime(stored, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    moved = datetime.strptime(aside.name.split(".corrupt-")[1], "%Y%m%dT%H%M%S%fZ")
    assert abs((now - created).total_seconds()) < 600
    assert abs((now - moved.replace(tzinfo=UTC)).total_seconds()) < 600


def test_read_entries_reports_entries_too_large_to_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached = CachedBackend(ScriptedBackend(["a", "b"]), tmp_path)
    cached.complete(req())
    cached.complete(req(sample=1))
    monkeypatch.setattr(cache_module, "MAX_CACHE_ENTRY_BYTES", 10)
    entries = read_entries(tmp_path)
    assert sorted(entries) == sorted([cached.key_for(req()), cached.key_for(req(sample=1))])
    for problem in entries.values():
        assert isinstance(problem, str)
        pattern = r"cannot be read \(it is \d+ bytes; memlab reads at most 10 bytes .*\)"
        assert re.fullmatch(pattern, problem), problem


def test_put_records_the_request_summary(tmp_path: Path) -> None:
    cached = CachedBackend(ScriptedBackend([], model="m1"), tmp_path)
    cached.put(req(), Completion(text="remote", prompt_tokens=2, completion_tokens=1, latency_s=0))
    data = json.loads(entry_path(tmp_path, cached.key_for(req())).read_text(encoding="utf-8"))
    assert (data["request"]["backend"], data["request"]["model"]) == ("scripted", "m1")


def test_links_in_a_cache_directory_are_neither_listed_nor_touched(tmp_path: Path) -> None:
    cached = CachedBackend(ScriptedBackend(["a"]), tmp_path / "cache")
    cached.complete(req())
    key = cached.key_for(req())
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "target.json"
    target.write_bytes(entry_path(tmp_path / "cache", key).read_bytes())
    old = time.time() - 86400
    os.utime(target, (old, old))
    other = "ee" if key[:2] != "ee" else "dd"
    (tmp_path / "cache" / other).symlink_to(outside)  # a linked shard
    (outside / f"{other}{'0' * 62}.json").write_bytes(target.read_bytes())
    linked = entry_path(tmp_path / "cache", key)
    linked.unlink()
    linked.symlink_to(target)  # a linked entry in a real shard
    assert read_entries(tmp_path / "cache") == {}
    cached.mark_used(key)
    assert target.stat().st_mtime == pytest.approx(old, abs=1)
