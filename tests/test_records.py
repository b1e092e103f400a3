"""Typed run rows: whole-record snapshots of a call row and a session row, and clear errors
for tables that were edited or not written by memlab."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from builders import marker_backend, one_turn, update, write_owners
from inline_snapshot import snapshot
from pydantic import model_validator

from memlab.grids.grid import Grid
from memlab.runs import records
from memlab.runs.records import CallRow, RecordError, read_rows
from memlab.runs.run import Run
from memlab.sweeps.driver import sweep

T0 = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def run(tmp_path: Path) -> Run:
    owner = {
        "user_id": "ann",
        "sessions": [
            one_turn(
                "ann-1",
                T0,
                "I live in Leeds.",
                facts=[{"id": "g1", "content": "Lives in Leeds", "category": "context"}],
            )
        ],
    }
    data = tmp_path / "d.jsonl"
    write_owners(data, [owner])
    return sweep(
        data,
        Grid.from_mapping({"name": "rec", "replay_mode": "per_session"}),
        runs_dir=tmp_path / "runs",
        backend_factory=lambda spec: marker_backend({"Leeds": update("Lives in Leeds")}),
        progress=False,
    )


def stable(row: dict[str, Any]) -> dict[str, Any]:
    """The row without wall-clock fields and with the lane id's hash cut off."""
    out = {k: v for k, v in row.items() if k not in {"duration_s", "latency_s"}}
    out["lane_id"] = out["lane_id"].rsplit("-", 1)[0]
    if isinstance(out.get("reply"), str):
        out["reply"] = json.loads(out["reply"])  # compared as data, not one long line
    return out


def test_a_call_row_as_a_whole(run: Run) -> None:
    rows = read_rows(run.path / "calls.jsonl", CallRow)
    assert [stable(row) for row in rows] == snapshot(
        [
            {
                "lane_id": "default-free-t0.7-m100-baseline-d30-scripted",
                "user_id": "ann",
                "session_index": 0,
                "thread_id": "ann-1",
                "started_at": "2025-06-02T09:00:02Z",
                "skipped": None,
                "saved": True,
                "error": None,
                "error_stage": None,
                "prompt_chars": 5222,
                "prompt_sha256": "34b93f9969016b9c",
                "reply": {
                    "user": {
                        "workContext": {"summary": "", "shouldUpdate": False},
                        "personalContext": {"summary": "", "shouldUpdate": False},
                        "topOfMind": {"summary": "", "shouldUpdate": False},
                    },
                    "history": {
                        "recentMonths": {"summary": "", "shouldUpdate": False},
                        "earlierContext": {"summary": "", "shouldUpdate": False},
                        "longTermBackground": {"summary": "", "shouldUpdate": False},
                    },
                    "newFacts": [
                        {"content": "Lives in Leeds", "category": "context", "confidence": 0.9}
                    ],
                    "factsToRemove": [],
                },
                "prompt_tokens": 1305,
                "completion_tokens": 118,
                "finish_reason": "stop",
                "model": "scripted",
                "backend": "scripted",
                "cached": False,
                "facts_before": 0,
                "facts_after": 1,
                "virtual_time": "2025-06-02T09:00:02Z",
                "parse_ok": True,
                "parse_rung": "strict",
                "parse_category": None,
                "parse_wrappers": "",
                "violations": [],
                "n_violations": 0,
                "n_added": 1,
                "n_skipped_below_threshold": 0,
                "n_skipped_duplicate": 0,
                "n_removed": 0,
                "n_unknown_removals": 0,
                "n_evicted": 0,
                "n_sections_updated": 0,
                "n_merged": 0,
                "n_echoed": 0,
            }
        ]
    )


def test_a_session_row_as_a_whole(run: Run) -> None:
    assert [stable(row) for row in run.sessions.to_dict("records")] == snapshot(
        [
            {
                "lane_id": "default-free-t0.7-m100-baseline-d30-scripted",
                "user_id": "ann",
                "session_index": 0,
                "thread_id": "ann-1",
                "noise": False,
                "tags": "",
                "facts": 1,
                "gold_active": 1,
                "gold_covered": 1,
                "stored_precise": 1,
                "recall": 1.0,
                "precision": 1.0,
                "retracted_held": 0,
                "gold_retracted": 0,
                "forbidden_stored": 0,
                "dup_exact": 0,
                "dup_normalized": 0,
                "dup_near": 0,
                "agent_runs": 1,
                "llm_calls": 1,
                "added": 1,
                "removed": 0,
                "evicted": 0,
                "skipped_below_threshold": 0,
                "skipped_duplicate": 0,
                "echoed": 0,
                "memory_tokens": 4,
                "op_adds": 1,
                "op_adds_expected": 1,
                "op_adds_correct": 1,
                "op_adds_missed": 0,
                "op_adds_redundant": 0,
                "op_adds_spurious": 0,
                "op_removals": 0,
                "op_removals_expected": 0,
                "op_removals_correct": 0,
                "op_removals_missed": 0,
                "op_removals_wrong": 0,
                "gold_evicted": 0,
                "gold_below_threshold": 0,
                "stale_facts": 0,
                "stale_sessions": 0,
                "stale_days": 0,
                "stale_removed_0": 0,
                "stale_at_risk_0": 0,
                "stale_removed_1": 0,
                "stale_at_risk_1": 0,
                "stale_removed_2": 0,
                "stale_at_risk_2": 0,
                "gold_regret": 0,
                "injections": 0,
                "injection_tokens": 0,
                "injection_facts": 0,
                "injection_dropped": 0,
                "gold_injected": 0,
                "gold_injectable": 0,
            }
        ]
    )


