"""Builders for small test datasets and scripted model replies."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from memlab.backends.scripted import ScriptedBackend
from memlab.core.jsondoc.contract import MINIMAL_VALID_UPDATE
from memlab.core.pipeline.llm import Backend, CompletionRequest
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid
from memlab.runs.run import Run
from memlab.scoring.comparing.comparability import LaneFacts
from memlab.scoring.count_specs import COUNT_SPECS
from memlab.scoring.inference.stats import StatOptions
from memlab.scoring.metrics import owner_counts
from memlab.sweeps.driver import sweep

if TYPE_CHECKING:
    from memlab.cli.experiment.demo import DemoResult

__all__ = [
    "CALIBRATION_KINDS",
    "FAKE_OWNERS",
    "FakeRun",
    "cache_entries",
    "city_owners",
    "copied_personas",
    "count_frames",
    "iso",
    "json_values",
    "kill_slow_sweep",
    "locomo_sample",
    "marker_backend",
    "mutated_json",
    "one_turn",
    "resolve_removals",
    "small_demo",
    "sweep_scripted",
    "update",
    "write_owners",
]


def iso(moment: datetime) -> str:
    """The dataset's timestamp form: ISO 8601 with a ``Z``."""
    return moment.isoformat().replace("+00:00", "Z")


def update(*facts: str | tuple[str, float], remove: Sequence[str] = ()) -> str:
    """A valid update reply adding ``facts`` (text, or (text, confidence); default 0.9).

    ``remove`` names stored facts by content; :func:`marker_backend` replaces each with the
    fact's id from the memory in the prompt (``"@" + content`` until then).
    """
    data = json.loads(json.dumps(MINIMAL_VALID_UPDATE))
    data["newFacts"] = [
        {"content": fact, "category": "context", "confidence": 0.9}
        if isinstance(fact, str)
        else {"content": fact[0], "category": "context", "confidence": fact[1]}
        for fact in facts
    ]
    data["factsToRemove"] = [f"@{content}" for content in remove]
    return json.dumps(data)


_STORED = re.compile(r'"id": "([^"]+)",\s*"content": "((?:[^"\\]|\\.)*)"')


def resolve_removals(reply: str, prompt: str) -> str:
    """``reply`` with each ``"@content"`` removal replaced by that stored fact's id."""
    if '"@' not in reply:
        return reply
    ids = {json.loads(f'"{content}"'): fact_id for fact_id, content in _STORED.findall(prompt)}
    data = json.loads(reply)
    data["factsToRemove"] = [
        ids.get(item[1:], item) if item.startswith("@") else item for item in data["factsToRemove"]
    ]
    return json.dumps(data)


def one_turn(
    thread: str, start: datetime, human: str, ai: str = "OK.", **labels: Any
) -> dict[str, Any]:
    """A session of one human message and the AI's answer two seconds later."""
    return {
        "thread_id": thread,
        "started_at": iso(start),
        "messages": [
            {"role": "human", "content": human, "timestamp": iso(start)},
            {"role": "ai", "content": ai, "timestamp": iso(start + timedelta(seconds=2))},
        ],
        "labels": labels,
    }


def marker_backend(replies: Mapping[str, str]) -> ScriptedBackend:
    """A scripted model answering with the reply of the first marker found in the prompt.

    Markers are conversation phrases that never appear in the stored memory JSON. A prompt
    without a marker gets a valid update that changes nothing. Removals written by
    :func:`update` get the ids of the stored facts they name.
    """

    def reply(request: CompletionRequest) -> str:
        prompt = str(request.messages[-1]["content"])
        text = next((text for marker, text in replies.items() if marker in prompt), update())
        return resolve_removals(text, prompt)

    return ScriptedBackend(function=reply)


def cache_entries(cache: Path) -> list[Path]:
    """The response entries of a cache directory: the files of its two-letter shards (not the
    matcher verdicts saved beside them)."""
    return sorted(p for p in cache.glob("*/*.json") if len(p.parent.name) == 2)


