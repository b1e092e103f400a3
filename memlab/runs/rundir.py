"""The run directory's owner: where each file lives, how it is written, checked and locked.

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
    cache/<table>.npz    a columnar copy of calls.jsonl or sessions.jsonl, kept by memlab
                         sweep, run, report and compare once they succeed, used while the
                         table keeps the SHA-256 the copy names (:mod:`memlab.runs.table_copy`);
                         ``<lane_id>.final_facts.npz`` likewise holds a lane's final facts
                         (kept by memlab report); safe to delete

``lanes/`` may also hold lanes of earlier versions of the grid (an edited prompt makes a new
lane id); ``manifest.json`` names the lanes that belong to the run. A grid with ``samples``
keeps repeated sample ``n`` (from 1) in ``lanes/<lane_id>/samples/<n>/<user_id>.json``; the
consolidation curve writes ``qa/curve.jsonl`` and its manifest ``qa/curve.json``; the
forgetting operating curve ``qa/forgetting.jsonl`` (per lane, sample, owner and session: the
answers asked again, those retained and the memory's size) and ``qa/forgetting.json``. The run's
lock file, ``.<name>.lock``, lies beside the directory (:mod:`memlab.runs.run_lock`).

Every write goes through :class:`RunDir`: atomic (a reader never sees half a file), inside
the directory with no symbolic link on the way (a planted link cannot redirect a write), and
every read is bounded and stays inside too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlab.core.base.atomic import atomic_write_bytes, atomic_write_text
from memlab.core.base.files import (
    MAX_RUN_FILE_BYTES,
    MAX_TABLE_BYTES,
    FileReadError,
    contained,
    io_reason,
    open_regular,
    read_bytes,
)
from memlab.core.base.jsontext import loads_json
from memlab.errors import MemlabError, excerpt
from memlab.runs.run_lock import lock_path, run_lock

__all__ = [
    "CURVE_ANSWERS",
    "CURVE_MANIFEST",
    "FORGETTING_MANIFEST",
    "FORGETTING_ROWS",
    "JUDGE_AUDITS",
    "QA_ANSWERS",
    "QA_FORMAT",
    "QA_MANIFEST",
    "RUN_FORMAT",
    "TABLES",
    "TUNE_RESULT",
    "TUNE_STUDY",
    "TUNE_TRIALS",
    "RunDir",
    "RunError",
    "record_problem",
]

RUN_FORMAT = 2
"""Version of the run directory layout; :func:`memlab.runs.run.load_run` reads this version
only."""

QA_FORMAT = 1
"""Version of the QA step's files; :attr:`memlab.runs.run.Run.qa_answers` reads this version
only."""
QA_ANSWERS = Path("qa") / "answers.jsonl"
QA_MANIFEST = Path("qa") / "manifest.json"
CURVE_ANSWERS = Path("qa") / "curve.jsonl"
CURVE_MANIFEST = Path("qa") / "curve.json"
FORGETTING_ROWS = Path("qa") / "forgetting.jsonl"
"""The forgetting operating curve's counts (:mod:`memlab.postrun.forgetting_file`)."""
FORGETTING_MANIFEST = Path("qa") / "forgetting.json"
"""The forgetting operating curve's manifest, written after its counts."""
JUDGE_AUDITS = Path("qa") / "judge_audits.json"
"""Audits of the QA step's judges (``memlab judge audit --run``)."""
TABLES = ("calls.jsonl", "sessions.jsonl")
"""The tables a sweep writes and its manifest checksums."""
TUNE_STUDY = Path("study.db")
"""A tune directory's Optuna study (SQLite), resumed by the next ``memlab tune``."""
TUNE_TRIALS = Path("trials")
"""A tune directory's candidate runs (``trials/trial-NNN``)."""
TUNE_RESULT = Path("tune.json")
"""A tune directory's result: split, candidates, winner, gaps, held-out verdicts, cost."""


class RunError(MemlabError, ValueError):
    """A run directory is missing or incomplete."""


_JSON_KINDS: dict[type, str] = {
    dict: "an object",
    list: "a list",
    str: "text",
    int: "a number",
    float: "a number",
    bool: "true or false",
    type(None): "null",
}
_RECORD_FIELDS: dict[str, type] = {
    "user_id": str,
    "calls": list,
    "snapshots": list,
    "final_memory": dict,
}


