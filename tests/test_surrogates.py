"""Text UTF-8 cannot encode (lone surrogates) is replaced where it enters and counted; no
writer fails on it, and a run or QA step whose model replies with one completes.

The end-to-end tests drive the CLI against :class:`fake_openai.FakeServer`, a loopback
OpenAI-compatible server (an instrument, not a model) whose replies hold a lone surrogate,
once as a character of the reply (the server's JSON says ``\\ud800``) and once as a JSON
escape inside the reply's own JSON (which the parse ladder would decode into one).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeServer, update_with

from memlab.backends.caching.cache import CachedBackend, CacheMode, entry_path
from memlab.backends.scripted import ScriptedBackend
from memlab.cli.main import main
from memlab.core.base.safe_text import REPLACEMENT, safe_json, safe_text
from memlab.core.base.yamlio import parse_yaml
from memlab.core.pipeline.config import MemoryConfig
from memlab.core.pipeline.llm import (
    BackendError,
    Completion,
    CompletionRequest,
    allow_model_requests,
)
from memlab.core.pipeline.storage import JsonFileStorage
from memlab.core.pipeline.updater import MemoryUpdater
from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset

LONE = "\ud800"
FACT = f"Likes {LONE} tea"
SAFE_FACT = f"Likes {REPLACEMENT} tea"


# --- the helper ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected", "count"),
    [
        ("plain", "plain", 0),
        ("caf\u00e9 \U0001f600", "caf\u00e9 \U0001f600", 0),
        (f"a{LONE}b\udfff", f"a{REPLACEMENT}b{REPLACEMENT}", 2),
        # Two surrogate code points in a row are not a character in a Python string either.
        ("\ud83d\ude00", REPLACEMENT * 2, 2),
    ],
)
def test_safe_text_replaces_each_surrogate(text: str, expected: str, count: int) -> None:
    assert safe_text(text) == (expected, count)
    expected.encode("utf-8")  # what it gives is writable


@pytest.mark.parametrize(
    ("text", "expected", "count"),
    [
        (r'{"a": "\ud800"}', r'{"a": "\ufffd"}', 1),
        (r'{"a": "\uDC00x"}', r'{"a": "\ufffdx"}', 1),
        (r'"\ud83d\ude00"', r'"\ud83d\ude00"', 0),  # a pair: one real character
        (r'"\ud800\ud83d\ude00"', r'"\ufffd\ud83d\ude00"', 1),
        (r'"\\ud800"', r'"\\ud800"', 0),  # an escaped backslash: the text \ud800, harmless
        (r'"\\\ud800"', r'"\\\ufffd"', 1),
        (r'"\u00e9"', r'"\u00e9"', 0),
    ],
)
def test_safe_text_replaces_json_escapes_of_lone_surrogates(
    text: str, expected: str, count: int
) -> None:
    assert safe_text(text, json_escapes=True) == (expected, count)
    json.dumps(json.loads(expected), ensure_ascii=False).encode("utf-8")
    assert safe_text(text) == (text, 0)  # without json_escapes the text is left alone


def test_safe_text_and_safe_json_return_normal_input_itself() -> None:
    text = "caf\u00e9 " * 10
    assert safe_text(text, json_escapes=True)[0] is text
    value = {"a": [text, {"b": 1}], "c": None}
    assert safe_json(value) == (value, 0) and safe_json(value)[0] is value


def test_safe_json_replaces_keys_and_nested_values() -> None:
    value = {f"k{LONE}": [1, {"b": f"x{LONE}y"}, [LONE]], "ok": "fine"}
    safe, count = safe_json(value)
    assert count == 3
    assert safe == {f"k{REPLACEMENT}": [1, {"b": f"x{REPLACEMENT}y"}, [REPLACEMENT]], "ok": "fine"}
    json.dumps(safe, ensure_ascii=False).encode("utf-8")


# --- where text enters ----------------------------------------------------------------------


def test_a_completion_is_made_safe_and_counts_what_it_replaced() -> None:
    completion = Completion(text=f"{LONE} and \\udfff")
    assert completion.text == f"{REPLACEMENT} and \\ufffd"
    assert completion.replaced_chars == 2
    assert completion.to_dict()["replaced_chars"] == 2
    # A normal reply's dict is what it always was (cache entries keep their bytes).
    assert "replaced_chars" not in Completion(text="fine").to_dict()


def test_the_cache_keeps_the_count_and_makes_an_older_entry_safe(tmp_path: Path) -> None:
    request = CompletionRequest(messages=[{"role": "user", "content": "hi"}])
    backend = ScriptedBackend([json.dumps(update_with(FACT), ensure_ascii=False)])
    cache = CachedBackend(backend, tmp_path / "cache")
    first = cache.complete(request)
    hit = CachedBackend(backend, tmp_path / "cache", CacheMode.READ_ONLY).complete(request)
    assert first.replaced_chars == hit.replaced_chars == 1
    assert hit.cached and hit.text == first.text and SAFE_FACT in hit.text
    # An entry written by hand (or by an older memlab) with the escape of a lone surrogate.
    path = entry_path(tmp_path / "cache", cache.key_for(request))
    entry = json.loads(path.read_text(encoding="utf-8"))
    entry["completion"] = {"text": f"old {LONE}"}
    path.write_text(json.dumps(entry, ensure_ascii=True), encoding="utf-8")
    old = CachedBackend(backend, tmp_path / "cache", CacheMode.READ_ONLY).complete(request)
    assert (old.text, old.replaced_chars) == (f"old {REPLACEMENT}", 1)


def test_a_servers_error_text_becomes_the_updates_writable_failure(tmp_path: Path) -> None:
    def boom(request: CompletionRequest) -> str:
        raise BackendError(f"server says {LONE}")

    updater = MemoryUpdater(
        backend=ScriptedBackend(function=boom),
        storage=JsonFileStorage(tmp_path / "memory.json"),
        config_provider=MemoryConfig,
    )
    result = updater.run_update([{"role": "user", "content": "hello"}], "t")
    assert result.error_stage == "backend" and result.error == f"server says {REPLACEMENT}"
    json.dumps(result.to_record(), ensure_ascii=False).encode("utf-8")


def test_yaml_escapes_of_lone_surrogates_are_replaced_and_counted() -> None:
    document = parse_yaml('name: "a\\ud800b"\nitems: ["\\udc00"]\n', "p.yaml")
    assert document.data == {"name": f"a{REPLACEMENT}b", "items": [REPLACEMENT]}
    assert document.replaced_chars == 2


# --- end to end: the CLI against a loopback server ------------------------------------------


def _raw(body: dict[str, Any]) -> str:
    """A reply holding the lone surrogate itself (the server's JSON escapes it)."""
    return json.dumps(update_with(FACT), ensure_ascii=False)


def _escaped(body: dict[str, Any]) -> str:
    """A reply whose own JSON spells the lone surrogate as an escape."""
    return json.dumps(update_with(FACT), ensure_ascii=True)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., FakeServer]]:
    started: list[FakeServer] = []

    def start(reply: Callable[[dict[str, Any]], str]) -> FakeServer:
        fake = FakeServer(reply=reply).__enter__()
        started.append(fake)
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        return fake

    with allow_model_requests():
        yield start
    for fake in started:
        fake.__exit__()


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("reply", [_raw, _escaped], ids=["raw", "escaped"])
def test_a_run_whose_replies_hold_a_lone_surrogate_completes_and_is_scored(
    reply: Callable[[dict[str, Any]], str],
    server: Callable[..., FakeServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    fake = server(reply)
    args = ["run", "smoke", "--backend", "openai:fake-model", "--cache-dir", "cache"]
    assert main([*args, "--no-progress"]) == 0
    run = tmp_path / "runs" / "run"
    assert json.loads((run / "manifest.json").read_text(encoding="utf-8"))["complete"] is True
    calls = _rows(run / "calls.jsonl")
    replied = [c for c in calls if c["reply"] is not None]
    # Every request the server answered is recorded, saved, its one surrogate counted.
    assert len(replied) == len(fake.requests) > 0
    assert all(c["saved"] and c["error"] is None for c in replied)
    assert all(c["replaced_chars"] == 1 for c in replied)
    stores = [p.read_text(encoding="utf-8") for p in run.glob("lanes/*/stores/*.json")]
    assert stores and all(SAFE_FACT in text for text in stores)
    # Every session of the dataset is scored.
    owners = load_dataset(resolve_dataset("smoke"))
    assert len(_rows(run / "sessions.jsonl")) == sum(len(o.sessions) for o in owners)
    # The cache holds the replies: a read-only rerun without the server gives the same counts.
    fake.__exit__()
    again = [*args, "--cache-mode", "read_only", "--name", "again", "--no-progress"]
    assert main(again) == 0
    cached = [c for c in _rows(tmp_path / "runs" / "again" / "calls.jsonl") if c["reply"]]
    assert [c["replaced_chars"] for c in cached] == [1] * len(replied)
    assert all(c["cached"] for c in cached)


def test_a_dataset_line_with_a_lone_surrogate_runs_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    line = json.loads(resolve_dataset("smoke").read_text(encoding="utf-8").splitlines()[0])
    line["sessions"][0]["messages"][0]["content"] += f" caf{LONE}"
    Path("d.jsonl").write_text(json.dumps(line, ensure_ascii=True) + "\n", encoding="utf-8")
    (owner,) = load_dataset("d.jsonl")
    assert owner.sessions[0].messages[0].text.endswith(f" caf{REPLACEMENT}")
    args = ["run", "d.jsonl", "--backend", "scripted", "--cache-dir", "c", "--no-progress"]
    with caplog.at_level(logging.WARNING):
        assert main(args) == 0
    assert "d.jsonl:1: 1 character(s) UTF-8 cannot encode" in caplog.text
    assert json.loads(Path("runs/run/manifest.json").read_text(encoding="utf-8"))["complete"]


def test_qa_answers_and_verdicts_holding_a_lone_surrogate_are_recorded(
    server: Callable[..., FakeServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run = ["run", "personas", "--backend", "sim:careful", "--max-owners", "1", "--no-progress"]
    assert main(run) == 0

    def reply(body: dict[str, Any]) -> str:
        prompt = "\n".join(str(m.get("content", "")) for m in body["messages"])
        if "CORRECT" in prompt:  # a judge prompt
            return f'{{"label": "CORRECT", "why": "{LONE}"}}'
        return f"caf{LONE}"

    server(reply)
    qa = ["qa", "runs/run", "--answer-backend", "openai:fake-model", "--judge-backend"]
    qa += ["openai:fake-model", "--conditions", "memory", "--cache-dir", "cache", "--no-progress"]
    assert main(qa) == 0
    answers = _rows(Path("runs/run/qa/answers.jsonl"))
    assert answers and all(a["answer"] == f"caf{REPLACEMENT}" for a in answers)
    assert all(a["replaced_chars"] == 1 for a in answers)  # the answer's own count
    assert all(a["error"] is None and a["judge_errors"] == 0 for a in answers)
