"""Dataset format: bundled sets validate; invalid inputs are reported by line and field."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memlab.core.jsondoc.contract import FACT_CATEGORIES, SECTION_NAMES
from memlab.datasets.loader import (
    DatasetError,
    DatasetValidationError,
    dataset_schema,
    dataset_stats,
    format_stats,
    iter_dataset,
    load_dataset,
    validate_dataset,
    write_dataset,
)
from memlab.datasets.models import TAG_NAMES, Message, Owner
from memlab.datasets.registry import (
    DATASETS_ENV,
    DatasetNotFoundError,
    bundled_dataset_path,
    resolve_dataset,
)

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "datasets" / "smoke.jsonl"
PERSONAS = REPO / "datasets" / "personas.jsonl"


def _owner(user_id: str = "u1") -> dict[str, Any]:
    """A valid owner with two sessions (tool call in the first, a retraction in the second)."""
    return {
        "user_id": user_id,
        "sessions": [
            {
                "thread_id": "t1",
                "started_at": "2025-01-01T10:00:00Z",
                "messages": [
                    {
                        "role": "human",
                        "content": "I live in Oslo.",
                        "timestamp": "2025-01-01T10:00:00Z",
                    },
                    {
                        "role": "ai",
                        "content": "",
                        "timestamp": "2025-01-01T10:00:05Z",
                        "tool_calls": [{"id": "c1", "name": "weather", "args": {"city": "Oslo"}}],
                    },
                    {
                        "role": "tool",
                        "content": "-3 C",
                        "timestamp": "2025-01-01T10:00:06Z",
                        "tool_call_id": "c1",
                    },
                    {
                        "role": "ai",
                        "content": "It is -3 C in Oslo.",
                        "timestamp": "2025-01-01T10:00:09Z",
                    },
                ],
                "labels": {
                    "facts": [{"id": "g1", "content": "Lives in Oslo", "category": "context"}],
                    "tags": ["tool_calls"],
                },
            },
            {
                "thread_id": "t2",
                "started_at": "2025-01-02T10:00:00+01:00",
                "messages": [
                    {
                        "role": "human",
                        "content": "I moved to Bergen.",
                        "timestamp": "2025-01-02T10:00:00+01:00",
                    },
                    {"role": "ai", "content": "Noted!", "timestamp": "2025-01-02T10:00:03+01:00"},
                ],
                "labels": {
                    "facts": [{"id": "g2", "content": "Lives in Bergen", "category": "correction"}],
                    "retracts": ["g1"],
                    "tags": ["retraction"],
                },
            },
        ],
    }


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _mutated(mutate: Callable[[dict[str, Any]], Any]) -> str:
    obj = _owner("u2")
    mutate(obj)
    return _dump(obj)


def _msgs(obj: dict[str, Any], i: int = 0) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = obj["sessions"][i]["messages"]
    return messages


def _set_image_without_url(o: dict[str, Any]) -> None:
    _msgs(o)[0]["content"] = [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {}, "caption": "a cat"},
    ]


def _add_upload_tag(o: dict[str, Any]) -> None:
    o["sessions"][0]["labels"]["tags"].append("upload")


def _delete(key: str) -> Callable[[dict[str, Any]], None]:
    def run(o: dict[str, Any]) -> None:
        del o["sessions"][0][key]

    return run


# (name, second line of the file, expected field path) -- the first line is always valid,
# so every error must be reported on line 2.
INVALID_CASES: list[tuple[str, str, str]] = [
    ("bad json", '{"user_id": "u2", "sessions": [}', ""),
    ("not an object", "[1, 2]", ""),
    ("missing user_id", _mutated(lambda o: o.pop("user_id")), "user_id"),
    ("missing started_at", _mutated(_delete("started_at")), "sessions[0].started_at"),
    ("empty sessions", _mutated(lambda o: o.update(sessions=[])), "sessions"),
    (
        "wrong role",
        _mutated(lambda o: _msgs(o)[3].update(role="bot")),
        "sessions[0].messages[3].role",
    ),
    (
        "timestamp without timezone",
        _mutated(lambda o: _msgs(o)[1].update(timestamp="2025-01-01T10:00:05")),
        "sessions[0].messages[1].timestamp",
    ),
    (
        "impossible date",
        _mutated(lambda o: o["sessions"][1].update(started_at="2025-02-30T10:00:00Z")),
        "sessions[1].started_at",
    ),
    (
        "non-monotonic timestamps",
        _mutated(lambda o: _msgs(o)[3].update(timestamp="2025-01-01T10:00:01Z")),
        "sessions[0].messages[3].timestamp",
    ),
    (
        "first message before started_at",
        _mutated(lambda o: _msgs(o, 1)[0].update(timestamp="2025-01-02T09:59:00+01:00")),
        "sessions[1].messages[0].timestamp",
    ),
    (
        "overlapping sessions",
        _mutated(lambda o: o["sessions"][1].update(started_at="2025-01-01T10:00:07Z")),
        "sessions[1].started_at",
    ),
    (
        "duplicate thread ids",
        _mutated(lambda o: o["sessions"][1].update(thread_id="t1")),
        "sessions[1].thread_id",
    ),
    (
        "duplicate gold ids",
        _mutated(lambda o: o["sessions"][1]["labels"]["facts"][0].update(id="g1")),
        "sessions[1].labels.facts[0].id",
    ),
    (
        "retract of an unknown gold id",
        _mutated(lambda o: o["sessions"][1]["labels"].update(retracts=["nope"])),
        "sessions[1].labels.retracts[0]",
    ),
    (
        "retract of a later gold id",
        _mutated(lambda o: o["sessions"][0]["labels"].update(retracts=["g2"])),
        "sessions[0].labels.retracts[0]",
    ),
    (
        "tool message without matching call",
        _mutated(lambda o: _msgs(o)[2].update(tool_call_id="c9")),
        "sessions[0].messages[2].tool_call_id",
    ),
    (
        "tool message without tool_call_id",
        _mutated(lambda o: _msgs(o)[2].pop("tool_call_id")),
        "sessions[0].messages[2].tool_call_id",
    ),
    (
        "tool_calls on a human message",
        _mutated(lambda o: _msgs(o)[0].update(tool_calls=[])),
        "sessions[0].messages[0].tool_calls",
    ),
    (
        "unknown fact category",
        _mutated(lambda o: o["sessions"][0]["labels"]["facts"][0].update(category="hobby")),
        "sessions[0].labels.facts[0].category",
    ),
    (
        "noise session with facts",
        _mutated(lambda o: o["sessions"][0]["labels"].update(noise=True)),
        "sessions[0].labels.noise",
    ),
    ("tag not backed by content", _mutated(_add_upload_tag), "sessions[0].labels.tags[1]"),
    (
        "unknown field (typo)",
        _mutated(lambda o: o["sessions"][0].update(lables={})),
        "sessions[0].lables",
    ),
    ("missing labels", _mutated(_delete("labels")), "sessions[0].labels"),
    (
        "image part without url",
        _mutated(_set_image_without_url),
        "sessions[0].messages[0].content[1].image_url.url",
    ),
    (
        "unknown part type",
        _mutated(lambda o: _msgs(o)[0].update(content=[{"type": "video", "text": "x"}])),
        "sessions[0].messages[0].content[0].type",
    ),
    ("duplicate user id", _dump(_owner("u1")), "user_id"),
    ("blank line", "   ", ""),
]


def test_reference_owner_is_valid(tmp_path: Path) -> None:
    owners = load_dataset(_write(tmp_path, [_dump(_owner())]))
    assert [s.thread_id for s in owners[0].sessions] == ["t1", "t2"]


@pytest.mark.parametrize(
    ("name", "line", "field"), INVALID_CASES, ids=[c[0] for c in INVALID_CASES]
)
def test_invalid_input_names_line_and_field(
    tmp_path: Path, name: str, line: str, field: str
) -> None:
    path = _write(tmp_path, [_dump(_owner("u1")), line])
    errors = validate_dataset(path)
    assert errors, f"{name}: expected an error"
    assert {e.line for e in errors} == {2}
    assert field in [e.field for e in errors], [str(e) for e in errors]
    error = next(e for e in errors if e.field == field)
    prefix = f"{path}:2: {field}: " if field else f"{path}:2: "
    assert str(error).startswith(prefix)
    assert error.message
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert info.value.line == 2


def test_at_least_twelve_invalid_cases() -> None:
    assert len(INVALID_CASES) >= 12


def test_json_error_has_column(tmp_path: Path) -> None:
    path = _write(tmp_path, ['{"user_id": "u2",, }'])
    (error,) = validate_dataset(path)
    assert error.column == 18
    assert "column 18" in str(error)


def test_collect_reports_every_line(tmp_path: Path) -> None:
    bad_role = _mutated(lambda o: _msgs(o)[3].update(role="bot"))
    path = _write(tmp_path, ["{", _dump(_owner("u1")), bad_role, "nope"])
    with pytest.raises(DatasetValidationError) as info:
        load_dataset(path, collect=True)
    assert [e.line for e in info.value.errors] == [1, 3, 4]
    assert str(info.value).startswith("3 errors:")
    # Without collect the first bad line stops loading.
    with pytest.raises(DatasetValidationError) as first:
        load_dataset(path)
    assert [e.line for e in first.value.errors] == [1]


def test_iter_dataset_streams_until_first_error(tmp_path: Path) -> None:
    path = _write(tmp_path, [_dump(_owner("u1")), "{"])
    stream = iter_dataset(path)
    assert next(stream).user_id == "u1"
    with pytest.raises(DatasetError):
        next(stream)


def test_empty_and_missing_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert "empty" in validate_dataset(empty)[0].message
    missing = validate_dataset(tmp_path / "missing.jsonl")
    assert "cannot open" in missing[0].message


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(_dump(_owner()).encode() + b"\n" + b'{"user_id": "caf\xe9"}\n')
    (error,) = validate_dataset(path)
    assert (error.line, error.field) == (2, "")
    assert "UTF-8" in error.message


def test_schema_file_is_draft_2020_12() -> None:
    schema = dataset_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schema_file_repeats_the_contract_vocabulary() -> None:
    """The schema file cannot import the contract's constants: it must list the same ones."""
    defs = dataset_schema()["$defs"]
    assert tuple(defs["goldFact"]["properties"]["category"]["enum"]) == FACT_CATEGORIES
    sections = defs["labels"]["properties"]["sections"]["items"]["enum"]
    assert tuple(sections) == SECTION_NAMES
    assert tuple(defs["labels"]["properties"]["tags"]["items"]["enum"]) == TAG_NAMES


