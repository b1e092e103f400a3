"""RunDir's one-call jobs: a sweep's first writes, a step's table with its manifest, and the
previous sweep's lane descriptions."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from memlab.runs.rundir import QA_ANSWERS, QA_MANIFEST, RunDir


def test_start_sweep_removes_the_manifest_and_writes_grid_and_lanes(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path / "run")
    run_dir.path.mkdir()
    (run_dir.path / "manifest.json").write_text("{}", encoding="utf-8")
    run_dir.start_sweep("name: g\n", {"lane-a": {"lane_id": "lane-a", "note": "é"}})
    assert not (run_dir.path / "manifest.json").exists()
    assert (run_dir.path / "grid.yaml").read_text(encoding="utf-8") == "name: g\n"
    text = (run_dir.path / "lanes" / "lane-a" / "config.json").read_text(encoding="utf-8")
    assert text == '{\n  "lane_id": "lane-a",\n  "note": "é"\n}'  # indented, not ASCII-escaped


def test_a_step_table_then_its_manifest_with_rows_and_checksum(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    (tmp_path / "qa").mkdir()
    (tmp_path / QA_MANIFEST).write_text('{"old": true}', encoding="utf-8")
    rows = [{"a": 1}, {"a": "ü"}]
    path = run_dir.write_step_table(QA_ANSWERS, rows, QA_MANIFEST, {"k": 1}, fresh=True)
    expected_text = '{"a": 1}\n{"a": "ü"}\n'
    assert path == tmp_path / QA_ANSWERS
    assert path.read_text(encoding="utf-8") == expected_text
    digest = hashlib.sha256(expected_text.encode("utf-8")).hexdigest()
    manifest = json.loads((tmp_path / QA_MANIFEST).read_text(encoding="utf-8"))
    assert manifest == {"k": 1, "files": {"answers.jsonl": {"rows": 2, "sha256": digest}}}


def test_a_rewritten_table_keeps_the_manifest_s_key_order(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    old = {"k": 1, "files": {}, "matcher": "lexical"}
    run_dir.write_step_table(QA_ANSWERS, [], QA_MANIFEST, old, fresh=True)
    manifest = json.loads((tmp_path / QA_MANIFEST).read_text(encoding="utf-8"))
    assert list(manifest) == ["k", "files", "matcher"]
    assert manifest["files"]["answers.jsonl"]["rows"] == 0


def _describe(run_dir: RunDir, lane_id: str) -> None:
    run_dir.write_json(run_dir.lane_config(lane_id), {"lane_id": lane_id, "config": {}})


def test_previous_lanes_are_the_manifest_s_else_every_described_one(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    for lane_id in ("kept", "dropped"):
        _describe(run_dir, lane_id)
    (tmp_path / "lanes" / "broken").mkdir()
    (tmp_path / "lanes" / "broken" / "config.json").write_text("{", encoding="utf-8")
    every = sorted(described["lane_id"] for described, _ in run_dir.previous_lanes())
    assert every == ["dropped", "kept"]  # no manifest: a sweep that stopped early
    run_dir.write_json(run_dir.manifest_file, {"lanes": ["kept"]})
    listed = [(d["lane_id"], mtime) for d, mtime in run_dir.previous_lanes()]
    config = run_dir.lane_config("kept")
    assert listed == [("kept", config.stat().st_mtime)]