def copied_personas(path: Path, copies: int) -> Path:
    """The bundled personas dataset ``copies`` times at ``path``, each copy's owners renamed
    ``<id>_<k>`` and its messages tagged ``(k)`` (the simulated model's draws depend on the
    owner and the conversation, so each copy is an owner of its own)."""
    rows = [
        json.loads(line) for line in resolve_dataset("personas").read_text("utf-8").splitlines()
    ]
    out = []
    for k in range(copies):
        for row in rows:
            copy = json.loads(json.dumps(row))
            copy["user_id"] = f"{row['user_id']}_{k}"
            for session in copy["sessions"]:
                for message in session["messages"]:
                    if isinstance(message["content"], str):  # list content: left as it is
                        message["content"] = f"({k}) {message['content']}"
            out.append(json.dumps(copy))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def write_owners(path: Path, owners: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``owners`` as a JSONL dataset (one owner a line) at ``path``; return ``path``."""
    path.write_text("".join(json.dumps(owner) + "\n" for owner in owners), encoding="utf-8")
    return path


def sweep_scripted(dataset: Path, grid: Mapping[str, Any], backend: Backend, runs_dir: Path) -> Run:
    """Sweep ``grid`` over ``dataset`` with ``backend`` answering for every lane (no progress)."""
    return sweep(
        dataset,
        Grid.from_mapping(dict(grid)),
        runs_dir=runs_dir,
        backend_factory=lambda spec: backend,
        progress=False,
    )


def small_demo(tmp: Path, backend: Backend) -> DemoResult:
    """``memlab demo`` on one owner and two sessions under ``tmp``, ``backend`` answering."""
    from memlab.cli.experiment.demo import run_demo  # the demo imports the whole reporting stack

    return run_demo(
        tmp / "report",
        runs_dir=tmp / "runs",
        cache_dir=tmp / "cache",
        max_owners=1,
        max_sessions=2,
        backend_factory=lambda _spec: backend,
        progress=False,
    )


def locomo_sample(**changes: Any) -> dict[str, Any]:
    """A one-session LoCoMo sample (Ann and Bob, one observation) with ``changes`` applied.

    Keys of ``changes`` are dotted paths (``"conversation.session_1.0.speaker"``; list
    indices are numbers); each sets that value.
    """
    sample: dict[str, Any] = {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "9:00 am on 2 March, 2024",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I moved to Lisbon."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice!"},
            ],
        },
        "observation": {"session_1_observation": {"Ann": [["Ann lives in Lisbon", "D1:1"]]}},
    }
    for dotted, value in changes.items():
        target = sample
        *parents, last = dotted.split(".")
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[last] = value
    return sample


CALIBRATION_KINDS = frozenset(
    {
        "paraphrase",
        "person",
        "partial",
        "polarity_flip",
        "other_value",
        "unrelated",
        "negative_restated",
        "chinese",
        "locomo",
    }
)
"""The kinds of calibration pairs the matching issue asks for."""


def city_owners(start: datetime, *, follow_up: bool = False) -> list[dict[str, Any]]:
    """ann (Leeds) and bob (Porto): one session saying where each lives, with that gold fact;
    with ``follow_up`` a second session a day later that says nothing memorable."""
    owners = []
    for user, city in (("ann", "Leeds"), ("bob", "Porto")):
        gold = [{"id": "g1", "content": f"Lives in {city}", "category": "context"}]
        sessions = [one_turn(f"{user}-1", start, f"I live in {city}.", facts=gold)]
        if follow_up:
            sessions.append(one_turn(f"{user}-2", start + timedelta(days=1), "Thanks."))
        owners.append({"user_id": user, "sessions": sessions})
    return owners


def json_values(keys: Sequence[str], strings: Sequence[str]) -> st.SearchStrategy[Any]:
    """Small JSON values from these object keys and strings, NaN and infinities included."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers(min_value=-3, max_value=3)
        | st.floats(min_value=-2, max_value=2)
        | st.sampled_from([float("nan"), float("inf"), 0.5, 1.0, 1.5, -0.1])
        | st.sampled_from(["", " ", "\n", *strings]),
        lambda children: (
            st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(keys), children)
        ),
        max_leaves=6,
    )


def _json_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_json_paths(item, (*path, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_json_paths(item, (*path, index)))
    return found


@st.composite
def mutated_json(
    draw: st.DrawFn,
    seed: Any,
    values: st.SearchStrategy[Any],
    keys: Sequence[str],
    max_edits: int = 3,
) -> Any:
    """A deep copy of ``seed`` after up to ``max_edits`` random edits (replace, delete, add).

    Each edit picks any node; new values come from ``values``, new object keys from ``keys``.
    Zero edits leaves the seed as it was, so valid documents are drawn too.
    """
    doc: Any = json.loads(json.dumps(seed))
    for _ in range(draw(st.integers(min_value=0, max_value=max_edits))):
        path = draw(st.sampled_from(_json_paths(doc)))
        if not path:
            if draw(st.booleans()):
                doc = draw(values)
            continue
        *parent_path, last = path
        parent = doc
        for step in parent_path:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            parent[last] = draw(values)
        elif action == "delete":
            del parent[last]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(keys))] = draw(values)
        else:
            parent.append(draw(values))
    return doc