def test_smoke_validates_and_has_each_required_case() -> None:
    owners = load_dataset(SMOKE, collect=True)
    assert len(owners) == 2
    assert all(len(o.sessions) == 3 for o in owners)
    stats = dataset_stats(owners)
    assert stats["retractions"] >= 1
    assert stats["noise_sessions"] >= 1
    assert stats["tool_calls"] >= 1
    assert stats["upload_blocks"] >= 1
    for case in stats["special_cases"].values():
        if case["detected"] is not None:
            assert case["tagged"] == case["detected"]


def test_personas_validates_when_present() -> None:
    if not PERSONAS.exists():
        pytest.skip("datasets/personas.jsonl is not in this checkout")
    errors = validate_dataset(PERSONAS)
    assert not errors, "\n".join(str(e) for e in errors)


def test_smoke_stats_counts() -> None:
    stats = dataset_stats(load_dataset(SMOKE))
    assert stats["users"] == 2
    assert stats["sessions"] == 6
    assert stats["messages"] == sum(stats["messages_by_role"].values()) == 23
    assert stats["messages_by_role"] == {"human": 10, "ai": 11, "tool": 1, "system": 1}
    assert stats["multimodal_messages"] == 1
    assert stats["gold_facts"] == 8
    assert stats["sessions_by_language"] == {"en": 5, "zh": 1}
    assert stats["special_cases"]["injection"] == {"tagged": 1, "detected": None}
    text = format_stats(stats)
    assert "users" in text and "special case" in text
    # aligned: every line of the first table has its value in the same column
    first_table = text.split("\n\n")[0].splitlines()
    assert len({len(line) for line in first_table}) == 1


