"""CachedBackend, request keys, stats, prune and the `memlab cache` command."""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_backend_openai import FakeServer, chat_body

from memlab.backends.caching.cache import (
    CacheCorruptError,
    CachedBackend,
    CacheMissError,
    CacheMode,
    entry_path,
    request_key,
)
from memlab.backends.caching.cache_admin import cache_stats, prune_cache
from memlab.backends.remote.openai_compat import OpenAICompatibleBackend
from memlab.backends.remote.retry import RetryPolicy
from memlab.backends.scripted import ScriptedBackend
from memlab.cli.tools import cache as cache_cli
from memlab.core.pipeline.llm import (
    CompletionRequest,
    GenerationParams,
    OutputMode,
    allow_model_requests,
)

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}


def req(
    content: str = "I like green tea",
    mode: OutputMode = OutputMode.FREE,
    schema: dict[str, Any] | None = None,
    **params: Any,
) -> CompletionRequest:
    return CompletionRequest(
        messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": content}],
        mode=mode,
        schema=schema,
        params=GenerationParams(**params),
    )


def scripted() -> ScriptedBackend:
    return ScriptedBackend(function=lambda r: f"reply to {r.messages[-1]['content']}")


def test_second_identical_call_is_a_hit_without_backend_call(tmp_path: Path) -> None:
    backend = scripted()
    cached = CachedBackend(backend, tmp_path)
    first = cached.complete(req())
    second = cached.complete(req())
    assert backend.call_count == 1
    assert not first.cached and second.cached
    assert second.text == first.text and second.completion_tokens == first.completion_tokens
    assert second.latency_s == 0.0
    assert (cached.counters.hits, cached.counters.misses, cached.counters.backend_calls) == (
        1,
        1,
        1,
    )
    # A new instance over the same directory (a later run) hits too.
    again = CachedBackend(scripted(), tmp_path, CacheMode.READ_ONLY)
    assert again.complete(req()).cached


@pytest.mark.parametrize(
    "changed",
    [
        req("I like black tea"),
        req(max_tokens=99),
        req(temperature=0.7),
        req(seed=1),
        req(mode=OutputMode.JSON_OBJECT),
    ],
    ids=["prompt", "max_tokens", "temperature", "seed", "mode"],
)
def test_any_change_misses(tmp_path: Path, changed: CompletionRequest) -> None:
    backend = scripted()
    cached = CachedBackend(backend, tmp_path)
    cached.complete(req())
    cached.complete(changed)
    assert backend.call_count == 2
    assert cached.counters.hits == 0


def test_schema_change_misses_in_schema_mode_only() -> None:
    other = {"type": "object", "properties": {"b": {"type": "string"}}}
    key = request_key("local", "m", req(mode=OutputMode.JSON_SCHEMA, schema=SCHEMA))
    assert key != request_key("local", "m", req(mode=OutputMode.JSON_SCHEMA, schema=other))
    # Other modes ignore the schema, so it does not split their entries.
    assert request_key("local", "m", req(schema=SCHEMA)) == request_key(
        "local", "m", req(schema=other)
    )
    assert request_key("local", "m", req()) != request_key("openai", "m", req())
    assert request_key("local", "m", req()) != request_key("local", "m2", req())


def test_key_is_canonical_over_key_order() -> None:
    a = CompletionRequest(messages=[{"role": "user", "content": "x"}])
    b = CompletionRequest(messages=[{"content": "x", "role": "user"}])
    assert request_key("x", "m", a) == request_key("x", "m", b)


def test_read_only_miss_raises_naming_the_request(tmp_path: Path) -> None:
    backend = scripted()
    cached = CachedBackend(backend, tmp_path, "read_only")
    with pytest.raises(CacheMissError) as info:
        cached.complete(req("please remember my birthday"))
    message = str(info.value)
    key = request_key("scripted", "scripted", req("please remember my birthday"))
    assert key in message and "'scripted'" in message and "please remember my birth" in message
    assert backend.call_count == 0
    assert not any(tmp_path.iterdir())


