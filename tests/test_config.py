"""MemoryConfig validation, YAML loading, storage paths and the global accessors."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from builders import update
from pydantic import ValidationError

from memlab.backends.scripted import ScriptedBackend
from memlab.core.base.clock import VirtualScheduler
from memlab.core.jsondoc.document import SeededFactIds
from memlab.core.pipeline.config import (
    ConfigError,
    MemoryConfig,
    get_memory_config,
    memlab_home,
    reset_memory_config,
    resolve_storage_path,
    set_memory_config,
)
from memlab.core.pipeline.middleware import MemoryMiddleware
from memlab.core.pipeline.queue import ConversationContext, MemoryUpdateQueue
from memlab.core.pipeline.storage import InMemoryStorage
from memlab.core.pipeline.updater import MemoryUpdater, UpdateResult

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
CONVERSATION = [
    {"role": "user", "content": "I work at Acme."},
    {"role": "assistant", "content": "Nice."},
]


@pytest.fixture(autouse=True)
def _fresh_global_config() -> Iterator[None]:
    reset_memory_config()
    yield
    reset_memory_config()


def test_defaults_match_spec() -> None:
    config = MemoryConfig()
    assert config.model_dump() == {
        "enabled": True,
        "storage_path": "",
        "debounce_seconds": 30,
        "model_name": None,
        "max_facts": 100,
        "fact_confidence_threshold": 0.7,
        "injection_enabled": True,
        "max_injection_tokens": 2000,
        "token_counting": "tiktoken",
    }


RANGE_EDGES = [
    ("debounce_seconds", 1, 300),
    ("max_facts", 10, 500),
    ("fact_confidence_threshold", 0.0, 1.0),
    ("max_injection_tokens", 100, 8000),
]


@pytest.mark.parametrize(("field", "low", "high"), RANGE_EDGES)
def test_range_edges_are_inclusive(field: str, low: float, high: float) -> None:
    assert getattr(MemoryConfig.from_mapping({field: low}), field) == low
    assert getattr(MemoryConfig.from_mapping({field: high}), field) == high


@pytest.mark.parametrize(("field", "low", "high"), RANGE_EDGES)
def test_values_just_outside_range_are_rejected(field: str, low: float, high: float) -> None:
    step = 0.01 if isinstance(low, float) else 1
    with pytest.raises(ConfigError) as below:
        MemoryConfig.from_mapping({field: low - step})
    assert f"field '{field}': must be >= {low}" in str(below.value)
    with pytest.raises(ConfigError) as above:
        MemoryConfig.from_mapping({field: high + step})
    assert f"field '{field}': must be <= {high}" in str(above.value)


def test_error_names_source_field_rule_and_value() -> None:
    with pytest.raises(ConfigError) as exc:
        MemoryConfig.from_mapping({"max_facts": 5}, source="memory.yaml")
    assert "memory.yaml: field 'max_facts': must be >= 10 (got 5)" in str(exc.value)
    assert exc.value.source == "memory.yaml"
    assert isinstance(exc.value, ValueError)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"debounce_seconds": 2.5}, "field 'debounce_seconds': must be a whole number"),
        ({"debounce_seconds": "30"}, "field 'debounce_seconds': must be a whole number"),
        ({"max_facts": True}, "field 'max_facts': must be a whole number"),
        ({"fact_confidence_threshold": "high"}, "field 'fact_confidence_threshold': must be a"),
        ({"fact_confidence_threshold": float("nan")}, "must be a finite number"),
        ({"enabled": "sometimes"}, "field 'enabled': must be true or false"),
        ({"token_counting": "bpe"}, "field 'token_counting': must be one of 'tiktoken' or 'char'"),
        ({"storage_path": 3}, "field 'storage_path': must be a string"),
        ({"max_fact": 50}, "field 'max_fact': unknown field; allowed fields: enabled"),
    ],
)
def test_bad_values_are_explained(data: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as exc:
        MemoryConfig.from_mapping(data)
    assert expected in str(exc.value)
    assert "<dict>" in str(exc.value)


def test_every_bad_field_is_reported() -> None:
    with pytest.raises(ConfigError) as exc:
        MemoryConfig.from_mapping({"max_facts": 1, "debounce_seconds": 0, "surprise": 1})
    assert len(exc.value.problems) == 3
    text = str(exc.value)
    for name in ("max_facts", "debounce_seconds", "surprise"):
        assert f"field '{name}'" in text


def test_non_mapping_is_rejected() -> None:
    with pytest.raises(ConfigError, match="expected a mapping"):
        MemoryConfig.from_mapping([1, 2])  # type: ignore[arg-type]


def test_yaml_top_level_fields(tmp_path: Path) -> None:
    path = tmp_path / "memory.yaml"
    path.write_text("debounce_seconds: 5\nmax_facts: 120\ntoken_counting: char\n", "utf-8")
    config = MemoryConfig.from_yaml(path)
    assert (config.debounce_seconds, config.max_facts, config.token_counting) == (5, 120, "char")
    assert config.enabled is True


def test_yaml_memory_section_ignores_other_keys(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "models:\n  - name: x\nmemory:\n  enabled: false\n  storage_path: memory.json\n"
        "  fact_confidence_threshold: 0.75\n",
        "utf-8",
    )
    config = MemoryConfig.from_yaml(path)
    assert config.enabled is False
    assert config.storage_path == "memory.json"
    assert config.fact_confidence_threshold == 0.75


@pytest.mark.parametrize("text", ["", "memory:\n", "# only a comment\n"])
def test_empty_yaml_gives_defaults(tmp_path: Path, text: str) -> None:
    path = tmp_path / "memory.yaml"
    path.write_text(text, "utf-8")
    assert MemoryConfig.from_yaml(path) == MemoryConfig()


def test_yaml_error_names_file_field_and_line(tmp_path: Path) -> None:
    path = tmp_path / "memory.yaml"
    path.write_text("memory:\n  enabled: true\n  max_facts: 5\n", "utf-8")
    with pytest.raises(ConfigError) as exc:
        MemoryConfig.from_yaml(path)
    message = str(exc.value)
    assert f"{path}: field 'max_facts': must be >= 10 (got 5) [line 3]" in message


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "memory.yaml"
    path.write_text("max_facts: 20\n  bad: [\n", "utf-8")
    with pytest.raises(ConfigError) as exc:
        MemoryConfig.from_yaml(path)
    assert str(path) in str(exc.value)
    assert "not valid YAML" in str(exc.value)
    assert "(line 2, column" in str(exc.value)


def test_yaml_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "memory.yaml"
    path.write_text("- 1\n- 2\n", "utf-8")
    with pytest.raises(ConfigError, match="expected a mapping of memory settings, got list"):
        MemoryConfig.from_yaml(path)


def test_missing_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(ConfigError, match="cannot read config file"):
        MemoryConfig.from_yaml(path)


def test_assignment_is_validated() -> None:
    config = MemoryConfig()
    config.max_facts = 200
    assert config.max_facts == 200
    with pytest.raises(ValidationError):
        config.max_facts = 5
    assert config.max_facts == 200


def test_memlab_home_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMLAB_HOME", str(tmp_path / "home"))
    assert memlab_home() == tmp_path / "home"
    monkeypatch.delenv("MEMLAB_HOME")
    assert memlab_home() == Path.home() / ".memlab"


def test_storage_path_rules(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert resolve_storage_path(MemoryConfig(), home) == home / "memory.json"
    relative = MemoryConfig(storage_path="data/mem.json")
    assert resolve_storage_path(relative, home) == home / "data" / "mem.json"
    absolute = MemoryConfig(storage_path=str(tmp_path / "elsewhere.json"))
    assert resolve_storage_path(absolute, home) == tmp_path / "elsewhere.json"


def test_storage_path_defaults_to_memlab_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MEMLAB_HOME", str(tmp_path))
    assert resolve_storage_path(MemoryConfig()) == tmp_path / "memory.json"
    assert resolve_storage_path(MemoryConfig(storage_path="m.json")) == tmp_path / "m.json"


def test_global_config_defaults_and_replacement() -> None:
    assert get_memory_config() == MemoryConfig()
    assert get_memory_config() is get_memory_config()
    custom = MemoryConfig(max_facts=42)
    set_memory_config(custom)
    assert get_memory_config() is custom
    reset_memory_config()
    assert get_memory_config().max_facts == 100


def test_set_memory_config_rejects_other_types() -> None:
    with pytest.raises(TypeError, match="MemoryConfig"):
        set_memory_config({"enabled": False})  # type: ignore[arg-type]


def test_runtime_changes_reach_the_middleware_queue_and_updater(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The real components, wired to the global config only, follow changes made at run time."""
    monkeypatch.setenv("MEMLAB_HOME", str(tmp_path))
    scheduler = VirtualScheduler(T0)
    backend = ScriptedBackend([update("Works at Acme")], repeat_last=True)
    updater = MemoryUpdater(backend=backend, fact_ids=SeededFactIds(1), clock=scheduler.now)
    results: list[UpdateResult] = []

    def process(context: ConversationContext) -> bool:
        results.append(updater.run_update(context.messages, context.thread_id))
        return results[-1].saved

    queue = MemoryUpdateQueue(process, scheduler=scheduler)  # default config provider
    middleware = MemoryMiddleware(queue_provider=lambda: queue)  # default config provider
    state = {"messages": CONVERSATION}
    runtime = {"context": {"thread_id": "t-1"}}

    set_memory_config(MemoryConfig(enabled=False))
    middleware.after_agent(state, runtime)
    assert queue.pending_count == 0  # the middleware read enabled=False

    get_memory_config().enabled = True  # in-place change of the active config
    get_memory_config().debounce_seconds = 5
    middleware.after_agent(state, runtime)
    assert queue.pending_count == 1
    scheduler.advance(5)  # the queue read the new debounce (default 30 s)
    assert [r.saved for r in results] == [True]
    assert json.loads((tmp_path / "memory.json").read_text())["facts"][0]["content"] == (
        "Works at Acme"
    )

    get_memory_config().fact_confidence_threshold = 0.95  # above the reply's 0.9
    get_memory_config().storage_path = "other.json"
    queue.add("t-2", CONVERSATION)
    queue.flush()
    assert results[-1].saved and results[-1].applied is not None
    assert results[-1].applied.skipped_below_threshold[0]["content"] == "Works at Acme"
    assert json.loads((tmp_path / "other.json").read_text())["facts"] == []

    get_memory_config().enabled = False
    assert updater.run_update(CONVERSATION, "t-3").skipped == "disabled"
    assert backend.call_count == 2


