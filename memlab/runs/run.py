"""A finished run read as the DataFrames a notebook works with (:class:`Run`, :func:`load_run`).

The run directory's layout, writes, checksums and manifest belong to
:class:`memlab.runs.rundir.RunDir` (its docstring draws the layout); a :class:`Run` reads
through it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel

from memlab.core.base.safe_names import unsafe_reason
from memlab.core.base.yamlio import read_yaml
from memlab.errors import MemlabError, excerpt
from memlab.grids.grid import Grid
from memlab.grids.lane import LaneConfig
from memlab.runs.final_reads import parse_final_memory
from memlab.runs.lane_facts import dataset_identity, qa_facts, read_lane_facts
from memlab.runs.records import CallRow, QARow, SessionRow, read_rows
from memlab.runs.run_dataset import recorded_dataset
from memlab.runs.rundir import (
    QA_ANSWERS,
    QA_FORMAT,
    QA_MANIFEST,
    RUN_FORMAT,
    TABLES,
    RunDir,
    RunError,
)
from memlab.runs.table_copy import encode_table, keep_copy, read_copy, read_table
from memlab.runs.views import RUN_VIEWS
from memlab.scoring.comparing.comparability import LaneFacts, QAFacts
from memlab.scoring.inference.stats import StatOptions
from memlab.scoring.metrics import (
    failure_table,
    owner_counts,
    summarize_counts,
    violation_table,
)
from memlab.scoring.qa.qa_metrics import QA_COUNTS, qa_session_counts
from memlab.scoring.qa.qa_verdicts import error_counts, judges_of

__all__ = ["Run", "RunError", "flatten_call", "keep_table_copies", "load_run"]

logger = logging.getLogger(__name__)


def flatten_call(record: dict[str, Any], lane_id: str, user_id: str) -> dict[str, Any]:
    """Flatten an update record into a call-table row (parse fields become columns)."""
    row = {"lane_id": lane_id, "user_id": user_id, **record}
    row.pop("applied", None)  # fact-level bookkeeping stays in the owner records
    row.pop("below_threshold", None)  # a tiered memory's rated key points, likewise
    parse = row.pop("parse", None) or {}
    row["parse_ok"] = bool(parse.get("ok", False))
    row["parse_rung"] = parse.get("rung")
    row["parse_category"] = parse.get("category")
    row["parse_wrappers"] = ",".join(parse.get("wrappers", []) or [])
    row["violations"] = parse.get("violations", []) or []
    row["n_violations"] = len(row["violations"])
    return row


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
    keep_copies: bool = False
    """Encode each table parsed from its rows (and each lane's final facts parsed from its
    owner records) as a columnar copy, written by :meth:`keep_table_copies` (``memlab
    report`` and ``memlab compare`` do)."""

    @cached_property
    def dir(self) -> RunDir:
        """The run directory's owner: its layout, reads and writes."""
        return RunDir(self.path)

    def __repr__(self) -> str:  # the tables and the manifest are too large for a repr
        return f"Run({self.name!r}, lanes={len(self.lanes)}, path={str(self.path)!r})"

    @property
    def name(self) -> str:
        """The run's name (its directory name)."""
        return self.path.name

    @property
    def primary(self) -> tuple[str, ...] | None:
        """The grid's primary metrics (``None``: those the metric specs declare)."""
        return tuple(self.grid.primary) if self.grid.primary is not None else None

    @cached_property
    def calls(self) -> pd.DataFrame:
        """One row per LLM call: lane, owner, session, reply, parse outcome, tokens, counts."""
        if self._calls is not None:
            return self._calls
        return self._table("calls.jsonl", CallRow)

    @cached_property
    def sessions(self) -> pd.DataFrame:
        """One row per (lane, owner, session): facts, recall, precision, duplicates, ...

        With memory QA, each row also counts the questions asked right after the session,
        answered from the lane's memory and graded by :attr:`judge` (the ``qa_*`` counts).
        """
        if self._sessions is not None:
            rows = self._sessions
        else:
            rows = self._table("sessions.jsonl", SessionRow)
        answers = self.qa_answers
        if answers.empty or rows.empty:
            return rows
        return _with_qa_counts(rows, qa_session_counts(answers, self.judge))

    def _table(self, name: str, model: type[BaseModel]) -> pd.DataFrame:
        """The table ``name``, from its columnar copy when that is current
        (:mod:`memlab.runs.table_copy`); with :attr:`keep_copies`, a table parsed from its
        rows leaves its copy for :meth:`keep_table_copies`."""
        facts = self.manifest.get("files", {}).get(name)
        expected = facts if isinstance(facts, dict) else None
        frame, copy = read_table(self.dir, name, model, expected, copy=self.keep_copies)
        if copy is not None:
            self._unkept_copies[name] = copy
        return frame

    @cached_property
    def _unkept_copies(self) -> dict[str, bytes]:
        return {}

    def keep_table_copies(self) -> None:
        """Write the columnar copies of the tables and final facts this run parsed (with
        :attr:`keep_copies`), so that the next read of the run skips the parse; a command
        calls it once it has succeeded, so that a refused command writes nothing into the
        run."""
        for name, data in self._unkept_copies.items():
            keep_copy(self.dir, name, data)
        self._unkept_copies.clear()

    @cached_property
    def qa_manifest(self) -> dict[str, Any]:
        """``qa/manifest.json`` ({} when the run has no memory QA)."""
        path = self.dir.file(QA_MANIFEST)
        if not path.exists():
            return {}
        manifest = self.dir.read_object(path)
        if manifest is None or manifest.get("qa_format") != QA_FORMAT:
            raise RunError(
                f"{path}: unreadable, or written by another memlab (QA format "
                f"{(manifest or {}).get('qa_format')!r}, this memlab reads {QA_FORMAT}); run "
                "the QA step again (memlab qa RUN)"
            )
        return manifest

    @cached_property
    def qa_answers(self) -> pd.DataFrame:
        """One row per memory-QA answer (:class:`~memlab.runs.records.QARow`); empty when
        the run has no memory QA.

        Raises:
            RunError: The answer table differs from what the QA manifest recorded.
        """
        manifest = self.qa_manifest
        if not manifest:
            return pd.DataFrame(columns=list(QARow.model_fields))
        path = self.dir.file(QA_ANSWERS)
        expected = manifest.get("files", {}).get(QA_ANSWERS.name) or {}
        self.dir.check_table(path, expected, "the QA step", "run it again (memlab qa RUN)")
        rows = read_rows(path, QARow, inside=self.path)
        return pd.DataFrame(rows, columns=list(QARow.model_fields))

    @property
    def judges(self) -> list[str]:
        """The judge prompts of the run's memory QA, in the order the QA step named them."""
        spec = self.qa_manifest.get("spec", {})
        named = spec.get("judges") if isinstance(spec, dict) else None
        return [str(j) for j in named] if named else judges_of(self.qa_answers)

    @cached_property
    def qa_error_counts(self) -> dict[str, int]:
        """:func:`~memlab.scoring.qa.qa_verdicts.error_counts` of :attr:`qa_answers` under
        every judge, counted once per run like the table it reads (a run read again, e.g.
        after its QA step, counts again). Read it, don't change it."""
        return error_counts(self.qa_answers, self.judges)

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
    def owner_counts(self) -> pd.DataFrame:
        """The per-owner counts every metric of the run is built from
        (:func:`memlab.scoring.metrics.owner_counts`), computed once: the summary and every
        comparison of the run read them (shared: callers take slices, never modify it)."""
        sessions = self.sessions
        # Repeated samples of a lane (a "sample" column) are averaged within each owner.
        nested = "sample" if "sample" in sessions.columns else None
        return owner_counts(self.calls, sessions, prices=self.prices, nested=nested)

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per lane with the headline metrics and the lane's config columns."""
        summary = summarize_counts(self.owner_counts, options=self.stats)
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

    def lane_facts(self, lane_id: str) -> LaneFacts:
        """What comparisons check of a lane: dataset, owners, matcher, judge, backend, prompt
        and settings (:func:`memlab.runs.lane_facts.read_lane_facts`), read once per lane
        like the files they come from (each comparison asks again, and a dataset recorded
        without its hash is hashed from its file)."""
        if lane_id not in self._lane_facts:
            dataset, qa = self._dataset_identity, self._qa_facts
            self._lane_facts[lane_id] = read_lane_facts(self, lane_id, dataset=dataset, qa=qa)
        return self._lane_facts[lane_id]

    @cached_property
    def _qa_facts(self) -> QAFacts | None:
        return qa_facts(self)  # the QA manifest and the answer table read once, not per lane

    @cached_property
    def _lane_facts(self) -> dict[str, LaneFacts]:
        return {}

    @cached_property
    def _dataset_identity(self) -> str:
        return dataset_identity(self)  # grid.yaml parsed once, not once per lane

    def lane_info(self, lane_id: str) -> dict[str, Any]:
        """``lanes/<lane_id>/config.json``: grid point, identity and prompt (name, hash, text)."""
        data = self.dir.read_json(self.dir.lane_config(lane_id), "lane description")
        return data if isinstance(data, dict) else {}

    @cached_property
    def environment(self) -> dict[str, Any]:
        """``environment.json``: versions, times and optional measures ({} when absent)."""
        try:
            data = self.dir.read_json(self.dir.environment_file, "environment")
        except RunError:
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
        """The dataset file the run replayed (recorded in ``grid.yaml``), if it is still there.

        Raises:
            DatasetChangedError: The file at the recorded path has another content hash
                (:func:`memlab.runs.run_dataset.recorded_dataset`).
        """
        return recorded_dataset(self.path)

    def _repr_html_(self) -> str | None:
        """In Jupyter: the run's registered HTML view (:data:`~memlab.runs.views.RUN_VIEWS`;
        memlab.reporting registers the headline metrics, what the sweep reused and the key
        charts), or ``None`` (the text repr) without one."""
        view = RUN_VIEWS.get("html")
        return view(self) if view is not None else None

    def label(self, lane_id: str) -> str:
        """A short label for a lane naming only the axes that vary in this run."""
        return self.lanes[lane_id].label(self.grid.varying())

    def final_memory(self, lane_id: str, user_id: str, sample: int = 0) -> dict[str, Any]:
        """The memory document of ``user_id`` at the end of ``lane_id``'s replay."""
        return dict(self.dir.read_owner_record(lane_id, user_id, sample)["final_memory"])

    @property
    def owner_ids(self) -> list[str]:
        """The owners this run replayed (from the manifest: a lane directory may still hold
        records of owners an earlier sweep of the same name had)."""
        owners = self.manifest.get("owners")
        if owners is not None:
            return [str(owner) for owner in owners]
        return sorted(self.dir.recorded_owners())  # a run built in memory: no manifest

    def final_facts(self, lane_id: str) -> pd.DataFrame:
        """Every stored fact at the end of a lane, one row per (owner, fact).

        Read once per lane (each a copy): a report asks again for every pair of lanes it
        diffs, and each read parses every owner record of the lane whole."""
        if lane_id not in self._final_facts:
            self._final_facts[lane_id] = self._read_final_facts(lane_id)
        return self._final_facts[lane_id].copy()

    @cached_property
    def _final_facts(self) -> dict[str, pd.DataFrame]:
        return {}

    def _read_final_facts(self, lane_id: str) -> pd.DataFrame:
        """A lane's final facts: from their columnar copy (:mod:`memlab.runs.table_copy`)
        when it was made from the owner records as they are now (their SHA-256), else
        parsed from the records (with :attr:`keep_copies`, leaving the copy to keep)."""
        records = self._lane_records(lane_id)
        key = _records_sha256(records)
        name = f"{lane_id}.final_facts"
        if key is not None:
            kept = read_copy(self.dir, name, key)
            if kept is not None:
                return kept
        rows = []
        for user_id, raw in records:
            owner, memory = self._final_memory_of(lane_id, user_id, raw)
            for fact in memory.get("facts", []):
                rows.append({"user_id": owner, **fact})
        frame = pd.DataFrame(rows)
        copy = encode_table(frame, key) if key is not None and self.keep_copies else None
        if copy is not None:
            self._unkept_copies[name] = copy
        return frame

    def _lane_records(self, lane_id: str) -> list[tuple[str, bytes]]:
        """The raw text of each owner record of the lane (``b""``: unreadable, left to the
        full read to say why), in owner order."""
        records = []
        for user_id in self.owner_ids:
            if not self.dir.record(lane_id, user_id).exists():
                continue
            try:
                raw = self.dir.read_record_bytes(lane_id, user_id)
            except OSError:
                raw = b""  # the full read says what is wrong with the file
            records.append((user_id, raw))
        return records

    def _final_memory_of(self, lane_id: str, user_id: str, raw: bytes) -> tuple[str, Any]:
        """The owner and final memory of a record: parsed alone when the fast read vouches
        for it (:mod:`memlab.runs.final_reads`), else from the whole record."""
        found = parse_final_memory(raw) if raw else None
        if found is not None:
            return found
        data = self.dir.read_owner_record(lane_id, user_id)
        return data["user_id"], data["final_memory"]


