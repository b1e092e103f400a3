"""A run directory and the DataFrames a notebook works with.

Layout of ``runs/<name>/``::

    grid.yaml            the sweep definition as resolved (lanes listed)
    environment.json     python, platform, package versions, start and end times
    lanes/<lane_id>/config.json
    lanes/<lane_id>/owners/<user_id>.json   calls, snapshots, final memory (one per owner,
                                            written when that owner's replay finished)
    lanes/<lane_id>/stores/<user_id>.json   the lane's memory at the latest snapshot
    lanes/<lane_id>/stores/<user_id>.json.lock   the store's inter-process lock file
    calls.jsonl          one row per LLM call
    sessions.jsonl       one row per (lane, owner, session)
    summary.csv          one row per lane
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from memlab.core.atomic import atomic_write_text
from memlab.errors import MemlabError
from memlab.eval.grid import Grid, LaneConfig
from memlab.eval.metrics import failure_table, summarize, violation_table

__all__ = ["Run", "RunError", "flatten_call", "load_run", "write_jsonl"]

logger = logging.getLogger(__name__)


class RunError(MemlabError, ValueError):
    """A run directory is missing or incomplete."""


def flatten_call(record: dict[str, Any], lane_id: str, user_id: str) -> dict[str, Any]:
    """Flatten an update record into a call-table row (parse fields become columns)."""
    row = {"lane_id": lane_id, "user_id": user_id, **record}
    parse = row.pop("parse", None) or {}
    row["parse_ok"] = bool(parse.get("ok", False))
    row["parse_rung"] = parse.get("rung")
    row["parse_category"] = parse.get("category")
    row["parse_wrappers"] = ",".join(parse.get("wrappers", []) or [])
    row["violations"] = parse.get("violations", []) or []
    row["n_violations"] = len(row["violations"])
    return row


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Atomically write ``rows`` as JSON lines."""
    text = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows)
    atomic_write_text(path, text)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@dataclass
class Run:
    """A finished (or loaded) sweep: its lanes and the tables computed from its records.

    Attributes:
        path: The run directory.
        grid: The sweep definition.
        lanes: Lane configs by lane id, in grid order.
        prices: Optional price table for the cost columns.
    """

    path: Path
    grid: Grid
    lanes: dict[str, LaneConfig]
    _calls: pd.DataFrame | None = field(default=None, repr=False)
    _sessions: pd.DataFrame | None = field(default=None, repr=False)
    prices: dict[str, tuple[float, float]] | None = None
    """Price table for cost columns (model id prefix -> USD per 1M prompt/completion tokens);
    ``None`` uses :data:`memlab.eval.metrics.DEFAULT_PRICES`. Set it before reading ``summary``."""

    @property
    def name(self) -> str:
        """The run's name (its directory name)."""
        return self.path.name

    @cached_property
    def calls(self) -> pd.DataFrame:
        """One row per LLM call: lane, owner, session, reply, parse outcome, tokens, counts."""
        if self._calls is not None:
            return self._calls
        return pd.DataFrame(_read_jsonl(self.path / "calls.jsonl"))

    @cached_property
    def sessions(self) -> pd.DataFrame:
        """One row per (lane, owner, session): facts, recall, precision, duplicates, ..."""
        if self._sessions is not None:
            return self._sessions
        return pd.DataFrame(_read_jsonl(self.path / "sessions.jsonl"))

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per lane with the headline metrics and the lane's config columns."""
        summary = summarize(self.calls, self.sessions, prices=self.prices)
        configs = pd.DataFrame(
            [
                {"lane_id": lid, "label": self.label(lid), **c.model_dump(mode="json")}
                for lid, c in self.lanes.items()
            ]
        )
        merged = configs.merge(summary, on="lane_id", how="left")
        return merged.set_index("lane_id")

    @cached_property
    def environment(self) -> dict[str, Any]:
        """``environment.json``: versions, times and optional measures ({} when absent)."""
        try:
            data = json.loads((self.path / "environment.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @cached_property
    def failures(self) -> pd.DataFrame:
        """Parse outcomes (failure category or ``ok:<rung>``) per lane."""
        return failure_table(self.calls)

    @cached_property
    def violations(self) -> pd.DataFrame:
        """Schema violations counted by lane, pointer and keyword."""
        return violation_table(self.calls)

    @cached_property
    def dataset_path(self) -> Path | None:
        """The dataset file the run replayed (as recorded in ``grid.yaml``), if it still exists."""
        grid_file = self.path / "grid.yaml"
        try:
            data = yaml.safe_load(grid_file.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            return None
        dataset = data.get("dataset") if isinstance(data, dict) else None
        if not dataset or not Path(dataset).is_file():
            return None
        return Path(dataset)

    def label(self, lane_id: str) -> str:
        """A short label for a lane naming only the axes that vary in this run."""
        return self.lanes[lane_id].label(self.grid.varying())

    def final_memory(self, lane_id: str, user_id: str) -> dict[str, Any]:
        """The memory document of ``user_id`` at the end of ``lane_id``'s replay."""
        path = self.path / "lanes" / lane_id / "owners" / f"{user_id}.json"
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return dict(data["final_memory"])

    def final_facts(self, lane_id: str) -> pd.DataFrame:
        """Every stored fact at the end of a lane, one row per (owner, fact)."""
        rows = []
        owners_dir = self.path / "lanes" / lane_id / "owners"
        for path in sorted(owners_dir.glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            for fact in data["final_memory"].get("facts", []):
                rows.append({"user_id": data["user_id"], **fact})
        return pd.DataFrame(rows)


def load_run(path: str | Path) -> Run:
    """Load a run directory written by :func:`memlab.sweep`."""
    path = Path(path)
    grid_file = path / "grid.yaml"
    if not grid_file.exists():
        raise RunError(f"{path}: not a memlab run directory (no grid.yaml)")
    if not (path / "calls.jsonl").exists():
        raise RunError(
            f"{path}: the run did not finish (no calls.jsonl); rerun the sweep to resume"
        )
    data = yaml.safe_load(grid_file.read_text(encoding="utf-8"))
    grid = Grid.from_mapping(data["grid"], source=str(grid_file))
    lanes = {
        lane_id: LaneConfig.model_validate(config) for lane_id, config in data["lanes"].items()
    }
    return Run(path=path, grid=grid, lanes=lanes)