def test_model_name_reaches_the_request() -> None:
    backend = ScriptedBackend([update()], repeat_last=True)
    config = MemoryConfig()
    updater = MemoryUpdater(
        backend=backend,
        storage=InMemoryStorage(),
        config_provider=lambda: config,
        model_name="updater-default",
    )
    assert updater.update_memory(CONVERSATION, "t")
    config.model_name = "from-config"  # the config wins over the updater's own default
    assert updater.update_memory(CONVERSATION, "t")
    assert [r.model for r in backend.requests] == ["updater-default", "from-config"]
    assert updater.run_update(CONVERSATION, "t").completion.model == "from-config"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("storage_path", "expected"),
    [("", "home/memory.json"), ("data/mem.json", "home/data/mem.json"), ("ABS", "abs.json")],
)
def test_updater_saves_at_the_resolved_storage_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, storage_path: str, expected: str
) -> None:
    monkeypatch.setenv("MEMLAB_HOME", str(tmp_path / "home"))
    if storage_path == "ABS":
        storage_path = str(tmp_path / "abs.json")
    config = MemoryConfig(storage_path=storage_path)
    updater = MemoryUpdater(
        backend=ScriptedBackend([update("Likes tea")]), config_provider=lambda: config
    )
    assert updater.update_memory(CONVERSATION, "t")
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json"))
    assert written == [expected]
    assert json.loads((tmp_path / expected).read_text())["facts"][0]["content"] == "Likes tea"


def test_concurrent_first_access_creates_one_config() -> None:
    seen: list[MemoryConfig] = []
    barrier = threading.Barrier(8)

    def grab() -> None:
        barrier.wait()
        seen.append(get_memory_config())

    threads = [threading.Thread(target=grab) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(config) for config in seen}) == 1


@pytest.mark.parametrize(
    ("field", "low", "high"), [e for e in RANGE_EDGES if e[0] != "max_injection_tokens"]
)
def test_lane_configs_share_the_config_ranges(field: str, low: float, high: float) -> None:
    """A sweep lane accepts exactly the values the pipeline's config accepts."""
    from memlab.grids.lane import LaneConfig

    step = 0.01 if isinstance(low, float) else 1
    for value in (low, high):
        assert getattr(LaneConfig.model_validate({field: value}), field) == value
    for value in (low - step, high + step):
        with pytest.raises(ValidationError):
            LaneConfig.model_validate({field: value})