def _records_sha256(records: list[tuple[str, bytes]]) -> str | None:
    """The SHA-256 of a lane's owner records (each owner's id, length and text, in order),
    naming the copy of the final facts read from them; ``None`` when one is unreadable."""
    digest = hashlib.sha256(b"memlab final facts 1\0")
    for user_id, raw in records:
        if not raw:
            return None
        name = user_id.encode("utf-8", "surrogatepass")
        digest.update(b"%d:%b\0%d:" % (len(name), name, len(raw)))
        digest.update(raw)
    return digest.hexdigest()


def load_run(path: str | Path, *, keep_copies: bool = False) -> Run:
    """Load a run directory written by :func:`memlab.sweep` (``keep_copies``: see
    :attr:`Run.keep_copies`).

    Raises:
        RunError: The directory is not a finished run of this format, or its tables differ
            from what the manifest recorded (a truncated or edited file, a sweep that stopped).
    """
    path = Path(path)
    grid_file = RunDir(path).grid_file
    if not grid_file.is_file():
        raise RunError(f"{path}: not a memlab run directory (no grid.yaml)")
    manifest = _read_manifest(path)
    try:
        data = read_yaml(grid_file, inside=path).data
        grid = Grid.from_mapping(data["grid"], source=str(grid_file))
        configs = data["lanes"]
        lanes = {
            lane_id: LaneConfig.model_validate(configs[lane_id]) for lane_id in manifest["lanes"]
        }
    except (OSError, MemlabError, KeyError, TypeError, ValueError) as exc:
        raise RunError(f"{grid_file}: unreadable or does not match manifest.json: {exc}") from exc
    return Run(path=path, grid=grid, lanes=lanes, manifest=manifest, keep_copies=keep_copies)


