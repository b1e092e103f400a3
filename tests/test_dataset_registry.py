"""Datasets by name: the bundled ones and those registered in ``DATASETS`` (as a plugin does)
resolve through one path; a file path is always that file."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlab.cli.main import main
from memlab.datasets.registry import (
    DATASETS,
    DATASETS_ENV,
    DatasetNotFoundError,
    NamedDataset,
    resolve_dataset,
)
from memlab.grids.grid import Grid
from memlab.plugins import RegistrationError
from memlab.sweeps.grid_check import dataset_path

CHECKOUT_DATASETS = Path(__file__).resolve().parents[1] / "datasets"


@pytest.fixture
def tiny(tmp_path: Path) -> Iterator[Path]:
    """A dataset registered as ``tiny`` (a copy of the bundled smoke file elsewhere)."""
    file = tmp_path / "shipped" / "tiny-data.jsonl"
    file.parent.mkdir()
    shutil.copyfile(CHECKOUT_DATASETS / "smoke.jsonl", file)
    DATASETS.register("tiny", NamedDataset("a test dataset", lambda: file))
    try:
        yield file
    finally:
        DATASETS.unregister("tiny")


def test_the_bundled_datasets_are_entries_that_locate_their_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(DATASETS_ENV, raising=False)
    for name in ("smoke", "personas"):
        assert DATASETS.origin(name) == "memlab"
        assert DATASETS[name].locate() == CHECKOUT_DATASETS / f"{name}.jsonl"
        assert resolve_dataset(name) == CHECKOUT_DATASETS / f"{name}.jsonl"


def test_a_registered_dataset_resolves_by_name_in_a_grid_and_on_the_command_line(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert resolve_dataset("tiny") == tiny
    grid = Grid.from_mapping({"name": "g", "dataset": "tiny"}, base_dir=tmp_path)
    assert dataset_path(grid) == tiny
    assert main(["datasets", "validate", "tiny"]) == 0, capsys.readouterr().err
    # A path is that file, whatever the registry holds.
    assert resolve_dataset(CHECKOUT_DATASETS / "smoke.jsonl") == CHECKOUT_DATASETS / "smoke.jsonl"


def test_an_unknown_name_lists_the_registered_datasets(tiny: Path) -> None:
    with pytest.raises(DatasetNotFoundError) as caught:
        resolve_dataset("tinny")
    message = str(caught.value)
    assert "'tinny' not found" in message
    assert "known datasets: smoke, personas, tiny" in message


def test_a_dataset_entry_is_checked_like_every_registration() -> None:
    with pytest.raises(RegistrationError, match="an entry is a NamedDataset, got str"):
        DATASETS.register("loose", "datasets/loose.jsonl")  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="already registered"):
        DATASETS.register("smoke", NamedDataset("again", lambda: Path("smoke.jsonl")))
    assert "loose" not in DATASETS


def test_memlab_plugins_lists_the_datasets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "dataset"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "dataset (dataset):"
    assert [line.split()[0] for line in lines[1:]] == ["smoke", "personas"]
