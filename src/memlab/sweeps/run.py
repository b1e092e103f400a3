"""A run directory and the DataFrames a notebook works with.

Layout of ``runs/<name>/``::

    grid.yaml            the sweep definition as resolved (lanes listed)
    environment.json     python, platform, package versions, start and end times
    manifest.json        written last: run format, this sweep's lanes and owners, what was
                         reused or replayed and why, row counts and hashes of the tables
    lanes/<lane_id>/config.json             grid point, identity, prompt template
    lanes/<lane_id>/owners/<user_id>.json   calls, snapshots, final memory (one per owner,
                                            written when that owner's replay finished)
    lanes/<lane_id>/stores/<user_id>.json   the lane's memory at the latest snapshot
    lanes/<lane_id>/stores/<user_id>.json.lock   the store's inter-process lock file
    calls.jsonl          one row per LLM call
    sessions.jsonl       one row per (lane, owner, session)
    summary.csv          one row per lane
    qa/answers.jsonl     memory QA (when asked): one row per (lane, sample, owner, question,
                         condition): the answer, its scores, verdicts and evidence fate
    qa/manifest.json     written last by the QA step: its settings, prompts, backends and
                         the row count and hash of the answer table

``lanes/`` may also hold lanes of earlier versions of the grid (an edited prompt makes a new
lane id); ``manifest.json`` names the lanes that belong to the run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from memlab.core.atomic import atomic_write_text
from memlab.core.jsontext import loads_json
from memlab.core.yamlio import read_yaml
from memlab.errors import MemlabError
from memlab.scoring.metrics import failure_table, summarize, violation_table
from memlab.scoring.qa_metrics import QA_COUNTS, judges_of, qa_session_counts
from memlab.scoring.stats import StatOptions
from memlab.sweeps.grid import Grid, LaneConfig
from memlab.sweeps.records import CallRow, QARow, SessionRow, read_rows
from memlab.sweeps.views import RUN_VIEWS

__all__ = [
    "QA_ANSWERS",
    "QA_FORMAT",
    "QA_MANIFEST",
    "RUN_FORMAT",
    "Run",
    "RunError",
    "file_facts",
    "flatten_call",
    "load_run",
    "read_record",
    "record_path",
    "refresh_manifest",
    "write_jsonl",
    "write_manifest",
]

RUN_FORMAT = 2
"""Version of the run directory layout; :func:`load_run` reads this version only."""

QA_FORMAT = 1
"""Version of the QA step's files; :attr:`Run.qa_answers` reads this version only."""
QA_ANSWERS = Path("qa") / "answers.jsonl"
QA_MANIFEST = Path("qa") / "manifest.json"

_TABLES = ("calls.jsonl", "sessions.jsonl")
logger = logging.getLogger(__name__)


class RunError(MemlabError, ValueError):
    """A run directory is missing or incomplete."""


def flatten_call(record: dict[str, Any], lane_id: str, user_id: str) -> dict[str, Any]:
    """Flatten an update record into a call-table row (parse fields become columns)."""
    row = {"lane_id": lane_id, "user_id": user_id, **record}
    row.pop("applied", None)  # fact-level bookkeeping stays in the owner records
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


def file_facts(path: Path) -> dict[str, Any]:
    """A table file's row count and SHA-256 (what a manifest records of it)."""
    data = path.read_bytes()
    return {"rows": data.count(b"\n"), "sha256": hashlib.sha256(data).hexdigest()}


def read_record(path: Path) -> dict[str, Any] | None:
    """A JSON object file of the run directory (an owner record, a lane description, the
    manifest), or ``None`` when it is missing or not a JSON object."""
    try:
        data = loads_json(path.read_bytes())
    except (OSError, ValueError):  # JsonDepthError is a ValueError too
        return None
    return data if isinstance(data, dict) else None


def record_path(run_path: Path, lane_id: str, user_id: str, sample: int = 0) -> Path:
    """Where the replay of ``user_id`` under ``lane_id`` (repeated sample ``sample``) is kept."""
    lane = run_path / "lanes" / lane_id
    if sample == 0:
        return lane / "owners" / f"{user_id}.json"
    return lane / "samples" / str(sample) / f"{user_id}.json"


