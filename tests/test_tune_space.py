"""Tiered knobs and answer prompts in a search's space reach the replayed lanes.

Each candidate's value must be what its trial run replayed: the lane's ``config.json`` (tiered
knobs) and the QA manifest (the answer prompt, by name and the SHA-256 of the file the test
wrote).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest

from memlab.grids.grid import GridError
from memlab.reporting.tuning.tune import tune
from tests.tune_data import owners_dataset, tune_grid

QA = {"answer_backend": "sim:attentive", "judges": ["strict"], "conditions": ["memory"]}


def _lane_config(trial: Path) -> dict[str, object]:
    (config,) = trial.glob("lanes/*/config.json")
    data: dict[str, object] = json.loads(config.read_text("utf-8"))
    return data


def test_tiered_knobs_reach_the_replayed_lanes(tmp_path: Path) -> None:
    owners_dataset(tmp_path, copies=1)
    knob = {"low": 0.5, "high": 0.9}
    grid = tune_grid(
        tmp_path,
        {"space": {"tiered.importance_threshold": knob, "tiered.decay_per_day": {
            "low": 0.01, "high": 0.2}}},
        memory="tiered",
    )  # fmt: skip
    result = tune(grid, runs_dir=tmp_path / "runs", max_trials=2)
    # The start: the tiered defaults as the lane declares them (0.7, 0.05).
    assert result.trials[0]["params"] == {
        "tiered.importance_threshold": 0.7,
        "tiered.decay_per_day": 0.05,
    }
    for row in result.trials:
        config = json.dumps(_lane_config(tmp_path / "runs" / "search" / "trials" /
                                         f"trial-{row['number']:03d}"))  # fmt: skip
        for name, value in row["params"].items():
            option = name.removeprefix("tiered.")
            if value not in (0.7, 0.05):  # a default is left out of the lane's dumps
                assert f'"{option}": {json.dumps(value)}' in config, (name, config)
    assert result.trials[1]["params"] != result.trials[0]["params"]


def test_an_answer_prompt_search_on_a_qa_objective_runs_end_to_end(tmp_path: Path) -> None:
    owners_dataset(tmp_path, copies=1)
    text = (
        "Answer from the memory below only.\n{memory}\nQuestion: {question}\n"
        "Reply in a few words, or exactly: I don't know.\n"
    )
    (tmp_path / "brief.txt").write_text(text, encoding="utf-8")
    grid = tune_grid(
        tmp_path,
        {"space": {"answer_prompt": ["default", "brief.txt"]},
         "objective": {"metric": "qa_accuracy"}},
    )  # fmt: skip
    data = grid.read_text("utf-8").replace("dataset:", f"qa: {json.dumps(QA)}\ndataset:", 1)
    grid.write_text(data, encoding="utf-8")
    result = tune(grid, runs_dir=tmp_path / "runs", max_trials=2)
    assert [row["params"] for row in result.trials] == [
        {"answer_prompt": "default"},
        {"answer_prompt": "brief.txt"},
    ]
    for row in result.trials:
        assert not math.isnan(row["train"]["qa_accuracy"])
    trial = tmp_path / "runs" / "search" / "trials" / "trial-001"
    manifest = json.dumps(json.loads((trial / "qa" / "manifest.json").read_text("utf-8")))
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() in manifest
    assert "qa_accuracy" in {v.metric for v in result.heldout.verdicts}


def test_bad_knobs_and_answer_prompts_name_the_key(tmp_path: Path) -> None:
    owners_dataset(tmp_path, copies=1)
    flat = tune_grid(tmp_path, {"space": {"tiered.recall_k": {"low": 1, "high": 5}}})
    with pytest.raises(GridError, match=r"tune\.space\.tiered\.recall_k.*memory: tiered"):
        tune(flat, runs_dir=tmp_path / "runs")
    no_qa = tune_grid(
        tmp_path,
        {"space": {"answer_prompt": ["default"]}, "objective": {"metric": "qa_accuracy"}},
    )
    with pytest.raises(GridError, match=r"tune\.space\.answer_prompt.*qa: key"):
        tune(no_qa, runs_dir=tmp_path / "runs")
    unknown = tune_grid(tmp_path, {"space": {"tiered.working_tokens": {"low": 1, "high": 9}}})
    with pytest.raises(GridError, match=r"not a setting the search can vary"):
        tune(unknown, runs_dir=tmp_path / "runs")
