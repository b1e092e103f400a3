"""Later steps on a run: they read the dataset the run replayed or refuse, and one writer at
a time holds the run.

- A sweep records its dataset by an absolute, resolved path and its content hash; QA,
  rescoring, the report and a fork find it from any working directory (also a run that
  recorded the path relative to where it was started) and refuse a different file with one
  line naming the file and both hashes (exit 2).
- Every writer holds the run's lock; a second writer stops with one line naming the holder
  (exit 2), proven with real processes: the first one is held inside its first model call by a
  loopback server the test releases, so the order does not depend on timing.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_openai import FakeServer

import memlab
from memlab.cli.main import main
from memlab.datasets import resolve_dataset
from memlab.grids.grid import Grid
from memlab.runs.run_lock import RunLockedError, lock_path, run_lock
from memlab.runs.rundir import QA_MANIFEST
from memlab.sweeps.driver import sweep

OWNERS = ["amara", "daniel"]
GRID = {"name": "r", "owners": OWNERS, "base": {"backend": "sim:careful"}}
QA = ["--answer-backend", "sim:careful", "--conditions", "memory", "--no-progress"]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _swept(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run of ``data/p.jsonl`` (a copy of personas), swept from ``root`` with the dataset
    named relative to it; returns the run directory."""
    (root / "data").mkdir(parents=True)
    (root / "data" / "p.jsonl").write_bytes(resolve_dataset("personas").read_bytes())
    monkeypatch.chdir(root)
    run = sweep("data/p.jsonl", Grid.from_mapping(GRID), runs_dir="runs", progress=False)
    return root / run.path


def _other_owners(path: Path) -> None:
    """Rewrite the dataset at ``path``: the same ids, another first message."""
    owners = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    owners[0]["sessions"][0]["messages"][0]["content"] = "I am someone else entirely."
    path.write_text("".join(json.dumps(o) + "\n" for o in owners), encoding="utf-8")


def test_the_dataset_is_recorded_absolute_and_found_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = _swept(tmp_path / "project", monkeypatch)
    recorded = yaml.safe_load((run_dir / "grid.yaml").read_text(encoding="utf-8"))
    data = (tmp_path / "project" / "data" / "p.jsonl").resolve()
    assert recorded["dataset"] == str(data)
    assert recorded["dataset_sha256"] == _sha256(data)
    # From elsewhere, where a file of the same relative name holds something else.
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "data").mkdir(parents=True)
    (elsewhere / "data" / "p.jsonl").write_bytes(resolve_dataset("smoke").read_bytes())
    monkeypatch.chdir(elsewhere)
    assert main(["qa", str(run_dir), *QA]) == 0
    manifest = json.loads((run_dir / QA_MANIFEST).read_text(encoding="utf-8"))
    assert manifest["owners"] == OWNERS


