"""Rescoring a finished run with another fact matcher, without replaying anything.

A run keeps every replay's memory snapshots (``lanes/<lane>/owners/<user>.json``) and the path
of the dataset it replayed (``grid.yaml``). :func:`rescore` reads them back, recomputes every
session row with the matcher given (default: :func:`~memlab.matching.matchers.default_matcher`),
and rewrites ``sessions.jsonl`` and ``summary.csv`` atomically; ``calls.jsonl`` is left as it
is, and no memory-update call is made. A run with memory QA also gets the fate of every answer
from memory's evidence scored again (``qa/answers.jsonl``: the causes of wrong answers depend on
which stored fact the matcher says holds an evidence fact); its answers and verdicts are kept.
``environment.json`` records which matcher scored the run (:func:`matcher_record`); with an
LLM judge it also records the metrics under each judge prompt and the prompts' agreement.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from memlab._version import __version__
from memlab.core.base.files import io_reason
from memlab.core.jsondoc.document import utc_iso
from memlab.datasets.loader import load_dataset
from memlab.datasets.models import Owner
from memlab.errors import MemlabError
from memlab.matching.base import FactMatcher, matcher_name
from memlab.matching.judge import LLMJudgeMatcher
from memlab.matching.matchers import default_matcher
from memlab.postrun.qa_step import add_fates, rewrite_fates
from memlab.runs.records import QARow, read_rows
from memlab.runs.run import Run, load_run
from memlab.runs.run_lock import writes_run
from memlab.runs.rundir import QA_ANSWERS, RunError
from memlab.scoring.metrics import replay_rows, summarize

__all__ = [
    "Replay",
    "RescoreError",
    "matcher_record",
    "qa_rows",
    "replays",
    "rescore",
    "score_sessions",
]

logger = logging.getLogger(__name__)

_CARRIED = ("dup_embedding",)
"""Session columns that do not depend on the matcher and are kept from the original rows."""
_JUDGE_COLUMNS = ("recall", "precision", "retracted_held")


class RescoreError(MemlabError, ValueError):
    """A run cannot be rescored (records or dataset missing); the message says which."""


@dataclass(frozen=True)
class Replay:
    """One finished (lane, owner, sample) replay of a run, with the owner's labeled sessions
    (as many as the replay covered) and its record (memory snapshots, calls ...)."""

    lane_id: str
    owner: Owner
    record: dict[str, Any]
    sample: int


def replays(run: Run) -> Iterator[Replay]:
    """Every finished (lane, owner) replay of ``run`` with the owner's labeled sessions."""
    dataset = run.dataset_path
    if dataset is None:
        raise RescoreError(
            f"{run.path}: the dataset recorded in grid.yaml is missing; restore it at the "
            "recorded path to rescore this run"
        )
    owners = {owner.user_id: owner for owner in load_dataset(dataset)}
    samples = range(int(run.manifest.get("samples", 1)))
    for lane_id, sample in itertools.product(run.lanes, samples):
        for user in run.owner_ids:
            path = run.dir.record(lane_id, user, sample)
            try:
                record = run.dir.read_owner_record(lane_id, user, sample)
            except RunError as exc:
                raise RescoreError(str(exc)) from None
            user_id, snapshots = record["user_id"], record["snapshots"]
            owner = owners.get(user_id)
            if owner is None or len(snapshots) > len(owner.sessions):
                raise RescoreError(
                    f"{path}: owner {user_id!r} is not in {dataset} as it was replayed; "
                    "the dataset changed since the run"
                )
            # A run may have replayed the first sessions only (grid max_sessions).
            owner = owner.model_copy(update={"sessions": owner.sessions[: len(snapshots)]})
            yield Replay(lane_id, owner, record, sample)


def score_sessions(run: Run, matcher: FactMatcher) -> list[dict[str, Any]]:
    """Session rows of every replay in ``run``, scored with ``matcher``.

    Columns that do not depend on the matcher (``dup_embedding``) are kept from the run's
    current rows.
    """
    kept = _carried_columns(run)
    repeated = int(run.manifest.get("samples", 1)) > 1
    rows: list[dict[str, Any]] = []
    for replay in replays(run):
        tag = {"sample": replay.sample} if repeated else {}
        for row in replay_rows(replay.owner, replay.record, matcher=matcher):
            key = (replay.lane_id, row["user_id"], row["session_index"], replay.sample)
            rows.append({"lane_id": replay.lane_id, **row, **tag, **kept.get(key, {})})
    return rows