def write_manifest(
    run_path: Path,
    *,
    lanes: list[str],
    owners: list[str],
    status: dict[str, dict[str, Any]],
    samples: int = 1,
) -> dict[str, Any]:
    """Write ``manifest.json`` (the last file of a sweep) and return it."""
    manifest = {
        "run_format": RUN_FORMAT,
        "complete": not any(s.get("incomplete") for s in status.values()),
        "lanes": lanes,
        "owners": owners,
        "samples": samples,
        "status": status,
        "files": {name: file_facts(run_path / name) for name in _TABLES},
    }
    atomic_write_text(run_path / "manifest.json", json.dumps(manifest, indent=2))
    return manifest


def refresh_manifest(run_path: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Rewrite ``manifest.json`` after the tables changed in place (a rescore)."""
    return write_manifest(
        run_path,
        lanes=manifest["lanes"],
        owners=manifest["owners"],
        status=manifest["status"],
        samples=manifest.get("samples", 1),
    )


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
    manifest: dict[str, Any] = field(default_factory=dict)
    """``manifest.json``: lanes, owners, per-lane reuse status, table checksums."""
    prices: dict[str, tuple[float, float]] | None = None
    """Price table for cost columns (model id prefix -> USD per 1M prompt/completion tokens);
    ``None`` uses the prices the backends declare (:func:`memlab.backends.registry.price_table`).
    Set it before reading ``summary``."""
    stats: StatOptions = field(default_factory=StatOptions)
    """Resamples, seed and levels of the summary's intervals and of comparisons."""
    qa_judge: str | None = None
    """The judge whose verdicts the summary's QA metrics count (``None``: the first judge of
    the QA step); :meth:`with_judge` gives the run under another one."""

    def __repr__(self) -> str:  # the tables and the manifest are too large for a repr
        return f"Run({self.name!r}, lanes={len(self.lanes)}, path={str(self.path)!r})"

    @property
    def name(self) -> str:
        """The run's name (its directory name)."""
        return self.path.name

    @cached_property
    def calls(self) -> pd.DataFrame:
        """One row per LLM call: lane, owner, session, reply, parse outcome, tokens, counts."""
        if self._calls is not None:
            return self._calls
        return pd.DataFrame(read_rows(self.path / "calls.jsonl", CallRow))

    @cached_property
    def sessions(self) -> pd.DataFrame:
        """One row per (lane, owner, session): facts, recall, precision, duplicates, ...

        With memory QA, each row also counts the questions asked right after the session,
        answered from the lane's memory and graded by :attr:`judge` (the ``qa_*`` counts).
        """
        if self._sessions is not None:
            rows = self._sessions
        else:
            rows = pd.DataFrame(read_rows(self.path / "sessions.jsonl", SessionRow))
        answers = self.qa_answers
        if answers.empty or rows.empty:
            return rows
        return _with_qa_counts(rows, qa_session_counts(answers, self.judge))

    @cached_property
    def qa_manifest(self) -> dict[str, Any]:
        """``qa/manifest.json`` ({} when the run has no memory QA)."""
        path = self.path / QA_MANIFEST
        if not path.is_file():
            return {}
        manifest = read_record(path)
        if manifest is None or manifest.get("qa_format") != QA_FORMAT:
            raise RunError(
                f"{path}: unreadable, or written by another memlab (QA format "
                f"{(manifest or {}).get('qa_format')!r}, this memlab reads {QA_FORMAT}); run "
                "the QA step again (memlab qa RUN)"
            )
        return manifest

    @cached_property
    def qa_answers(self) -> pd.DataFrame:
        """One row per memory-QA answer (:class:`~memlab.sweeps.records.QARow`); empty when
        the run has no memory QA.

        Raises:
            RunError: The answer table differs from what the QA manifest recorded.
        """
        manifest = self.qa_manifest
        if not manifest:
            return pd.DataFrame(columns=list(QARow.model_fields))
        path = self.path / QA_ANSWERS
        expected = manifest.get("files", {}).get(QA_ANSWERS.name)
        try:
            actual = file_facts(path)
        except OSError:
            raise RunError(f"{path}: missing; run the QA step again (memlab qa RUN)") from None
        if actual != expected:
            raise RunError(
                f"{path}: {actual['rows']} rows and another checksum than the QA manifest "
                "records: the file changed after the QA step; run it again (memlab qa RUN)"
            )
        return pd.DataFrame(read_rows(path, QARow), columns=list(QARow.model_fields))

    @property
    def judges(self) -> list[str]:
        """The judge prompts of the run's memory QA, in the order the QA step named them."""
        spec = self.qa_manifest.get("spec", {})
        named = spec.get("judges") if isinstance(spec, dict) else None
        return [str(j) for j in named] if named else judges_of(self.qa_answers)

    @property
    def judge(self) -> str:
        """The judge the summary's QA metrics use (:attr:`qa_judge`, else the first one)."""
        if self.qa_judge is not None:
            return self.qa_judge
        judges = self.judges
        return judges[0] if judges else ""

    def with_judge(self, judge: str) -> Run:
        """This run with its QA metrics counted under ``judge``.

        Raises:
            RunError: The run has no memory QA, or no judge of that name graded it.
        """
        known = self.judges
        if judge not in known:
            shown = ", ".join(known) if known else "none (the run has no memory QA)"
            raise RunError(f"run {self.name}: no judge {judge!r}; judges: {shown}")
        return dataclasses.replace(self, qa_judge=judge)

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per lane with the headline metrics and the lane's config columns."""
        sessions = self.sessions
        # Repeated samples of a lane (a "sample" column) are averaged within each owner.
        nested = "sample" if "sample" in sessions.columns else None
        summary = summarize(
            self.calls, sessions, prices=self.prices, options=self.stats, nested=nested
        )
        configs = pd.DataFrame(
            [
                {
                    "lane_id": lid,
                    "label": self.label(lid),
                    **c.model_dump(mode="json"),
                    "prompt_sha256": self.prompt_sha(lid),
                }
                for lid, c in self.lanes.items()
            ]
        )
        merged = configs.merge(summary, on="lane_id", how="left")
        return merged.set_index("lane_id")

    @property
    def complete(self) -> bool:
        """False when some replays had backend errors (see :attr:`lane_status`)."""
        return bool(self.manifest.get("complete", True))

    @cached_property
    def lane_status(self) -> pd.DataFrame:
        """Per lane: replays reused and replayed by the sweep that wrote the run, and why."""
        rows = []
        for lane_id in self.lanes:
            status = self.manifest.get("status", {}).get(lane_id, {})
            reasons = status.get("reasons", {})
            rows.append(
                {
                    "lane_id": lane_id,
                    "label": self.label(lane_id),
                    "reused": status.get("reused", 0),
                    "replayed": status.get("replayed", 0),
                    "why": "; ".join(f"{reason} ({n})" for reason, n in reasons.items()),
                    "incomplete": len(status.get("incomplete", [])),
                }
            )
        return pd.DataFrame(rows).set_index("lane_id") if rows else pd.DataFrame()

    def prompt_sha(self, lane_id: str) -> str:
        """Short content hash of the lane's prompt template ("" when not recorded)."""
        try:
            return str(self.lane_info(lane_id).get("prompt", {}).get("sha256", ""))[:8]
        except RunError:
            return ""

    def lane_info(self, lane_id: str) -> dict[str, Any]:
        """``lanes/<lane_id>/config.json``: grid point, identity and prompt (name, hash, text)."""
        path = self.path / "lanes" / lane_id / "config.json"
        try:
            data = loads_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunError(f"{path}: cannot read the lane description: {exc}") from exc
        return data if isinstance(data, dict) else {}

    @cached_property
    def environment(self) -> dict[str, Any]:
        """``environment.json``: versions, times and optional measures ({} when absent)."""
        try:
            data = loads_json((self.path / "environment.json").read_text(encoding="utf-8"))
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
            data = read_yaml(grid_file).data
        except MemlabError:
            return None
        dataset = data.get("dataset") if isinstance(data, dict) else None
        if not dataset or not Path(dataset).is_file():
            return None
        return Path(dataset)

    def _repr_html_(self) -> str | None:
        """In Jupyter: the run's registered HTML view (:data:`~memlab.sweeps.views.RUN_VIEWS`;
        memlab.reporting registers the headline metrics, what the sweep reused and the key
        charts), or ``None`` (the text repr) without one."""
        view = RUN_VIEWS.get("html")
        return view(self) if view is not None else None

    def label(self, lane_id: str) -> str:
        """A short label for a lane naming only the axes that vary in this run."""
        return self.lanes[lane_id].label(self.grid.varying())

    def final_memory(self, lane_id: str, user_id: str, sample: int = 0) -> dict[str, Any]:
        """The memory document of ``user_id`` at the end of ``lane_id``'s replay."""
        path = record_path(self.path, lane_id, user_id, sample)
        data: dict[str, Any] = loads_json(path.read_text(encoding="utf-8"))
        return dict(data["final_memory"])

    @property
    def owner_ids(self) -> list[str]:
        """The owners this run replayed (from the manifest: a lane directory may still hold
        records of owners an earlier sweep of the same name had)."""
        owners = self.manifest.get("owners")
        if owners is not None:
            return [str(owner) for owner in owners]
        found = self.path.glob("lanes/*/owners/*.json")  # a run built in memory: no manifest
        return sorted({path.stem for path in found})

    def final_facts(self, lane_id: str) -> pd.DataFrame:
        """Every stored fact at the end of a lane, one row per (owner, fact)."""
        rows = []
        for user_id in self.owner_ids:
            path = record_path(self.path, lane_id, user_id)
            if not path.is_file():
                continue
            data = loads_json(path.read_text(encoding="utf-8"))
            for fact in data["final_memory"].get("facts", []):
                rows.append({"user_id": data["user_id"], **fact})
        return pd.DataFrame(rows)


def load_run(path: str | Path) -> Run:
    """Load a run directory written by :func:`memlab.sweep`.

    Raises:
        RunError: The directory is not a finished run of this format, or its tables differ
            from what the manifest recorded (a truncated or edited file, a sweep that stopped).
    """
    path = Path(path)
    grid_file = path / "grid.yaml"
    if not grid_file.is_file():
        raise RunError(f"{path}: not a memlab run directory (no grid.yaml)")
    manifest = _read_manifest(path)
    try:
        data = read_yaml(grid_file).data
        grid = Grid.from_mapping(data["grid"], source=str(grid_file))
        configs = data["lanes"]
        lanes = {
            lane_id: LaneConfig.model_validate(configs[lane_id]) for lane_id in manifest["lanes"]
        }
    except (OSError, MemlabError, KeyError, TypeError, ValueError) as exc:
        raise RunError(f"{grid_file}: unreadable or does not match manifest.json: {exc}") from exc
    return Run(path=path, grid=grid, lanes=lanes, manifest=manifest)


def _read_manifest(path: Path) -> dict[str, Any]:
    manifest_file = path / "manifest.json"
    if not manifest_file.is_file():
        raise RunError(
            f"{path}: the run did not finish (no manifest.json; a sweep stopped, or an older "
            "memlab wrote it); rerun the sweep to resume it"
        )
    try:
        manifest = loads_json(manifest_file.read_text(encoding="utf-8"))
        run_format = manifest.get("run_format")
    except (OSError, ValueError, AttributeError) as exc:
        raise RunError(f"{manifest_file}: unreadable: {exc}") from exc
    if run_format != RUN_FORMAT:
        raise RunError(
            f"{manifest_file}: run format {run_format!r}, this memlab reads format "
            f"{RUN_FORMAT}; rerun the sweep with this memlab"
        )
    for name, expected in manifest.get("files", {}).items():
        try:
            actual = file_facts(path / name)
        except OSError:
            raise RunError(f"{path / name}: missing; rerun the sweep") from None
        if actual != expected:
            raise RunError(
                f"{path / name}: {actual['rows']} rows, the manifest records {expected['rows']} "
                "and another checksum: the file changed after the sweep; rerun the sweep"
            )
    return dict(manifest)


def _with_qa_counts(rows: pd.DataFrame, counts: pd.DataFrame) -> pd.DataFrame:
    """Session rows with each session's QA counts (0 where no question was asked)."""
    keys = ["lane_id", "user_id", "session_index"]
    if "sample" in rows.columns:
        keys.append("sample")
    else:
        counts = counts[counts["sample"] == 0].drop(columns="sample")
    merged = rows.merge(counts, on=keys, how="left")
    merged[list(QA_COUNTS)] = merged[list(QA_COUNTS)].fillna(0)
    return merged