def test_round_trip_through_write_dataset(tmp_path: Path) -> None:
    owners = load_dataset(SMOKE)
    out = tmp_path / "copy.jsonl"
    assert write_dataset(owners, out) == 2
    again = load_dataset(out)
    assert [o.model_dump() for o in again] == [o.model_dump() for o in owners]
    assert '"2025-01-06T09:00:00Z"' in out.read_text(encoding="utf-8")


def test_pipeline_message_shapes() -> None:
    owners = load_dataset(SMOKE)
    by_id = {o.user_id: o for o in owners}
    call = by_id["ana"].sessions[0].messages[2].to_pipeline_message()
    assert call["role"] == "assistant"
    assert call["tool_calls"][0]["function"] == {
        "name": "web_search",
        "arguments": '{"q": "Apache Airflow latest release"}',
    }
    tool = by_id["ana"].sessions[0].messages[3].to_openai_dict()
    assert (tool["role"], tool["tool_call_id"]) == ("tool", "call_ana_1")
    image = by_id["wei"].sessions[0].messages[0].to_openai_dict()
    assert image["role"] == "user"
    assert image["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "file:///photos/loaf_0301.jpg"},
    }
    assert "caption" not in json.dumps(image)


def test_message_model_rejects_role_fields() -> None:
    with pytest.raises(ValueError, match="only ai messages"):
        Message.model_validate(
            {
                "role": "human",
                "content": "x",
                "timestamp": "2025-01-01T00:00:00Z",
                "tool_calls": [{"id": "a", "name": "b", "args": {}}],
            }
        )


def test_consistency_problems_on_constructed_owner() -> None:
    data = copy.deepcopy(_owner())
    data["sessions"][1]["labels"]["retracts"] = ["g9"]
    owner = Owner.model_validate(data)
    assert [f for f, _ in owner.consistency_problems()] == ["sessions[1].labels.retracts[0]"]


def test_bundled_dataset_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(DATASETS_ENV, raising=False)
    assert bundled_dataset_path("smoke") == SMOKE
    assert resolve_dataset("smoke") == SMOKE
    assert resolve_dataset(str(SMOKE)) == SMOKE
    (tmp_path / "smoke.jsonl").write_text(_dump(_owner()) + "\n")
    monkeypatch.setenv(DATASETS_ENV, str(tmp_path))
    assert bundled_dataset_path("smoke") == tmp_path / "smoke.jsonl"
    with pytest.raises(DatasetNotFoundError, match=DATASETS_ENV):
        bundled_dataset_path("no-such-set")
    with pytest.raises(DatasetNotFoundError, match="not found"):
        resolve_dataset(tmp_path / "missing.jsonl")
