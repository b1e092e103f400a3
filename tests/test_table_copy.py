"""A run's tables read from their columnar copies (``cache/<table>.npz``) are the frames read
from the tables; a copy of another table, a damaged copy or a pickled one is never used; a read
alone writes nothing, a copy is written when the reader keeps it."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from builders import city_owners, update, write_owners

import memlab.runs.table_copy as table_copy
from memlab.backends.scripted import ScriptedBackend
from memlab.cli.main import main
from memlab.core.pipeline.llm import CompletionRequest
from memlab.grids.grid import Grid
from memlab.runs.records import CallRow, SessionRow, read_rows
from memlab.runs.run import load_run
from memlab.runs.rundir import RunDir
from memlab.runs.table_copy import decode_table, encode_table, keep_copy, read_table
from memlab.sweeps.driver import sweep

T0 = datetime(2025, 5, 5, 9, 0, tzinfo=UTC)
MODELS = {"calls.jsonl": CallRow, "sessions.jsonl": SessionRow}


def _reply(request: CompletionRequest) -> str:
    city = "Leeds" if "Leeds" in str(request.messages[-1]["content"]) else "Porto"
    return update(f"Lives in {city}")


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("copies")
    dataset = write_owners(tmp / "d.jsonl", city_owners(T0))
    grid = Grid.from_mapping(
        {"name": "f", "replay_mode": "per_session", "axes": {"max_facts": [10, 100]}}
    )
    model = ScriptedBackend(function=_reply)
    sweep(dataset, grid, runs_dir=tmp, backend_factory=lambda _s: model, progress=False)
    return tmp / "f"


@pytest.fixture
def run_path(swept: Path, tmp_path: Path) -> Path:
    """A fresh copy of the swept run (no table copies yet)."""
    import shutil

    target = tmp_path / "f"
    shutil.copytree(swept, target, ignore=shutil.ignore_patterns("cache"))
    return target


def _from_rows(path: Path, name: str) -> pd.DataFrame:
    """The table as the row read makes it (the reference a copy must match)."""
    return pd.DataFrame(read_rows(path / name, MODELS[name], inside=path))


def _no_row_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_args: Any, **_kwargs: Any) -> list[dict[str, Any]]:
        raise AssertionError("the table was parsed although its copy is current")

    monkeypatch.setattr(table_copy, "read_rows", refused)


@pytest.mark.parametrize("name", ["calls.jsonl", "sessions.jsonl"])
def test_a_second_read_uses_the_copy_and_gets_the_same_frame(
    run_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _from_rows(run_path, name)
    assert len(expected) > 0  # a sentinel: there are rows to compare
    attribute = name.removesuffix(".jsonl")
    run = load_run(run_path, keep_copies=True)
    first = getattr(run, attribute)
    assert not RunDir(run_path).table_copy(name).exists()  # a read alone writes nothing
    run.keep_table_copies()
    assert RunDir(run_path).table_copy(name).is_file()
    _no_row_reads(monkeypatch)
    second = getattr(load_run(run_path), attribute)
    for frame in (first, second):
        pd.testing.assert_frame_equal(frame, expected, check_exact=True)
        assert list(frame.dtypes) == list(expected.dtypes)


def _read_and_keep(run_dir: RunDir, name: str, facts: dict[str, Any]) -> pd.DataFrame:
    frame, data = read_table(run_dir, name, MODELS[name], facts, copy=True)
    if data is not None:
        keep_copy(run_dir, name, data)
    return frame


def test_a_copy_of_another_table_is_read_again(run_path: Path) -> None:
    run_dir = RunDir(run_path)
    facts = run_dir.file_facts(run_dir.file("sessions.jsonl"))
    _read_and_keep(run_dir, "sessions.jsonl", facts)
    # The table changes (a resumed sweep wrote it again): one session's recall edited.
    lines = run_dir.file("sessions.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["n_facts"] = 987
    lines[0] = json.dumps(row)
    run_dir.file("sessions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    changed = run_dir.file_facts(run_dir.file("sessions.jsonl"))
    assert changed["sha256"] != facts["sha256"]
    frame = _read_and_keep(run_dir, "sessions.jsonl", changed)
    assert frame["n_facts"].iloc[0] == 987
    stored = run_dir.table_copy("sessions.jsonl").read_bytes()
    assert decode_table(stored, facts["sha256"]) is None  # the copy was written again
    again = decode_table(stored, changed["sha256"])
    assert again is not None and again["n_facts"].iloc[0] == 987


def _pickled_copy(sha256: str) -> bytes:
    header = {
        "format": table_copy.COPY_FORMAT,
        "sha256": sha256,
        "rows": 1,
        "columns": [["x", "object", "json"]],
    }
    buffer = io.BytesIO()
    text = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(buffer, header=text, c0=np.array([{"a": 1}], dtype=object))
    return buffer.getvalue()


@pytest.mark.parametrize(
    "damage",
    [
        lambda data, _sha: data[: len(data) // 2],  # truncated
        lambda data, _sha: b"not a copy",
        lambda data, _sha: data.replace(b'"rows": ', b'"rows": 1'),  # rows it does not hold
        lambda _data, sha: _pickled_copy(sha),  # an object array: would need a pickle
    ],
    ids=["truncated", "garbage", "rows", "pickle"],
)
def test_a_damaged_copy_is_ignored_and_written_again(
    run_path: Path, damage: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = RunDir(run_path)
    facts = run_dir.file_facts(run_dir.file("calls.jsonl"))
    expected = _from_rows(run_path, "calls.jsonl")
    _read_and_keep(run_dir, "calls.jsonl", facts)
    copy = run_dir.table_copy("calls.jsonl")
    copy.write_bytes(damage(copy.read_bytes(), facts["sha256"]))
    frame = _read_and_keep(run_dir, "calls.jsonl", facts)
    pd.testing.assert_frame_equal(frame, expected, check_exact=True)
    _no_row_reads(monkeypatch)  # the copy written again is whole
    pd.testing.assert_frame_equal(
        _read_and_keep(run_dir, "calls.jsonl", facts), expected, check_exact=True
    )


def test_a_copy_that_cannot_be_written_leaves_the_read_whole(
    run_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*_args: Any, **_kwargs: Any) -> None:
        raise PermissionError("read-only run directory")

    monkeypatch.setattr(RunDir, "write_bytes", refused)
    run = load_run(run_path, keep_copies=True)
    frame = run.calls
    run.keep_table_copies()
    pd.testing.assert_frame_equal(frame, _from_rows(run_path, "calls.jsonl"), check_exact=True)
    assert not RunDir(run_path).table_copy("calls.jsonl").exists()


def test_cells_holding_lists_and_missing_values_read_back_as_written() -> None:
    frame = pd.DataFrame(
        {
            "violations": [[], ["/a", "/b"], ["/c", "/d"]],
            "error": pd.Series([None, "timeout", None], dtype=object),
            "text": ["a", None, "c"],
            "n": [1, 2, 3],
            "score": [0.5, float("nan"), 1.0],
        }
    )
    data = encode_table(frame, "abc")
    assert data is not None
    back = decode_table(data, "abc")
    assert back is not None
    assert back["violations"].tolist() == [[], ["/a", "/b"], ["/c", "/d"]]
    assert back["error"].tolist() == [None, "timeout", None]
    assert back["text"].isna().tolist() == [False, True, False]
    pd.testing.assert_frame_equal(back, frame, check_exact=True)
    assert decode_table(data, "another table") is None


def test_repeated_text_is_stored_once_and_reads_back_in_row_order() -> None:
    long_a, long_b = "a" * 5_000, "b" * 5_000
    rows = 400
    frame = pd.DataFrame(
        {
            "reply": pd.Series([long_a, long_b] * (rows // 2), dtype="str"),
            "lane": pd.Series(["l1", "l2", "l2", "l1"] * (rows // 4), dtype=object),
            "mixed": pd.Series(["x", 1] * (rows // 2), dtype=object),  # not all text
        }
    )
    data = encode_table(frame, "abc")
    assert data is not None
    # Each long text once (10,000 characters) and an index per row, not 400 x 5,000.
    assert len(data) < 10_000 + 64 * rows
    back = decode_table(data, "abc")
    assert back is not None
    assert back["reply"].tolist()[:3] == [long_a, long_b, long_a]
    assert back["lane"].tolist()[:5] == ["l1", "l2", "l2", "l1", "l1"]
    assert back["mixed"].tolist()[:2] == ["x", 1]
    pd.testing.assert_frame_equal(back, frame, check_exact=True)


def _with_array(data: bytes, name: str, array: np.ndarray[Any, Any]) -> bytes:
    with np.load(io.BytesIO(data), allow_pickle=False) as found:
        arrays = {key: found[key] for key in found.files}
    arrays[name] = array
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "codes",
    [np.array([0, 2]), np.array([0, -1]), np.array([0, 1], dtype=np.float64)],
    ids=["past the values", "negative", "not an index"],
)
def test_a_text_column_indexing_outside_its_values_is_not_read(
    codes: np.ndarray[Any, Any],
) -> None:
    data = encode_table(pd.DataFrame({"t": ["p", "q"]}), "abc")
    assert data is not None and decode_table(data, "abc") is not None
    assert decode_table(_with_array(data, "c0", codes), "abc") is None


def test_a_frame_json_cannot_hold_gets_no_copy() -> None:
    assert encode_table(pd.DataFrame({"tags": [{"a"}, {"b"}]}), "abc") is None
    assert encode_table(pd.DataFrame({"n": [1, 2]}, index=[5, 6]), "abc") is None


def test_a_report_keeps_the_copies_and_a_refused_command_writes_none(
    run_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(p.relative_to(run_path) for p in run_path.rglob("*"))
    # Refused after reading the tables: the baseline lane is not one of the run's.
    assert main(["compare", str(run_path), "--baseline-lane", "no-such-lane"]) == 2
    assert sorted(p.relative_to(run_path) for p in run_path.rglob("*")) == before
    capsys.readouterr()
    assert main(["report", str(run_path), "-o", str(tmp_path / "report")]) == 0
    run_dir = RunDir(run_path)
    for name in MODELS:
        facts = run_dir.file_facts(run_dir.file(name))
        kept = decode_table(run_dir.table_copy(name).read_bytes(), facts["sha256"])
        assert kept is not None
        pd.testing.assert_frame_equal(kept, _from_rows(run_path, name), check_exact=True)


def test_memlab_sweep_leaves_the_copies_its_first_report_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = write_owners(tmp_path / "d.jsonl", city_owners(T0))
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        f"name: s\ndataset: {dataset}\nreplay_mode: per_session\nbase: {{backend: 'sim:chatty'}}\n"
    )
    assert main(["sweep", str(grid), "--runs-dir", str(tmp_path), "--no-progress"]) == 0
    run_path, run_dir = tmp_path / "s", RunDir(tmp_path / "s")
    expected = {name: _from_rows(run_path, name) for name in MODELS}
    for name, frame in expected.items():
        facts = run_dir.file_facts(run_dir.file(name))
        kept = decode_table(run_dir.table_copy(name).read_bytes(), facts["sha256"])
        assert kept is not None and len(frame) > 0
        pd.testing.assert_frame_equal(kept, frame, check_exact=True)
    _no_row_reads(monkeypatch)  # the first report reads the copies
    capsys.readouterr()
    assert main(["report", str(run_path), "-o", str(tmp_path / "report")]) == 0
