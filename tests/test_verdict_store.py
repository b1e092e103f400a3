"""The default matcher's verdicts kept beside the response cache, and read back by a replay."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from builders import city_owners, marker_backend, update, write_owners

from memlab.backends.caching.cache import CacheMode
from memlab.grids.grid import Grid
from memlab.matching import verdict_store
from memlab.matching.base import MatchResult
from memlab.matching.default_matcher import DefaultMatcher, clear_shared_verdicts
from memlab.matching.verdict_store import load_verdicts, save_verdicts, verdicts_path
from memlab.sweeps.driver import sweep

PAIRS = [("Lives in Leeds", "Lives in Leeds, UK"), ("Lives in Porto", "Lives in Leeds")]


def _fresh() -> DefaultMatcher:
    """A matcher as a new process has it: no verdict memoised."""
    clear_shared_verdicts()
    return DefaultMatcher()


def test_saved_verdicts_are_read_back_by_a_matcher_of_the_same_configuration(
    tmp_path: Path,
) -> None:
    matcher = _fresh()
    decided = {pair: matcher.match(*pair) for pair in PAIRS}
    assert save_verdicts(matcher, tmp_path) == 2
    reader = _fresh()
    assert load_verdicts(reader, tmp_path) == 2
    assert reader.decided() == decided
    other = DefaultMatcher(threshold=0.9)  # another configuration: another file
    assert verdicts_path(other, tmp_path) != verdicts_path(reader, tmp_path)
    assert load_verdicts(other, tmp_path) == 0


def _saved_one(cache: Path) -> tuple[Path, dict[str, Any]]:
    """Save one verdict in ``cache``; return its file and the file's content."""
    matcher = _fresh()
    matcher.match(*PAIRS[0])
    save_verdicts(matcher, cache)
    path = verdicts_path(matcher, cache)
    assert path is not None
    return path, json.loads(path.read_text(encoding="utf-8"))


def test_a_read_verdict_is_used_instead_of_deciding_again(tmp_path: Path) -> None:
    path, data = _saved_one(tmp_path)
    data["reason"][0] = "planted"
    path.write_text(json.dumps(data), encoding="utf-8")
    reader = _fresh()
    load_verdicts(reader, tmp_path)
    assert reader.match(*PAIRS[0]).reason == "planted"


def test_verdicts_are_saved_as_five_columns_and_rows_of_format_1_are_still_read(
    tmp_path: Path,
) -> None:
    matcher = _fresh()
    decided = {pair: matcher.match(*pair) for pair in PAIRS}
    save_verdicts(matcher, tmp_path)
    path = verdicts_path(matcher, tmp_path)
    assert path is not None
    data = json.loads(path.read_text(encoding="utf-8"))
    columns = {name: data.pop(name) for name in ("stored", "gold", "score", "matched", "reason")}
    assert data == {"format": 2, "code": verdict_store._code_digest(), "matcher": matcher.name}
    assert columns == {
        "stored": [s for s, _ in PAIRS],
        "gold": [g for _, g in PAIRS],
        "score": [decided[p].score for p in PAIRS],
        "matched": [decided[p].matched for p in PAIRS],
        "reason": [decided[p].reason for p in PAIRS],
    }
    rows = [[s, g, r.score, r.matched, r.reason] for (s, g), r in decided.items()]
    rows[1][4] = "read from format 1"
    old = {"format": 1, "code": data["code"], "matcher": matcher.name, "verdicts": rows}
    path.write_text(json.dumps(old), encoding="utf-8")
    reader = _fresh()
    assert load_verdicts(reader, tmp_path) == 2
    assert reader.match(*PAIRS[0]) == decided[PAIRS[0]]
    assert reader.match(*PAIRS[1]).reason == "read from format 1"


@pytest.mark.parametrize(
    "change",
    [
        {"gold": ["one", "two"]},  # columns of different lengths
        {"score": "1"},  # a column that is not a list
        {"matched": [1]},  # matched is not a bool
        {"stored": [["nested"]]},  # a text that is not a string
    ],
)
def test_a_verdicts_file_with_a_bad_column_is_ignored(
    tmp_path: Path, change: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    path, data = _saved_one(tmp_path)
    path.write_text(json.dumps({**data, **change}), encoding="utf-8")
    reader = _fresh()
    assert load_verdicts(reader, tmp_path) == 0
    assert reader.decided() == {}
    assert "ignoring the saved matcher verdicts" in caplog.text


def test_verdicts_of_other_code_or_broken_files_are_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, data = _saved_one(tmp_path)
    path.write_text(json.dumps({**data, "code": "0" * 64}), encoding="utf-8")
    assert load_verdicts(_fresh(), tmp_path) == 0
    for broken in ("{", json.dumps({**data, "score": ["x"]})):
        path.write_text(broken, encoding="utf-8")
        assert load_verdicts(_fresh(), tmp_path) == 0
    assert "ignoring the saved matcher verdicts" in caplog.text


def test_only_the_default_matcher_with_a_shared_memo_keeps_verdicts(tmp_path: Path) -> None:
    class StandIn:
        name = "stand-in"

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [[1.0] for _ in texts]

    assert verdicts_path(DefaultMatcher(embedder=StandIn()), tmp_path) is None
    assert save_verdicts(DefaultMatcher(embedder=StandIn()), tmp_path) == 0


def test_a_replay_from_the_cache_decides_no_pair_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owners: list[dict[str, Any]] = city_owners(datetime(2025, 1, 6, 9, tzinfo=UTC))
    dataset = write_owners(tmp_path / "data.jsonl", owners)
    backend = marker_backend({"Leeds": update("Lives in Leeds"), "Porto": update("Lives in Porto")})
    grid = Grid.from_mapping({"name": "cities"})
    cache = tmp_path / "cache"

    def run(name: str, mode: CacheMode) -> Any:
        return sweep(
            dataset,
            grid,
            runs_dir=tmp_path / "runs",
            run_name=name,
            backend_factory=lambda spec: backend,
            cache_dir=cache,
            cache_mode=mode,
            matcher=_fresh(),
            progress=False,
        )

    first = run("record", CacheMode.READ_WRITE)
    assert list((cache / verdict_store.VERDICTS_DIR).glob("*.json"))
    decided: list[tuple[str, str]] = []
    original = DefaultMatcher._match

    def counting(self: DefaultMatcher, stored: str, gold: str) -> MatchResult:
        decided.append((stored, gold))
        return original(self, stored, gold)

    monkeypatch.setattr(DefaultMatcher, "_match", counting)
    again = run("replay", CacheMode.READ_ONLY)
    assert decided == []
    assert again.summary["recall"].tolist() == first.summary["recall"].tolist() == [1.0]
    run("off", CacheMode.OFF)  # without the cache, the matcher decides again
    assert decided


def test_verdicts_read_back_share_one_string_per_text(tmp_path: Path) -> None:
    # Each text is in a pair with every text of the other side; read back, the pairs hold
    # one string per text rather than one per occurrence (2.5 times the memory).
    stored, gold = ["Lives in Leeds", "Owns a boat"], ["Lives in Leeds, UK", "Plays chess"]
    matcher = _fresh()
    matcher.remember({(s, g): MatchResult(0.5, False, "r") for s in stored for g in gold})
    save_verdicts(matcher, tmp_path)
    reader = _fresh()
    assert load_verdicts(reader, tmp_path) == 4
    keys = list(reader.decided())
    assert {s for s, _ in keys} == set(stored) and {g for _, g in keys} == set(gold)
    assert len({id(s) for s, _ in keys}) == 2
    assert len({id(g) for _, g in keys}) == 2