def keep_table_copies(path: str | Path) -> None:
    """Read a finished run's tables as ``memlab report`` would and keep their columnar copies
    (:meth:`Run.keep_table_copies`), so that the run's first report skips parsing its rows:
    ``memlab sweep`` and ``memlab run`` do it once a run is written without error."""
    run = load_run(path, keep_copies=True)
    # The tables alone: reading them makes the copies (no QA counts joined for nothing).
    run._table("calls.jsonl", CallRow)
    run._table("sessions.jsonl", SessionRow)
    run.keep_table_copies()


def _read_manifest(path: Path) -> dict[str, Any]:
    run_dir = RunDir(path)
    manifest_file = run_dir.manifest_file
    if not manifest_file.exists() and not manifest_file.is_symlink():
        raise RunError(
            f"{path}: the run did not finish (no manifest.json; a sweep stopped, or an older "
            "memlab wrote it); rerun the sweep to resume it"
        )
    manifest = run_dir.read_json(manifest_file, "manifest")
    run_format = manifest.get("run_format") if isinstance(manifest, dict) else None
    if run_format != RUN_FORMAT:
        raise RunError(
            f"{manifest_file}: run format {excerpt(run_format)}, this memlab reads format "
            f"{RUN_FORMAT}; rerun the sweep with this memlab"
        )
    problem = _manifest_problem(manifest)
    if problem is not None:
        raise RunError(f"{manifest_file}: {problem}; it was edited or not written by memlab")
    for name, expected in manifest["files"].items():
        run_dir.check_table(run_dir.file(name), expected, "the sweep", "rerun the sweep")
    return dict(manifest)