def test_an_edited_table_names_file_line_and_column(run: Run) -> None:
    path = run.path / "calls.jsonl"
    row = json.loads(path.read_text(encoding="utf-8"))
    row["parse_ok"] = "maybe"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(RecordError, match=r"calls.jsonl:1: column 'parse_ok'"):
        read_rows(path, CallRow)
    path.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(RecordError, match=r"calls.jsonl:1: not a JSON row"):
        read_rows(path, CallRow)


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param({}, id="as-written"),
        pytest.param({"reply": "\ud800 lone surrogate"}, id="surrogate"),
        pytest.param({"latency_s": math.nan, "extra_nan": math.nan}, id="nan"),
        pytest.param({"extra_list": [[1, [2]], {"a": None}]}, id="nested-extra"),
        pytest.param({"parse_ok": 1}, id="lax-bool"),
    ],
)
def test_a_row_reads_as_json_loads_and_the_model_read_it(run: Run, edit: dict[str, Any]) -> None:
    """The row read straight from its JSON text equals json.loads then the model, also for
    text pydantic-core's parser refuses (then read again the long way)."""
    path = run.path / "calls.jsonl"
    row = {**json.loads(path.read_text(encoding="utf-8").splitlines()[0]), **edit}
    text = json.dumps(row, ensure_ascii=True) + "\n"
    path.write_text(text, encoding="utf-8")
    (found,) = read_rows(path, CallRow)
    expected = CallRow.model_validate(json.loads(text)).model_dump()
    assert json.dumps(found, sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert found["reply"] == row["reply"]  # a sentinel: the edit reached the row


def test_a_row_nested_too_deep_is_refused_like_any_json_row(run: Run) -> None:
    path = run.path / "calls.jsonl"
    row = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    deep: Any = 1
    for _ in range(100):
        deep = [deep]
    row["extra_deep"] = deep  # level 101 inside the row
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(RecordError, match=r"calls.jsonl:1: not a JSON row"):
        read_rows(path, CallRow)


def test_a_row_with_few_brackets_is_read_without_walking_it(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row whose text holds at most 100 opening brackets cannot nest deeper than the
    limit, so reading it skips the walk over the decoded row (the walk stays for the
    others: the test above)."""
    path = run.path / "calls.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert all(line.count("{") + line.count("[") <= 100 for line in lines)

    def walk(value: Any, limit: int = 100) -> None:
        raise AssertionError("the row was walked")

    monkeypatch.setattr(records, "nesting_path", walk)
    assert len(read_rows(path, CallRow)) == len(lines)


def test_a_row_read_from_text_is_model_dump_with_its_columns_in_order(run: Run) -> None:
    """The declared columns in the model's order, then the extra ones as the line has them,
    with the values the model gives (a lax ``1`` a bool, an integer latency a float)."""
    path = run.path / "calls.jsonl"
    row = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    row = {"zz_extra": {"b": [1, 2]}, **row, "saved": 1, "latency_s": 2, "aa_extra": None}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (found,) = read_rows(path, CallRow)
    declared = list(CallRow.model_fields)
    assert list(found) == [*declared, *(key for key in row if key not in declared)]
    assert list(found)[len(declared)] == "zz_extra" and list(found)[-1] == "aa_extra"
    assert found["saved"] is True and found["latency_s"] == 2.0
    assert isinstance(found["latency_s"], float)
    assert found["zz_extra"] == {"b": [1, 2]}


class _Checked(CallRow):
    """A row model with its own check over the whole row."""

    @model_validator(mode="after")
    def _no_reply_without_tokens(self) -> _Checked:
        if self.reply is not None and self.completion_tokens == 0:
            raise ValueError("a reply with no completion tokens")
        return self


def test_a_row_model_with_its_own_checks_is_read_through_them(run: Run) -> None:
    """Rows are validated without building each model instance only when the model is its
    fields alone; a model that checks more still checks every row."""
    path = run.path / "calls.jsonl"
    row = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert row["reply"] is not None
    path.write_text(json.dumps({**row, "completion_tokens": 0}) + "\n", encoding="utf-8")
    assert len(read_rows(path, CallRow)) == 1
    with pytest.raises(RecordError, match=r"calls.jsonl:1: .*no completion tokens"):
        read_rows(path, _Checked)