def record_problem(data: Any) -> str | None:
    """Why ``data`` is not an owner record a sweep writes (field and type), or ``None``."""
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    for name, kind in _RECORD_FIELDS.items():
        if not isinstance(data.get(name), kind):
            got = "nothing" if name not in data else _JSON_KINDS.get(type(data[name]), "a value")
            return f"field '{name}': expected {_JSON_KINDS[kind]}, got {got}"
    for name in ("calls", "snapshots"):
        if not all(isinstance(item, dict) for item in data[name]):
            return f"field '{name}': expected a list of objects"
    facts = data["final_memory"].get("facts", [])
    if not isinstance(facts, list) or not all(isinstance(f, dict) for f in facts):
        return "field 'final_memory.facts': expected a list of objects"
    return None


@dataclass(frozen=True)
class RunDir:
    """One run directory: its layout, writes, reads, checksums, manifest and lock.

    Attributes:
        path: The run directory (as given; it may not exist yet).
    """

    path: Path

    # -- layout ---------------------------------------------------------------------------

    @property
    def grid_file(self) -> Path:
        return self.path / "grid.yaml"

    @property
    def manifest_file(self) -> Path:
        return self.path / "manifest.json"

    @property
    def environment_file(self) -> Path:
        return self.path / "environment.json"

    @property
    def summary_file(self) -> Path:
        return self.path / "summary.csv"

    @property
    def lock_file(self) -> Path:
        """The run's lock file, beside the directory (:func:`memlab.runs.run_lock.lock_path`)."""
        return lock_path(self.path)

    def file(self, relative: str | Path) -> Path:
        """The file at ``relative`` inside the run (a table name such as ``calls.jsonl``, or
        one of the ``qa/`` paths above)."""
        return self.path / relative

    def table_copy(self, table: str) -> Path:
        """``cache/<table>.npz``: the columnar copy of the table ``table`` (such as
        ``calls.jsonl``), read instead of it while their checksums agree."""
        return self.path / "cache" / f"{table}.npz"

    def lane_dir(self, lane_id: str) -> Path:
        return self.path / "lanes" / lane_id

    def lane_config(self, lane_id: str) -> Path:
        """``lanes/<lane_id>/config.json``: the lane's grid point, identity and prompt."""
        return self.lane_dir(lane_id) / "config.json"

    def lane_configs(self) -> Iterator[Path]:
        """Every lane description in the directory, this sweep's lanes and earlier ones."""
        return self.path.glob("lanes/*/config.json")

    def record(self, lane_id: str, user_id: str, sample: int = 0) -> Path:
        """Where the replay of ``user_id`` under ``lane_id`` (repeated sample ``sample``) is
        kept."""
        lane = self.lane_dir(lane_id)
        if sample == 0:
            return lane / "owners" / f"{user_id}.json"
        return lane / "samples" / str(sample) / f"{user_id}.json"

    def recorded_owners(self) -> set[str]:
        """The owners with a record in any lane (for a run built in memory: no manifest)."""
        return {path.stem for path in self.path.glob("lanes/*/owners/*.json")}

    def store(self, lane_id: str, user_id: str) -> Path:
        """The store file of ``user_id``'s replay under ``lane_id`` (unchecked)."""
        return self.lane_dir(lane_id) / "stores" / f"{user_id}.json"

    # -- writes ---------------------------------------------------------------------------

    def owned(self, path: Path, what: str = "run file") -> Path:
        """``path`` checked to lie inside the run directory, no symbolic link on the way:
        where a step may write.

        Raises:
            RunError: The path leaves the run directory (a planted link).
        """
        try:
            return contained(path, self.path, what, "write")
        except FileReadError as exc:
            raise RunError(str(exc)) from None

    def write_text(self, path: Path, text: str, *, durable: bool = True) -> None:
        """Atomically replace the run file ``path`` with ``text`` (checked by :meth:`owned`;
        ``durable=False``: not fsynced, for a file a resumed sweep writes again)."""
        atomic_write_text(self.owned(path), text, durable=durable)

    def write_bytes(self, path: Path, data: bytes, *, durable: bool = True) -> None:
        """Atomically replace the run file ``path`` with ``data`` (checked by :meth:`owned`)."""
        atomic_write_bytes(self.owned(path), data, durable=durable)

    def write_json(self, path: Path, data: Any, *, ensure_ascii: bool = True) -> None:
        """Write ``data`` as indented JSON (the form of every manifest and description)."""
        self.write_text(path, json.dumps(data, indent=2, ensure_ascii=ensure_ascii))

    def write_jsonl(self, path: Path, rows: list[dict[str, Any]]) -> None:
        """Atomically write ``rows`` as JSON lines."""
        text = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows)
        self.write_text(path, text)

    def make_dir(self, path: Path, what: str = "run directory") -> None:
        """Create the directory ``path`` of the run (and its parents; checked by :meth:`owned`).

        Raises:
            RunError: Something that is not a directory is in the way (named, left as it is).
        """
        target = self.owned(path, what)
        try:
            target.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise RunError(
                f"{target}: not a directory, where the run keeps its {what}; move it away"
            ) from None
        except OSError as exc:
            raise RunError(f"{target}: cannot create the {what}: {io_reason(exc)}") from None

    def remove(self, path: Path, what: str = "run file") -> None:
        """Delete the run file ``path`` when it is there (checked by :meth:`owned`)."""
        self.owned(path, what).unlink(missing_ok=True)

    def start_sweep(self, grid_yaml: str, lane_descriptions: Mapping[str, Any]) -> None:
        """A sweep's first writes: the directory without a manifest (until the sweep
        finishes it is not a finished run), ``grid.yaml`` and each lane's ``config.json``.

        Raises:
            RunError: The directory cannot be created or a file cannot be written there.
        """
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self.remove(self.manifest_file)
        except OSError as exc:
            raise RunError(f"{self.path}: cannot create the run directory: {exc}") from exc
        self.write_text(self.grid_file, grid_yaml)
        for lane_id, description in lane_descriptions.items():
            self.write_json(self.lane_config(lane_id), description, ensure_ascii=False)

    def write_tables(self, tables: Mapping[str, list[dict[str, Any]]]) -> None:
        """Write the sweep's tables (:data:`TABLES`: file name -> rows) as JSON lines."""
        for name, rows in tables.items():
            self.write_jsonl(self.file(name), rows)

    def write_environment(self, environment: dict[str, Any]) -> None:
        """Write ``environment.json`` (versions, times, the matcher and measures used)."""
        self.write_json(self.environment_file, environment)

    def write_summary(self, csv_text: str) -> None:
        """Write ``summary.csv`` (one row per lane), again after a step adds columns."""
        self.write_text(self.summary_file, csv_text)

    def write_step_table(
        self,
        table: Path,
        rows: list[dict[str, Any]],
        manifest_file: Path,
        manifest: dict[str, Any],
        *,
        fresh: bool = False,
    ) -> Path:
        """A post-run step's table (``table``, relative to the run), then its manifest
        (``manifest_file``): ``manifest`` with the table's row count and checksum under
        ``files``, written last, so that a step that stopped leaves none. ``fresh``: a new
        run of the step, which first creates the table's folder and removes the old
        manifest. Returns the table's path.
        """
        path = self.file(table)
        if fresh:
            self.make_dir(path.parent, "QA directory")  # every step's table is under qa/
            self.remove(self.file(manifest_file))
        self.write_jsonl(path, rows)
        self.write_json(
            self.file(manifest_file), {**manifest, "files": {table.name: self.file_facts(path)}}
        )
        return path

    @contextlib.contextmanager
    def lock(self, command: str) -> Iterator[None]:
        """Hold the run's lock for ``command`` (:func:`memlab.runs.run_lock.run_lock`)."""
        with run_lock(self.path, command):
            yield

    # -- checksums and manifest -----------------------------------------------------------

    def file_facts(self, path: Path) -> dict[str, Any]:
        """Row count and SHA-256 of a table (what a manifest records of it), read in chunks
        (no link out of the run directory)."""
        digest, rows = hashlib.sha256(), 0
        with open_regular(path, what="run table", max_bytes=MAX_TABLE_BYTES, inside=self.path) as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
                rows += chunk.count(b"\n")
        return {"rows": rows, "sha256": digest.hexdigest()}

    def check_table(self, path: Path, expected: dict[str, Any], writer: str, fix: str) -> None:
        """Raise :class:`RunError` unless ``path`` has the rows and checksum its manifest
        recorded (``writer`` wrote it; ``fix`` says how to write it again)."""
        try:
            actual = self.file_facts(path)
        except FileNotFoundError:
            raise RunError(f"{path}: missing; {fix}") from None
        except OSError as exc:
            raise RunError(f"{path}: cannot read the table: {io_reason(exc)}") from None
        if actual != expected:
            raise RunError(
                f"{path}: {actual['rows']} rows, the manifest records {expected.get('rows')} "
                f"and another checksum: the file changed after {writer}; {fix}"
            )

    def write_manifest(
        self,
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
            "files": {name: self.file_facts(self.path / name) for name in TABLES},
        }
        self.write_json(self.manifest_file, manifest)
        return manifest

    def refresh_manifest(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Rewrite ``manifest.json`` after the tables changed in place (a rescore)."""
        return self.write_manifest(
            lanes=manifest["lanes"],
            owners=manifest["owners"],
            status=manifest["status"],
            samples=manifest.get("samples", 1),
        )

    # -- reads ----------------------------------------------------------------------------

    def read_json(self, path: Path, what: str) -> Any:
        """A JSON file of the run: bounded, inside the run directory, no links followed.

        Raises:
            RunError: The file is missing, refused (a link, a FIFO, too large) or not JSON.
        """
        try:
            raw = read_bytes(path, what=what, max_bytes=MAX_RUN_FILE_BYTES, inside=self.path)
            return loads_json(raw)
        except FileNotFoundError:
            raise RunError(f"{path}: missing {what}; rerun the sweep") from None
        except FileReadError as exc:
            raise RunError(str(exc)) from None
        except OSError as exc:
            raise RunError(f"{path}: cannot read {what}: {io_reason(exc)}") from None
        except ValueError as exc:  # not UTF-8, not JSON, too deep
            raise RunError(f"{path}: {what} is not valid JSON: {excerpt(str(exc), 200)}") from None

    def read_object(self, path: Path) -> dict[str, Any] | None:
        """A JSON object an earlier step wrote at ``path`` (an owner record, a lane
        description, the manifest), or ``None`` when there is none that can be read
        (missing, refused, not a JSON object)."""
        try:
            data = self.read_json(path, "run file")
        except RunError:
            return None
        return data if isinstance(data, dict) else None

    def previous_lanes(self) -> Iterator[tuple[dict[str, Any], float]]:
        """The readable lane descriptions (``config.json``) of the lanes the last sweep's
        manifest lists (every described lane when that sweep stopped early), each with the
        modification time of its file."""
        previous = self.read_object(self.manifest_file) or {}
        listed = set(previous.get("lanes", [])) if previous else None
        for config_file in self.lane_configs():
            described = self.read_object(config_file)
            if not described or (listed is not None and described.get("lane_id") not in listed):
                continue
            try:
                mtime = config_file.stat().st_mtime
            except OSError:
                continue
            yield described, mtime

    def read_owner_record(self, lane_id: str, user_id: str, sample: int = 0) -> dict[str, Any]:
        """The owner record of ``user_id`` under ``lane_id``, checked to be one a sweep writes.

        Raises:
            RunError: Naming the file and the field that is missing or of the wrong type.
        """
        path = self.record(lane_id, user_id, sample)
        data = self.read_json(path, "owner record")
        problem = record_problem(data)
        if problem is not None:
            raise RunError(f"{path}: not an owner record memlab writes: {problem}; rerun the sweep")
        result: dict[str, Any] = data
        return result

    def read_record_bytes(self, lane_id: str, user_id: str) -> bytes:
        """The raw text of an owner record (bounded, inside the run; ``OSError`` as raised)."""
        return read_bytes(
            self.record(lane_id, user_id),
            what="owner record",
            max_bytes=MAX_RUN_FILE_BYTES,
            inside=self.path,
        )

    def read_file_bytes(self, path: Path, what: str, max_bytes: int) -> bytes:
        """The raw content of the run file ``path`` (bounded, inside the run, no link
        followed).

        Raises:
            FileReadError: Not a regular file, too large, or outside the run.
            OSError: The file is missing or cannot be opened.
        """
        return read_bytes(path, what=what, max_bytes=max_bytes, inside=self.path)
