"""The runs under a directory, one entry each, read cheaply (``memlab runs``).

Each entry comes from the run's ``grid.yaml``, ``manifest.json``, ``environment.json`` and
``qa/manifest.json`` (:func:`memlab.runs.run.load_run` reads no table until asked). A
directory that looks like a run (it has one of those files or ``lanes/``) but cannot be read
is an entry with ``problem`` set, never an exception: one broken run must not hide the others.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab.core.base.yamlio import read_yaml
from memlab.core.jsondoc.document import parse_utc, utc_iso
from memlab.errors import one_line
from memlab.runs.run import load_run

__all__ = ["RunEntry", "list_runs"]

logger = logging.getLogger(__name__)

_MARKS = ("grid.yaml", "manifest.json", "lanes")
"""What a run directory holds from its first moment (a directory with none is not a run)."""


@dataclass(frozen=True)
class RunEntry:
    """One run directory, as ``memlab runs`` lists it."""

    name: str
    path: str
    date: str
    """When the sweep finished (ISO 8601, UTC): environment.json, else the directory's time."""
    dataset: str = ""
    lanes: int = 0
    backends: tuple[str, ...] = ()
    qa: bool = False
    """Memory QA was asked (by the grid's ``qa:`` key or ``memlab qa``)."""
    complete: bool = False
    """Every replay finished, and the QA step too when QA was asked."""
    problem: str = ""
    """Why the run could not be read ("" when it could)."""

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "backends": list(self.backends)}


def _mtime(path: Path) -> datetime:
    try:
        stamp = path.stat().st_mtime
    except OSError:
        stamp = 0.0
    return datetime.fromtimestamp(stamp, UTC).replace(microsecond=0)


def _entry(path: Path) -> RunEntry:
    run = load_run(path)
    environment = run.environment
    when = parse_utc(environment.get("finished_at")) or parse_utc(environment.get("started_at"))
    qa = run.qa_manifest
    # The file replayed, as grid.yaml records it (the grid's own dataset: key may be a
    # default when the sweep was handed a dataset); not hashed here, unlike Run.dataset_path.
    recorded = read_yaml(run.dir.grid_file, inside=path).data.get("dataset")
    dataset = Path(recorded).stem if isinstance(recorded, str) and recorded else run.grid.dataset
    # A grid with a qa: key whose QA step never finished: QA asked for, the run incomplete.
    asked = run.grid.qa is not None
    return RunEntry(
        name=run.name,
        path=str(path),
        date=utc_iso((when or _mtime(path)).replace(microsecond=0)),
        dataset=dataset,
        lanes=len(run.lanes),
        backends=tuple(sorted({lane.backend for lane in run.lanes.values()})),
        qa=bool(qa) or asked,
        complete=run.complete and bool(qa.get("complete", True)) and (bool(qa) or not asked),
    )


def list_runs(runs_dir: str | Path) -> list[RunEntry]:
    """The runs directly under ``runs_dir``, newest first."""
    entries = []
    for path in sorted(Path(runs_dir).iterdir()):
        if not path.is_dir() or not any((path / mark).exists() for mark in _MARKS):
            continue
        try:
            entries.append(_entry(path))
        except Exception as exc:  # any unreadable file: a row saying so, never the listing
            logger.debug("cannot read the run %s", path, exc_info=True)
            reason = one_line(str(exc)) or type(exc).__name__
            entries.append(RunEntry(path.name, str(path), utc_iso(_mtime(path)), problem=reason))
    # The dates are all UTC in one format: as strings they sort as times.
    return sorted(entries, key=lambda e: (e.date, e.name), reverse=True)