def qa_rows(run: Run, matcher: FactMatcher) -> list[dict[str, Any]] | None:
    """``run``'s memory-QA answer rows with the fate of each answer from memory scored by
    ``matcher`` (None: the run has no memory QA)."""
    if run.qa_answers.empty:  # reading it checks the table against its manifest
        return None
    try:
        rows = read_rows(run.dir.file(QA_ANSWERS), QARow, inside=run.path)
    except MemlabError as exc:
        raise RescoreError(str(exc)) from None
    by_replay: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for row in rows:
        by_replay.setdefault((row["lane_id"], int(row["sample"]), row["user_id"]), []).append(row)
    for replay in replays(run):
        mine = by_replay.get((replay.lane_id, replay.sample, replay.owner.user_id))
        if mine:
            add_fates(replay.owner, replay.record, mine, matcher)
    return rows


def _carried_columns(run: Run) -> dict[tuple[str, str, int, int], dict[str, Any]]:
    sessions = run.sessions
    columns = [c for c in _CARRIED if c in sessions.columns]
    if not columns or sessions.empty:
        return {}
    return {
        (row["lane_id"], row["user_id"], int(row["session_index"]), int(row.get("sample", 0))): {
            c: row[c] for c in columns
        }
        for row in sessions.to_dict("records")
    }


def matcher_record(matcher: FactMatcher, run: Run | str | Path | None = None) -> dict[str, Any]:
    """What ``environment.json`` says about the matcher that scored a run.

    ``{"name": ...}``; for an :class:`~memlab.matching.judge.LLMJudgeMatcher` with a ``run`` (or
    its directory, once its records are written), also ``"judge"``: recall, precision and
    retracted-held per lane under each judge prompt, and the prompts' agreement over the pairs
    judged.
    """
    # The matchers ship with memlab: its version is the matcher's, unless a plugin says.
    version = getattr(matcher, "version", None) or __version__
    record: dict[str, Any] = {"name": matcher_name(matcher), "version": str(version)}
    if isinstance(matcher, LLMJudgeMatcher) and run is not None:
        record["judge"] = _judge_record(matcher, run if isinstance(run, Run) else load_run(run))
    return record


def _judge_record(judge: LLMJudgeMatcher, run: Run) -> dict[str, Any]:
    lanes: dict[str, dict[str, dict[str, float | None]]] = {}
    for prompt in judge.prompts:
        sessions = pd.DataFrame(score_sessions(run, judge.under(prompt)))
        summary = summarize(run.calls, sessions).set_index("lane_id")
        for lane_id, row in summary.iterrows():
            lanes.setdefault(str(lane_id), {})[prompt] = {
                column: _plain(row[column]) for column in _JUDGE_COLUMNS
            }
    agreement = judge.agreement()
    return {
        "prompts": list(judge.prompts),
        "agreement": _plain(agreement.rate),
        "pairs_judged": agreement.pairs,
        "lanes": lanes,
    }


def _plain(value: Any) -> float | None:
    number = float(value)
    return None if number != number else round(number, 6)  # NaN -> null in JSON


@writes_run("rescore")
def rescore(run_path: str | Path, matcher: FactMatcher | None = None) -> Run:
    """Recompute every metric of the run at ``run_path`` with ``matcher`` (see the module
    docstring) and return the reloaded :class:`~memlab.runs.run.Run`.

    Raises:
        RunError: Not a finished run directory.
        RescoreError: A replay record or the dataset is missing or changed. Nothing is
            written in that case.
        DatasetChangedError: The dataset file is not the one the run replayed.
        RunLockedError: Another writer holds the run (:mod:`memlab.runs.run_lock`).
    """
    matcher = matcher if matcher is not None else default_matcher()
    run = load_run(run_path)
    # Everything is computed before anything is written: a failure leaves the run as it was.
    sessions = score_sessions(run, matcher)
    answers = qa_rows(run, matcher)
    record = matcher_record(matcher, run)
    scored = Run(
        path=run.path,
        grid=run.grid,
        lanes=run.lanes,
        _sessions=pd.DataFrame(sessions),
        prices=run.prices,
    )
    summary = scored.summary.to_csv()
    environment = {
        **run.environment,
        "matcher": record,
        "rescored_at": utc_iso(datetime.now(UTC)),
    }
    if not os.access(run.path, os.W_OK):
        raise RescoreError(
            f"{run.path}: the run directory is not writable; rescoring rewrites "
            "sessions.jsonl, summary.csv, environment.json and manifest.json there, and the QA "
            "answers of a run with memory QA (copy the run to a writable place first)"
        )
    try:
        run_dir = run.dir
        run_dir.write_jsonl(run_dir.file("sessions.jsonl"), sessions)
        run_dir.write_json(run_dir.environment_file, environment)
        run_dir.write_summary(summary)
        run_dir.refresh_manifest(run.manifest)  # the tables changed: so do their checksums
        if answers is not None:
            rewrite_fates(run, answers, matcher_name(matcher))
    except OSError as exc:
        raise RescoreError(
            f"{run.path}: cannot rewrite the run's files ({io_reason(exc)}); rerun the "
            "rescore once the directory is writable"
        ) from None
    logger.info("rescored %s with %s", run.path, matcher_name(matcher))
    return load_run(run.path)
