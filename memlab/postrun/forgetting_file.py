"""The forgetting operating curve kept in the run directory: what it asked and retained, so
``memlab report`` shows the curve without asking again.

``qa/forgetting.jsonl`` has one row per (lane, sample, owner, session): ``asked`` (answers asked
again after the session, :mod:`memlab.postrun.retention`), ``retained`` (those correct under
the run's judge) and ``memory_tokens`` (the memory's size after the session). Its manifest,
``qa/forgetting.json``, written last, names the reference lane (the seed default the curve
compares with), the judge, the QA answers it was asked beside and the rows' checksum. Both
go through :class:`~memlab.runs.rundir.RunDir` under the run's lock.

Reading back is bounded like every run file. A missing curve is ``None``; a curve that cannot
be used (corrupt, edited, naming lanes the run does not have, asked before the QA answers
changed) is ``None`` with one warning naming the file and why.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from memlab.core.jsondoc.document import utc_iso
from memlab.runs.records import RecordError, read_rows
from memlab.runs.run import Run
from memlab.runs.rundir import FORGETTING_MANIFEST, FORGETTING_ROWS, QA_ANSWERS, RunError
from memlab.scoring.retention import COUNT_COLUMNS

__all__ = [
    "FORGETTING_FORMAT",
    "ForgettingRow",
    "SavedForgetting",
    "forgetting_rows",
    "read_forgetting",
    "save_forgetting",
]

logger = logging.getLogger(__name__)

FORGETTING_FORMAT = 1
"""Version of the forgetting curve's files; :func:`read_forgetting` reads this version only."""


class ForgettingRow(BaseModel):
    """One (lane, sample, owner, session) of ``qa/forgetting.jsonl``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    lane_id: str
    sample: int = Field(ge=0)
    user_id: str
    session_index: int = Field(ge=0)
    asked: int = Field(ge=0)
    retained: int = Field(ge=0)
    memory_tokens: float = Field(ge=0)


@dataclass(frozen=True)
class SavedForgetting:
    """A run's saved curve: its rows (``ForgettingRow`` columns) and reference lane."""

    rows: pd.DataFrame
    reference: str
    judge: str


def forgetting_rows(counts: pd.DataFrame, sizes: pd.DataFrame) -> pd.DataFrame:
    """The rows to keep: ``sizes`` (per lane, sample, owner, session: ``memory_tokens``), in
    their order, with the :func:`~memlab.scoring.retention.retention_counts` of each (0 where
    none was asked).

    Raises:
        ValueError: Answers were asked after a session that has no memory size.
    """
    keys = list(COUNT_COLUMNS[:4])
    merged = sizes[[*keys, "memory_tokens"]].merge(
        counts[list(COUNT_COLUMNS)], on=keys, how="left", sort=False
    )
    matched = int(merged["asked"].fillna(0).sum())
    if matched != int(counts["asked"].sum()):
        raise ValueError("answers asked after a session with no memory size; rerun the sweep")
    merged[["asked", "retained"]] = merged[["asked", "retained"]].fillna(0).astype(int)
    merged["memory_tokens"] = merged["memory_tokens"].astype(float)
    return merged[list(ForgettingRow.model_fields)]


def save_forgetting(run: Run, rows: pd.DataFrame, reference: str) -> None:
    """Write the curve's rows, then its manifest (last: a write that stopped leaves none)."""
    run_dir = run.dir
    records = [ForgettingRow.model_validate(r).model_dump() for r in rows.to_dict("records")]
    with run_dir.lock("forgetting curve"):
        qa_answers = run_dir.file(QA_ANSWERS)
        manifest = {
            "format": FORGETTING_FORMAT,
            "reference": reference,
            "judge": run.judge,
            "qa_answers": run_dir.file_facts(qa_answers) if qa_answers.exists() else None,
            "finished_at": utc_iso(datetime.now(UTC)),
        }
        path = run_dir.write_step_table(
            FORGETTING_ROWS, records, FORGETTING_MANIFEST, manifest, fresh=True
        )
    logger.info("forgetting curve: %d rows -> %s", len(records), path)


def _manifest_problem(run: Run, manifest: Any) -> str | None:
    """Why the manifest cannot be used with ``run``, or ``None``."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORGETTING_FORMAT:
        return f"not a forgetting curve manifest of format {FORGETTING_FORMAT}"
    if not isinstance(manifest.get("files"), dict) or not isinstance(manifest.get("judge"), str):
        return "field 'files' or 'judge' missing"
    if manifest.get("reference") not in run.lanes:
        return f"field 'reference': {manifest.get('reference')!r} is not a lane of the run"
    qa_answers = run.dir.file(QA_ANSWERS)
    now = run.dir.file_facts(qa_answers) if qa_answers.exists() else None
    if manifest.get("qa_answers") != now:
        return "the QA answers changed since the curve was asked"
    return None


def _read(run: Run) -> SavedForgetting | None:
    run_dir = run.dir
    path = run_dir.file(FORGETTING_MANIFEST)
    if not path.exists():
        return None
    manifest = run_dir.read_json(path, "forgetting curve manifest")
    problem = _manifest_problem(run, manifest)
    if problem is not None:
        raise RunError(f"{path}: {problem}")
    table = run_dir.file(FORGETTING_ROWS)
    expected = manifest["files"].get(FORGETTING_ROWS.name, {})
    run_dir.check_table(table, expected, "the forgetting curve", "ask the curve again")
    rows = pd.DataFrame(
        read_rows(table, ForgettingRow, inside=run.path), columns=list(ForgettingRow.model_fields)
    )
    foreign = sorted(set(rows["lane_id"]) - set(run.lanes))
    if foreign:
        raise RunError(f"{table}: lane {foreign[0]!r} is not a lane of the run")
    if (rows["retained"] > rows["asked"]).any():
        raise RunError(f"{table}: a row retains more answers than it asked")
    return SavedForgetting(rows, str(manifest["reference"]), str(manifest["judge"]))


def read_forgetting(run: Run) -> SavedForgetting | None:
    """The run's saved curve; ``None`` when it has none, or (one warning, module docstring)
    when it cannot be used."""
    try:
        return _read(run)
    except (RunError, RecordError) as exc:
        logger.warning("forgetting curve of %s not shown: %s; ask it again", run.name, exc)
        return None
