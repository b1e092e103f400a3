"""A sweep killed with SIGKILL resumes: finished replays are kept, failed and unfinished ones
are replayed, and the run ends with every owner exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from builders import update

from memlab.backends.scripted import ScriptedBackend
from memlab.core.pipeline.llm import CompletionRequest
from memlab.grids.grid import Grid
from memlab.runs.run import load_run
from memlab.sweeps.driver import sweep

GRID = {"name": "killed", "replay_mode": "per_session", "max_sessions": 2}

# The child sweeps personas with a slow model that fails for two owners.
CHILD = textwrap.dedent(
    """
    import sys, time
    from memlab.core.pipeline.llm import BackendError
    from memlab.backends.scripted import ScriptedBackend
    from memlab.grids.grid import Grid
    from memlab.sweeps.driver import sweep

    FAILING = ("paediatric nurse", "Frachtwerk")  # amara's and daniel's first sessions

    def slow(request):
        time.sleep(0.15)
        prompt = str(request.messages[-1]["content"])
        if any(marker in prompt for marker in FAILING):
            raise BackendError("connection refused")
        return REPLY

    REPLY = sys.argv[2]
    sweep("personas", Grid.from_mapping(GRID), runs_dir=sys.argv[1], max_workers=2,
          backend_factory=lambda spec: ScriptedBackend(function=slow), progress=False,
          allow_incomplete=True)
    """
).replace("GRID", repr(GRID))


def test_a_killed_sweep_resumes_with_every_owner_once(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    owners_dir = runs / "killed" / "lanes"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(runs), update()],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while len(list(owners_dir.glob("*/owners/*.json"))) < 4:
            assert child.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "no replay finished in time"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    finished = {p.stem for p in owners_dir.glob("*/owners/*.json")}
    assert 4 <= len(finished) < 14
    assert not (runs / "killed" / "manifest.json").exists()  # not a finished run

    calls: list[str] = []

    def healthy(request: CompletionRequest) -> str:
        calls.append(str(request.messages[-1]["content"]))
        return update()

    run = sweep(
        "personas",
        Grid.from_mapping(GRID),
        runs_dir=runs,
        backend_factory=lambda spec: ScriptedBackend(function=healthy),
        progress=False,
    )
    assert run.complete
    status = run.lane_status.iloc[0]
    assert status["reused"] + status["replayed"] == 14
    # Two workers take the owners in order: the first two (which fail) finished before the kill.
    failed_before = {"amara", "daniel"}
    assert failed_before <= finished
    assert status["reused"] == len(finished - failed_before)
    why = str(status["why"])
    assert "earlier replay had backend errors (2)" in why
    assert f"new ({14 - len(finished)})" in why
    sessions = run.sessions
    assert sessions["user_id"].nunique() == 14
    assert sessions.groupby("user_id").size().eq(2).all()  # every owner exactly once
    assert len(calls) == 2 * status["replayed"]
    loaded = load_run(run.path)
    assert json.loads((run.path / "manifest.json").read_text())["owners"] == list(
        loaded.manifest["owners"]
    )