def test_off_mode_neither_reads_nor_writes(tmp_path: Path) -> None:
    backend = scripted()
    cached = CachedBackend(backend, tmp_path, CacheMode.OFF)
    cached.complete(req())
    cached.complete(req())
    assert backend.call_count == 2 and cached.counters.backend_calls == 2
    assert not any(tmp_path.iterdir())


def test_entry_layout_is_committable_json(tmp_path: Path) -> None:
    cached = CachedBackend(scripted(), tmp_path)
    cached.complete(req(mode=OutputMode.JSON_SCHEMA, schema=SCHEMA))
    key = cached.key_for(req(mode=OutputMode.JSON_SCHEMA, schema=SCHEMA))
    path = entry_path(tmp_path, key)
    assert path == tmp_path / key[:2] / f"{key}.json"
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert data["key"] == key
    assert data["created_at"].endswith("Z")
    assert data["request"]["messages"][-1]["content"] == "I like green tea"
    assert data["request"]["mode"] == "json_schema" and len(data["request"]["schema_sha256"]) == 64
    assert data["completion"]["text"] == "reply to I like green tea"
    assert "cached" not in data["completion"]


def test_interrupted_write_leaves_no_corrupt_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached = CachedBackend(scripted(), tmp_path)

    def crash(src: str, dst: str) -> None:
        raise KeyboardInterrupt  # the process is interrupted between write and rename

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        cached.complete(req())
    monkeypatch.undo()
    assert not list(tmp_path.rglob("*.json"))  # neither an entry nor a stray temp file
    # A temp file left by a hard kill is ignored by lookups, counted and pruned.
    shard = tmp_path / "ab"
    shard.mkdir(exist_ok=True)
    stray = shard / ".tmp-123.json"
    stray.write_text('{"completion": {"te', encoding="utf-8")
    old = time.time() - 7200
    os.utime(stray, (old, old))
    fresh = CachedBackend(scripted(), tmp_path)
    assert not fresh.complete(req()).cached
    assert fresh.complete(req()).cached
    assert cache_stats(tmp_path).temp_files == 1
    assert prune_cache(tmp_path, model="nothing").temp_files_removed == 1
    assert not stray.exists()


def test_corrupt_entry_read_only_raises_read_write_replaces(tmp_path: Path) -> None:
    cached = CachedBackend(scripted(), tmp_path)
    cached.complete(req())
    path = entry_path(tmp_path, cached.key_for(req()))
    path.write_text('{"completion": ', encoding="utf-8")
    with pytest.raises(CacheCorruptError, match=str(path.name)):
        CachedBackend(scripted(), tmp_path, CacheMode.READ_ONLY).complete(req())
    assert not cached.complete(req()).cached
    assert json.loads(path.read_text(encoding="utf-8"))["completion"]["text"]


