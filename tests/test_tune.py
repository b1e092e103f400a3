"""``memlab tune``: a search on train owners, its winner proved on held-out owners.

Known truth from the simulated model (a test instrument): ``sim:attentive`` declares in its
YAML (read here with ``yaml.safe_load``) which prompt phrase raises its rates, and which
confidences its facts carry, so the expected winner and verdicts come from the profile, not
from memlab's output.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import copied_personas

from memlab.cli.main import main
from memlab.grids.grid import GridError
from memlab.reporting.tuning.tune import TuneError, tune

ROOT = Path(__file__).resolve().parent.parent
SELF_ONLY = ROOT / "notebooks" / "prompts" / "self_only.txt"
COPIES = 3  # the bundled personas, each three times under new ids: enough held-out owners


def _declared(name: str) -> dict[str, Any]:
    path = resources.files("memlab.simulation") / "profiles" / f"{name}.yaml"
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def _dataset(folder: Path) -> Path:
    return copied_personas(folder / "people.jsonl", COPIES)


def _grid(folder: Path, tune_key: dict[str, Any], **base: Any) -> Path:
    _dataset(folder)
    (folder / "self_only.txt").write_text(SELF_ONLY.read_text("utf-8"), encoding="utf-8")
    grid = {
        "name": "search",
        "dataset": "people.jsonl",
        "base": {"backend": "sim:attentive", **base},
        "tune": {"split": {"train": 0.4, "validation": 0.2, "test": 0.4, "seed": 3}, **tune_key},
    }
    path = folder / "tune.yaml"
    path.write_text(yaml.safe_dump(grid), encoding="utf-8")
    return path


def test_the_search_finds_the_declared_prompt_effect_and_the_held_out_verdict_confirms_it(
    tmp_path: Path,
) -> None:
    profile = _declared("attentive")
    (effect,) = profile["prompt_effects"]
    assert effect["when_contains"].lower() in SELF_ONLY.read_text("utf-8").lower()
    # The declared effect raises the share of revealed facts proposed: recall goes up.
    assert effect["set"]["propose_rate"] > profile["propose_rate"]
    path = _grid(
        tmp_path,
        {"space": {"prompt": ["default", "self_only.txt"]}, "objective": {"metric": "recall"}},
    )
    result = tune(path, runs_dir=tmp_path / "runs", max_trials=2)
    assert result.best["prompt"] == "self_only.txt"
    assert result.start["prompt"] == "default"
    assert result.verdict("recall") == "better", "\n".join(result.lines())
    # The split is stated, seeded and disjoint; the held-out runs hold only test owners.
    split = result.split
    assert not set(split.test) & (set(split.train) | set(split.validation))
    assert len(split.train) + len(split.validation) + len(split.test) == 14 * COPIES
    assert set(result.heldout.baseline.sessions["user_id"]) == set(split.test)
    text = "\n".join(result.lines())
    assert f"{len(split.test)} held-out test (seeded shuffle, seed 3)" in text
    assert "train-vs-test gap of the best candidate" in text and "search cost: " in text
    saved = json.loads((tmp_path / "runs" / "search" / "tune.json").read_text("utf-8"))
    assert saved["heldout"]["recall"] == "better"
    assert saved["split"]["test"] == list(split.test)


def _equivalent_range(profile: dict[str, Any]) -> tuple[float, float]:
    """Two thresholds between the same pair of declared confidences: the same facts pass
    either, so no value in between can change what is stored."""
    levels = sorted({*profile["confidence"], *profile["invented_confidence"]})
    low, high = levels[0], levels[1]  # the lowest confidence is dropped, the rest kept
    return low + 0.01, high - 0.01


def test_a_train_optimum_of_a_knob_that_changes_nothing_is_not_better_held_out(
    tmp_path: Path,
) -> None:
    low, high = _equivalent_range(_declared("attentive"))
    start = round((low + high) / 2, 2)
    path = _grid(
        tmp_path,
        {
            "space": {"fact_confidence_threshold": {"low": low, "high": high}},
            "objective": {"metric": "recall", "max": {"parse_failure_rate": 0.5}},
        },
        fact_confidence_threshold=start,
    )
    result = tune(path, runs_dir=tmp_path / "runs", max_trials=4)
    assert len(result.trials) == 4
    assert low <= result.best["fact_confidence_threshold"] <= high
    for verdict in result.heldout.verdicts:
        assert verdict.outcome != "better", "\n".join(result.lines())
    # Every candidate stored the same facts: the train objective is flat.
    assert len({t["train"]["recall"] for t in result.trials}) == 1
    assert result.verdict("recall") in ("no difference", "inconclusive")


def test_a_rerun_resumes_the_study_and_another_space_is_refused(tmp_path: Path) -> None:
    path = _grid(tmp_path, {"space": {"prompt": ["default", "self_only.txt"]}})
    runs = tmp_path / "runs"
    tune(path, runs_dir=runs, max_trials=2)
    trials = runs / "search" / "trials"
    stamps = {p.name: p.stat().st_mtime_ns for p in trials.glob("*/manifest.json")}
    again = tune(path, runs_dir=runs, max_trials=2)  # nothing left to try
    assert len(again.trials) == 2
    assert {p.name: p.stat().st_mtime_ns for p in trials.glob("*/manifest.json")} == stamps
    more = tune(path, runs_dir=runs, max_trials=3)  # one more candidate, the two kept
    assert [t["number"] for t in more.trials] == [0, 1, 2]
    other = _grid(tmp_path, {"space": {"prompt": ["self_only.txt"]}})
    with pytest.raises(TuneError, match="another space"):
        tune(other, runs_dir=runs)


def test_bad_tune_keys_name_the_file_and_key(tmp_path: Path) -> None:
    bad = _grid(tmp_path, {"space": {"temperature": {"low": 0, "high": 1}}})
    with pytest.raises(GridError, match=r"tune\.space.*not a setting the search can vary"):
        tune(bad, runs_dir=tmp_path / "runs")
    outside = _grid(
        tmp_path,
        {"space": {"fact_confidence_threshold": {"low": 0.1, "high": 0.2}}},
        fact_confidence_threshold=0.7,
    )
    with pytest.raises(GridError, match=r"outside 0\.1\.\.0\.2"):
        tune(outside, runs_dir=tmp_path / "runs")


def test_the_cli_prints_the_split_and_the_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _grid(tmp_path, {"space": {"prompt": ["default", "self_only.txt"]}})
    code = main(["tune", str(path), "--runs-dir", str(tmp_path / "runs"), "--max-trials", "2",
                 "--no-progress"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("owners: ")
    assert "verdict per primary metric (baseline -> candidate):" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n", encoding="utf-8")
    assert main(["tune", str(bad), "--runs-dir", str(tmp_path / "runs")]) == 2
