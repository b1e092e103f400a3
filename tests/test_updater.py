"""MemoryUpdater end to end with the scripted backend and a real JSON file store."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memlab.backends.scripted import ScriptedBackend
from memlab.core.jsondoc.contract import MINIMAL_VALID_UPDATE
from memlab.core.jsondoc.document import SeededFactIds
from memlab.core.pipeline.config import MemoryConfig
from memlab.core.pipeline.llm import BackendError, CompletionRequest, OutputMode
from memlab.core.pipeline.storage import JsonFileStorage
from memlab.core.pipeline.updater import MemoryUpdater

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
MESSAGES = [
    {"role": "user", "content": "I just started a new job as a data engineer at Acme."},
    {"role": "assistant", "content": "Congratulations on the new role!"},
]


def reply(**changes: Any) -> str:
    data = json.loads(json.dumps(MINIMAL_VALID_UPDATE))
    data.update(changes)
    return json.dumps(data)


def make_updater(
    tmp_path: Path, replies: list[str], config: MemoryConfig | None = None, **kwargs: Any
) -> tuple[MemoryUpdater, ScriptedBackend, JsonFileStorage]:
    backend = ScriptedBackend(replies)
    storage = JsonFileStorage(tmp_path / "memory.json")
    cfg = config or MemoryConfig()
    updater = MemoryUpdater(
        backend=backend,
        storage=storage,
        config_provider=lambda: cfg,
        clock=lambda: NOW,
        fact_ids=SeededFactIds(1),
        **kwargs,
    )
    return updater, backend, storage


def test_successful_update_saves_facts_and_sections(tmp_path: Path) -> None:
    data = json.loads(reply())
    data["user"]["workContext"] = {"summary": "Data engineer at Acme.", "shouldUpdate": True}
    data["newFacts"] = [
        {
            "content": " Works as a data engineer at Acme ",
            "category": "context",
            "confidence": 0.95,
        },
        {"content": "Maybe likes tea", "category": "preference", "confidence": 0.5},
    ]
    updater, backend, _storage = make_updater(tmp_path, [json.dumps(data)])

    result = updater.run_update(MESSAGES, "thread-1")

    assert result.saved and result.error is None
    assert backend.call_count == 1
    assert "I just started a new job" in backend.prompts[0]
    stored = json.loads((tmp_path / "memory.json").read_text())
    assert [f["content"] for f in stored["facts"]] == ["Works as a data engineer at Acme"]
    assert stored["facts"][0]["source"] == "thread-1"
    assert stored["facts"][0]["createdAt"] == "2025-03-01T12:00:00Z"
    assert stored["user"]["workContext"]["summary"] == "Data engineer at Acme."
    assert result.facts_before == 0 and result.facts_after == 1
    record = result.to_record()
    assert record["n_added"] == 1 and record["n_skipped_below_threshold"] == 1
    assert record["parse"]["rung"] == "strict"
    json.dumps(record)  # serialisable


def test_parse_failure_writes_nothing_and_returns_false(tmp_path: Path) -> None:
    updater, _, _storage = make_updater(tmp_path, ["Sure! Here is the memory: {not json"])
    assert updater.update_memory(MESSAGES, "t") is False
    assert not (tmp_path / "memory.json").exists()
    result = make_updater(tmp_path, ["I cannot help with that."])[0].run_update(MESSAGES, "t")
    assert result.error_stage == "parse"
    assert result.parse is not None and result.parse.category is not None
    assert result.parse.category.value == "no_json"


def test_schema_violation_is_a_failure_not_no_facts(tmp_path: Path) -> None:
    data = json.loads(reply())
    data["newFacts"] = [{"content": "x", "category": "hobby", "confidence": 0.9}]
    updater, _, _ = make_updater(tmp_path, [json.dumps(data)])
    result = updater.run_update(MESSAGES, "t")
    assert not result.saved
    assert result.parse is not None and result.parse.category is not None
    assert result.parse.category.value == "schema_violation"
    assert any(v.pointer == "/newFacts/0/category" for v in result.parse.violations)
    assert not (tmp_path / "memory.json").exists()


def test_backend_error_is_reported(tmp_path: Path) -> None:
    def boom(request: CompletionRequest) -> str:
        raise BackendError("server unavailable")

    storage = JsonFileStorage(tmp_path / "memory.json")
    updater = MemoryUpdater(
        backend=ScriptedBackend(function=boom), storage=storage, config_provider=MemoryConfig
    )
    result = updater.run_update(MESSAGES, "t")
    assert result.error_stage == "backend" and "server unavailable" in (result.error or "")
    assert not result.saved


def test_disabled_config_short_circuits(tmp_path: Path) -> None:
    updater, backend, _ = make_updater(tmp_path, [reply()], MemoryConfig(enabled=False))
    result = updater.run_update(MESSAGES, "t")
    assert result.skipped == "disabled" and backend.call_count == 0


def test_empty_conversation_makes_no_call(tmp_path: Path) -> None:
    updater, backend, _ = make_updater(tmp_path, [reply()])
    only_tools = [{"role": "tool", "content": "x", "tool_call_id": "1"}]
    assert updater.update_memory(only_tools, "t") is False
    assert updater.update_memory([], "t") is False
    assert backend.call_count == 0


def test_config_changes_at_run_time_affect_next_update(tmp_path: Path) -> None:
    config = MemoryConfig(fact_confidence_threshold=0.9)
    data = json.loads(reply())
    data["newFacts"] = [{"content": "Likes jazz", "category": "preference", "confidence": 0.8}]
    updater, _, _storage = make_updater(tmp_path, [json.dumps(data)] * 2)
    holder = {"config": config}
    updater._config_provider = lambda: holder["config"]
    assert updater.run_update(MESSAGES, "t").facts_after == 0
    holder["config"] = MemoryConfig(fact_confidence_threshold=0.8)
    assert updater.run_update(MESSAGES, "t").facts_after == 1


@pytest.mark.parametrize("mode", list(OutputMode))
def test_schema_sent_only_in_schema_mode(tmp_path: Path, mode: OutputMode) -> None:
    updater, backend, _ = make_updater(tmp_path, [reply()], output_mode=mode)
    assert updater.update_memory(MESSAGES, "t")
    request = backend.requests[0]
    assert request.mode is mode
    assert (request.schema is not None) == (mode is OutputMode.JSON_SCHEMA)


def test_removal_and_prompt_carries_current_memory(tmp_path: Path) -> None:
    first = json.loads(reply())
    first["newFacts"] = [{"content": "Lives in Paris", "category": "context", "confidence": 0.9}]
    updater, _backend, storage = make_updater(tmp_path, [json.dumps(first)])
    assert updater.update_memory(MESSAGES, "t")
    fact_id = storage.load()["facts"][0]["id"]
    second = json.loads(reply())
    second["factsToRemove"] = [fact_id]
    second["newFacts"] = [{"content": "Lives in Lyon", "category": "correction", "confidence": 0.9}]
    updater2 = MemoryUpdater(
        backend=ScriptedBackend([json.dumps(second)]),
        storage=storage,
        config_provider=MemoryConfig,
        clock=lambda: NOW,
    )
    result = updater2.run_update(MESSAGES, "t2")
    assert result.saved
    assert fact_id in result.prompt  # current memory is injected into the prompt
    assert [f["content"] for f in storage.load()["facts"]] == ["Lives in Lyon"]


def test_result_holds_copies_not_the_stored_document(tmp_path: Path) -> None:
    data = json.loads(reply())
    data["newFacts"] = [{"content": "Likes tea", "category": "preference", "confidence": 0.9}]
    updater, _backend, storage = make_updater(tmp_path, [json.dumps(data)])
    result = updater.run_update(MESSAGES, "thread-1")
    assert result.saved and result.applied is not None
    assert result.applied.memory == storage.load()  # the saved document, stamped
    # Changing what the result reports must not reach the store or its cache.
    result.applied.memory["facts"][0]["content"] = "changed"
    result.applied.added[0]["content"] = "changed too"
    assert [f["content"] for f in storage.load()["facts"]] == ["Likes tea"]


def test_a_strategy_that_overrides_apply_is_used(tmp_path: Path) -> None:
    from memlab.core.jsondoc.merge import ApplyResult, BaselineMerge

    class Tagging(BaselineMerge):
        name = "tagging"

        def apply(self, current_memory: dict[str, Any], update: Any, **kwargs: Any) -> ApplyResult:
            result = super().apply(current_memory, update, **kwargs)
            for fact in result.added:
                fact["content"] += " [tagged]"
            return result

    data = json.loads(reply())
    data["newFacts"] = [{"content": "Likes tea", "category": "preference", "confidence": 0.9}]
    updater, _backend, storage = make_updater(tmp_path, [json.dumps(data)], merge=Tagging())
    assert updater.run_update(MESSAGES, "thread-1").saved
    assert [f["content"] for f in storage.load()["facts"]] == ["Likes tea [tagged]"]