@pytest.mark.parametrize(
    "command",
    [
        ["qa", "{run}", *QA],
        ["rescore", "{run}", "--matcher", "lexical"],
        ["report", "{run}", "-o", "{root}/report"],
    ],
    ids=["qa", "rescore", "report"],
)
def test_a_changed_dataset_is_refused_with_both_hashes(
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_dir = _swept(tmp_path, monkeypatch)
    data = tmp_path / "data" / "p.jsonl"
    replayed = _sha256(data)
    _other_owners(data)
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    capsys.readouterr()
    argv = [part.format(run=run_dir, root=tmp_path) for part in command]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(data.resolve()) in err
    assert replayed[:16] in err and _sha256(data)[:16] in err
    assert "sweep again" in err
    after = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    assert after == before  # nothing written


def test_a_fork_of_a_run_whose_dataset_changed_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = _swept(tmp_path, monkeypatch)
    lane = next(p.name for p in (run_dir / "lanes").iterdir())
    (tmp_path / "copy.jsonl").write_bytes((tmp_path / "data" / "p.jsonl").read_bytes())
    _other_owners(tmp_path / "data" / "p.jsonl")
    fork = {"run": str(run_dir), "lane": lane, "at_session": 2}
    grid = Grid.from_mapping({**GRID, "name": "forked", "fork": fork})
    with pytest.raises(memlab.MemlabError, match=r"not the dataset .* replayed"):
        sweep("copy.jsonl", grid, runs_dir="runs", progress=False)


def test_a_run_that_recorded_a_relative_path_is_found_by_its_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As older runs recorded it: relative to where the sweep was started (the folder
    holding ``runs/``). From another folder with a different file of that name, the
    replayed one is found; with only the different one there, it is refused."""
    run_dir = _swept(tmp_path / "project", monkeypatch)
    grid_file = run_dir / "grid.yaml"
    doc = yaml.safe_load(grid_file.read_text(encoding="utf-8"))
    doc["dataset"] = "data/p.jsonl"
    grid_file.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "data").mkdir(parents=True)
    (elsewhere / "data" / "p.jsonl").write_bytes(resolve_dataset("smoke").read_bytes())
    monkeypatch.chdir(elsewhere)
    assert main(["qa", str(run_dir), *QA]) == 0
    (tmp_path / "project" / "data" / "p.jsonl").unlink()
    capsys.readouterr()
    assert main(["qa", str(run_dir), *QA]) == 2
    err = capsys.readouterr().err
    assert str((elsewhere / "data" / "p.jsonl").resolve()) in err
    assert doc["dataset_sha256"][:16] in err


def _memlab(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    src = Path(memlab.__file__).resolve().parents[1]
    full = {
        **os.environ,
        **env,
        "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "memlab", *argv],
        cwd=cwd,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


@pytest.mark.parametrize(
    "command",
    [
        ["qa", "runs/r", *QA],
        ["rescore", "runs/r", "--matcher", "lexical"],
        ["sweep", "g.yaml", "--runs-dir", "runs", "--no-progress"],
        ["matcher", "audit", "runs/r", "--matcher", "lexical", "--sample", "4"],
    ],
    ids=["qa", "rescore", "sweep", "audit"],
)
def test_a_writer_stops_while_another_holds_the_run(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = _swept(tmp_path, monkeypatch)
    (tmp_path / "g.yaml").write_text(
        yaml.safe_dump({**GRID, "dataset": "data/p.jsonl"}), encoding="utf-8"
    )
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    with run_lock(run_dir, "holder-of-the-test"):
        stopped = _memlab(command, tmp_path, {})
        _, err = stopped.communicate(timeout=300)
    assert stopped.returncode == 2, err
    # Without memlab[embeddings] `memlab run` also warns that the matcher is default-lexical.
    lines = [line for line in err.strip().splitlines() if not line.startswith("WARNING ")]
    assert len(lines) == 1, err
    assert f"pid {os.getpid()}" in lines[0] and "memlab holder-of-the-test" in lines[0]
    after = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    assert after == before
    # Released: the same command now writes.
    done = _memlab(command, tmp_path, {})
    _, err = done.communicate(timeout=300)
    assert done.returncode == 0, err


def test_two_qa_processes_on_one_run_cannot_both_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first ``memlab qa`` is held inside its first answer call (the server waits for
    the test); the second, started then, stops with one line naming the first's pid. Once
    released, the first finishes and its answers are the run's."""
    _swept(tmp_path, monkeypatch)
    arrived, release = threading.Event(), threading.Event()

    def reply(body: dict[str, Any]) -> str:
        arrived.set()
        release.wait(timeout=300)  # a bound on a broken test, not the synchronisation
        return "I don't know."

    argv = ["qa", "runs/r", "--answer-backend", "openai:held-model"]
    argv += ["--judge-backend", "sim:careful", "--conditions", "memory", "--no-progress"]
    with FakeServer(reply=reply) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test"}
        first = _memlab(argv, tmp_path, env)
        try:
            assert arrived.wait(timeout=300), "the first QA step never called the model"
            second = _memlab(argv, tmp_path, env)
            _, second_err = second.communicate(timeout=300)
        finally:
            release.set()
        _, first_err = first.communicate(timeout=300)
    assert second.returncode == 2
    assert len(second_err.strip().splitlines()) == 1
    assert f"pid {first.pid}" in second_err and "memlab qa" in second_err
    assert first.returncode == 0, first_err
    manifest = json.loads((tmp_path / "runs" / "r" / QA_MANIFEST).read_text(encoding="utf-8"))
    assert manifest["identity"]["answer_backend"]["model"] == "held-model"


def test_the_lock_is_reentrant_on_its_thread_only(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "r"
    failed: list[BaseException] = []

    def other_thread() -> None:
        try:
            with run_lock(run_dir, "other"):
                pass
        except RunLockedError as exc:
            failed.append(exc)

    with run_lock(run_dir, "outer"), run_lock(run_dir, "inner"):
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
    assert len(failed) == 1 and "another thread of this process" in str(failed[0])
    assert lock_path(run_dir) == tmp_path / "runs" / ".r.lock"
    with run_lock(run_dir, "again"):  # released by the outer exit
        pass