def test_concurrent_writers_leave_valid_entries(tmp_path: Path) -> None:
    cached = CachedBackend(scripted(), tmp_path)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(20):
                cached.complete(req(f"message {j % 5}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    stats = cache_stats(tmp_path)
    assert stats.entries == 5 and stats.corrupt_files == [] and stats.temp_files == 0


def test_no_secret_in_cache_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_key = "sk-fake-SECRET-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", fake_key)
    # Even a reply echoing the key must not leak it into a committed file.
    with FakeServer([(200, {}, chat_body(f"echo {fake_key}"), 0.0)]) as server:
        backend = OpenAICompatibleBackend(
            "fake-model", base_url=server.base_url, retry=RetryPolicy(max_attempts=1)
        )
        cached = CachedBackend(backend, tmp_path / "cache")
        with allow_model_requests():
            cached.complete(req())
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {fake_key}"
    files = list((tmp_path / "cache").rglob("*"))
    assert any(f.suffix == ".json" for f in files)
    for f in files:
        if f.is_file():
            text = f.read_text(encoding="utf-8")
            assert fake_key not in text and "Bearer" not in text
            assert "authorization" not in text.lower()


def _fill(tmp_path: Path) -> None:
    CachedBackend(ScriptedBackend(["a", "b"], model="m1"), tmp_path).complete(req("x"))
    CachedBackend(ScriptedBackend(["c"], model="m1"), tmp_path).complete(req("y"))
    CachedBackend(ScriptedBackend(["d"], model="m2"), tmp_path).complete(req("x"))


def test_stats_counts_by_backend_and_model(tmp_path: Path) -> None:
    _fill(tmp_path)
    stats = cache_stats(tmp_path)
    assert stats.entries == 3
    assert stats.bytes == sum(p.stat().st_size for p in tmp_path.rglob("*.json"))
    assert stats.by_backend == {"scripted": 3}
    assert stats.by_model == {"scripted:m1": 2, "scripted:m2": 1}
    assert stats.to_dict()["oldest"].endswith("Z")
    assert cache_stats(tmp_path / "missing").entries == 0


def test_prune_by_model_unused_since_and_age(tmp_path: Path) -> None:
    _fill(tmp_path)
    with pytest.raises(ValueError, match="criterion"):
        prune_cache(tmp_path)
    dry = prune_cache(tmp_path, model="m2", dry_run=True)
    assert len(dry.removed) == 1 and cache_stats(tmp_path).entries == 3
    assert len(prune_cache(tmp_path, model="m2").removed) == 1
    assert cache_stats(tmp_path).by_model == {"scripted:m1": 2}

    # Age every entry, then use one: only the other is "unused since".
    old = time.time() - 86400
    for p in tmp_path.rglob("*.json"):
        os.utime(p, (old, old))
    mark = datetime.now(UTC) - timedelta(seconds=5)
    hit = CachedBackend(ScriptedBackend(["never"], model="m1"), tmp_path).complete(req("x"))
    assert hit.cached
    result = prune_cache(tmp_path, unused_since=mark)
    assert len(result.removed) == 1 and result.kept == 1

    future = datetime.now(UTC) + timedelta(days=1)
    assert prune_cache(tmp_path, created_before=future - timedelta(days=2)).removed == []
    assert len(prune_cache(tmp_path, created_before=future).removed) == 1
    assert cache_stats(tmp_path).entries == 0
    assert not any(tmp_path.iterdir())  # empty shard directories are removed


def test_cli_stats_and_prune(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _fill(tmp_path)
    parser = argparse.ArgumentParser(prog="memlab")
    cache_cli.register(parser.add_subparsers())

    args = parser.parse_args(["cache", "stats", str(tmp_path), "--json"])
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out)["by_model"] == {"scripted:m1": 2, "scripted:m2": 1}

    args = parser.parse_args(["cache", "stats", str(tmp_path)])
    assert args.func(args) == 0
    assert "scripted:m1" in capsys.readouterr().out

    args = parser.parse_args(["cache", "prune", str(tmp_path)])
    assert args.func(args) == 2

    args = parser.parse_args(["cache", "prune", str(tmp_path), "--model", "m1", "--dry-run"])
    assert args.func(args) == 0
    assert "would remove 2 entries" in capsys.readouterr().out
    assert cache_stats(tmp_path).entries == 3

    args = parser.parse_args(["cache", "prune", str(tmp_path), "--older-than", "0s"])
    assert args.func(args) == 0
    assert cache_stats(tmp_path).entries == 0


def test_parse_when() -> None:
    now = datetime(2024, 5, 10, tzinfo=UTC)
    assert cache_cli.parse_when("7d", now=now) == datetime(2024, 5, 3, tzinfo=UTC)
    assert cache_cli.parse_when("90m", now=now) == now - timedelta(minutes=90)
    assert cache_cli.parse_when("2024-05-01") == datetime(2024, 5, 1, tzinfo=UTC)
    assert cache_cli.parse_when("2024-05-01T12:00:00Z").hour == 12
    with pytest.raises(argparse.ArgumentTypeError):
        cache_cli.parse_when("yesterday")