# ---------------------------------------------------------------------- counts without a sweep

FAKE_OWNERS = 14
"""Owners of each lane :func:`count_frames` builds."""


@dataclass
class FakeRun:
    """What scoring reads of a run (:class:`memlab.scoring.comparing.comparison.ScoredRun`)."""

    name: str
    calls: pd.DataFrame
    sessions: pd.DataFrame
    primary: tuple[str, ...] | None = None
    stats: StatOptions = field(default_factory=lambda: StatOptions(resamples=1000))
    prices: dict[str, tuple[float, float]] | None = None

    @property
    def lanes(self) -> dict[str, Any]:
        return {lane: None for lane in dict.fromkeys(self.sessions["lane_id"])}

    @property
    def owner_counts(self) -> pd.DataFrame:
        nested = "sample" if "sample" in self.sessions.columns else None
        return owner_counts(self.calls, self.sessions, prices=self.prices, nested=nested)

    def label(self, lane_id: str) -> str:
        return lane_id

    def lane_facts(self, lane_id: str) -> LaneFacts:
        # Every fake lane is measured alike: these tests are about the statistics.
        return LaneFacts(self.name, lane_id)


def count_frames(per_lane: dict[str, dict[str, np.ndarray]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One session and one call per (lane, owner) with the given counts (others 0)."""
    sessions, calls = [], []
    for lane, counts in per_lane.items():
        for o in range(FAKE_OWNERS):
            row = {
                "lane_id": lane,
                "user_id": f"u{o:02d}",
                "session_index": 0,
                **{name: 0 for name in _FAKE_ROW_COUNTS},
                "agent_runs": 1,
            }
            row.update({name: float(values[o]) for name, values in counts.items()})
            sessions.append(row)
            failed = bool(counts.get("failed", np.zeros(FAKE_OWNERS))[o])
            calls.append(
                {
                    "lane_id": lane,
                    "user_id": f"u{o:02d}",
                    "reply": "x",
                    "parse_ok": not failed,
                    "error_stage": "parse" if failed else None,
                    "model": "sim",
                    "prompt_tokens": 10,
                    "completion_tokens": 5,
                    "cached": False,
                }
            )
    frame = pd.DataFrame(sessions).drop(columns=["failed"], errors="ignore")
    return pd.DataFrame(calls), frame


# Every count a session row has (the scripted calls give llm_calls, agent_runs is set above).
_FAKE_ROW_COUNTS = tuple(
    spec.column for spec in COUNT_SPECS if spec.in_rows and spec.column != "llm_calls"
)


_SLOW_SWEEP = textwrap.dedent(
    """
    import json, sys, time
    from memlab.simulation.model import SimulatedBackend
    from memlab.sweeps.driver import sweep
    from memlab.grids.grid import Grid

    class Slow(SimulatedBackend):
        def complete(self, request):
            time.sleep(0.3)
            return super().complete(request)

    dataset, grid = sys.argv[2], json.loads(sys.argv[3])
    backend = Slow("careful", dataset=dataset)
    sweep(dataset, Grid.from_mapping(grid), runs_dir=sys.argv[1], max_workers=1,
          backend_factory=lambda spec: backend, progress=False)
    """
)


def kill_slow_sweep(dataset: str, grid: Mapping[str, Any], runs: Path) -> None:
    """Sweep ``grid`` on ``dataset`` with a slowed ``sim:careful`` in a child process, and kill
    it (SIGKILL) a second into the replay after the first finished owner: while that owner's
    stores are being written."""
    lanes = runs / str(grid["name"]) / "lanes"
    child = subprocess.Popen(
        [sys.executable, "-c", _SLOW_SWEEP, str(runs), dataset, json.dumps(dict(grid))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    try:
        deadline = time.monotonic() + 300
        while len(list(lanes.glob("*/owners/*.json"))) < 1:
            assert child.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "no replay finished in time"
            time.sleep(0.05)
        time.sleep(1.0)  # into the next owner's replay: its stores are being written
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