def _manifest_problem(manifest: dict[str, Any]) -> str | None:
    """What is wrong with a manifest's fields (names, counts, table checksums), or ``None``."""
    for key in ("lanes", "owners"):
        names = manifest.get(key)
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return f"'{key}' is not a list of names"
    for lane_id in manifest["lanes"]:
        if not lane_id or lane_id.startswith(".") or any(c in lane_id for c in "/\\\x00"):
            return f"lane id {excerpt(lane_id)} is not a directory name"
    for owner in manifest["owners"]:
        reason = unsafe_reason(owner)
        if reason is not None:
            return f"owner {excerpt(owner)} cannot be a file name ({reason})"
    if not manifest["owners"]:
        return "it lists no owners"
    samples = manifest.get("samples", 1)
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= 1000:
        return f"'samples' is {excerpt(samples)}, not a count"
    if not isinstance(manifest.get("status", {}), dict):
        return "'status' is not an object"
    files = manifest.get("files")
    if not isinstance(files, dict) or sorted(files) != sorted(TABLES):
        return f"'files' must record {' and '.join(TABLES)} (their rows and checksums)"
    for name, facts in files.items():
        if not (
            isinstance(facts, dict)
            and isinstance(facts.get("rows"), int)
            and isinstance(facts.get("sha256"), str)
        ):
            return f"'files.{name}' must hold 'rows' and 'sha256'"
    return None


def _with_qa_counts(rows: pd.DataFrame, counts: pd.DataFrame) -> pd.DataFrame:
    """Session rows with each session's QA counts (0 where no question was asked).

    Counts ``rows`` already carry (the rows of another run view) are replaced, not merged
    beside the new ones."""
    rows = rows.drop(columns=[c for c in QA_COUNTS if c in rows.columns])
    keys = ["lane_id", "user_id", "session_index"]
    if "sample" in rows.columns:
        keys.append("sample")
    else:
        counts = counts[counts["sample"] == 0].drop(columns="sample")
    merged = rows.merge(counts, on=keys, how="left")
    # The procedure counts are there only when procedure questions were asked.
    present = [c for c in QA_COUNTS if c in counts.columns]
    merged[present] = merged[present].fillna(0)
    return merged
