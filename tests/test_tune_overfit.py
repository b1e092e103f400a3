"""A prompt "improvement" that exists only for the training owners is caught as overfitting.

The profile (a copy of ``sim:attentive``, a test instrument) limits its declared prompt effect
to the owners listed in its YAML: the train and validation owners of the search's split. The
expectations come from that YAML: the search must pick the prompt holding the phrase, the
held-out owners (none listed) see the same model under both prompts, so the held-out verdict
is not ``better`` and the result is flagged ``overfit``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from memlab.cli.main import main
from memlab.reporting.tuning.tune import tune
from memlab.reporting.tuning.tune_spec import SplitSpec, split_owners
from memlab.simulation.profile import load_profile
from tests.tune_data import SELF_ONLY, declared, owners_dataset, tune_grid

SPLIT = {"train": 0.4, "validation": 0.2, "test": 0.4, "seed": 3}


def _overfit_profile(folder: Path, owners: list[str]) -> Path:
    """``sim:attentive`` with its prompt effect limited to the owners the search tunes on."""
    split = split_owners(owners, SplitSpec.model_validate(SPLIT))
    profile = declared("attentive")
    profile["name"] = "attentive-on-some-owners"
    profile["draws"] = "coupled"  # both prompts share every draw where the rates agree
    profile["prompt_effects"][0]["owners"] = [*split.train, *split.validation]
    path = folder / "overfit.yaml"
    path.write_text(yaml.safe_dump(profile), encoding="utf-8")
    return path


def test_an_effect_limited_to_some_owners_applies_to_those_only(tmp_path: Path) -> None:
    path = _overfit_profile(tmp_path, ["a", "b", "c", "d", "e"])
    written = yaml.safe_load(path.read_text("utf-8"))
    listed = written["prompt_effects"][0]["owners"]
    phrase = written["prompt_effects"][0]["when_contains"]
    profile = load_profile(path)
    for owner in ["a", "b", "c", "d", "e"]:
        applied = profile.for_template(f"keep {phrase}", owner)[1]
        assert applied == (("self-facts",) if owner in listed else ()), owner
    assert profile.for_template(f"keep {phrase}")[1] == ()  # no owner: none listed


def _search(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    _data, owners = owners_dataset(tmp_path)
    profile = _overfit_profile(tmp_path, owners)
    grid = tune_grid(
        tmp_path,
        {"space": {"prompt": ["default", "self_only.txt"]}, "objective": {"metric": "recall"},
         "split": SPLIT},
        backend=f"sim:{profile}",
    )  # fmt: skip
    return grid, yaml.safe_load(profile.read_text("utf-8"))


def test_a_gain_only_on_training_owners_is_flagged_overfit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid, profile = _search(tmp_path)
    (effect,) = profile["prompt_effects"]
    assert effect["when_contains"].lower() in SELF_ONLY.read_text("utf-8").lower()
    assert effect["set"]["propose_rate"] > profile["propose_rate"]  # recall up where it applies
    code = main(["tune", str(grid), "--runs-dir", str(tmp_path / "runs"), "--max-trials", "2",
                 "--no-progress", "--allow-inconclusive"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    saved = json.loads((tmp_path / "runs" / "search" / "tune.json").read_text("utf-8"))
    listed = set(effect["owners"])
    assert listed == set(saved["split"]["train"]) | set(saved["split"]["validation"])
    assert not listed & set(saved["split"]["test"])
    # On the owners it was tuned on, the prompt with the phrase wins.
    assert saved["best"] == {"prompt": "self_only.txt"}
    # No held-out owner is listed: both prompts meet the same model there.
    assert saved["heldout"]["recall"] != "better"
    flag = saved["overfit"]
    assert flag is not None and flag["metric"] == "recall"
    assert flag["train_gain"] > 0 and flag["train_gain"] > flag["heldout_high"]
    assert flag["train_gain"] == pytest.approx(
        saved["train"]["best"]["recall"] - saved["train"]["start"]["recall"]
    )
    assert "overfit: better on train by +" in out and "no gain on held-out owners" in out


def test_a_gain_on_every_owner_is_not_flagged(tmp_path: Path) -> None:
    owners_dataset(tmp_path)
    grid = tune_grid(
        tmp_path,
        {"space": {"prompt": ["default", "self_only.txt"]}, "objective": {"metric": "recall"}},
    )
    result = tune(grid, runs_dir=tmp_path / "runs", max_trials=2)
    assert result.verdict("recall") == "better"
    assert result.overfit is None
    saved = json.loads((tmp_path / "runs" / "search" / "tune.json").read_text("utf-8"))
    assert saved["overfit"] is None
