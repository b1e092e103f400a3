"""Ask a run's correctly answered questions again after later sessions; read what forgetting
did and how large each memory grew (:mod:`memlab.scoring.consolidation`,
:mod:`memlab.scoring.forgetting`).

:func:`add_curve` reads a run that has memory QA and, for every answerable question a lane
answered correctly from its memory (under the run's headline judge, against the file's
answer key), asks it again of the lane's memory snapshot after each later session ``k``
(with ``every=N``: the sessions ``N``, ``2N``, ... after the one it was asked after), and
once more right away of the memory it was first answered from: the *reference*, whose
accuracy measures answer and judge noise (:mod:`memlab.scoring.inference.collapse`). Every one of
these re-asks is sent with a sample seed of its own, :func:`reask_seed` (the QA step's seed
plus 1 plus the session index), so none is the QA step's call again (a fresh draw, not a
cached reply) and each session's re-asks are drawn apart from the others'. A
question whose evidence fact a later session retracts is not asked again from there on (its
answer key no longer holds). The calls go through the QA step's path: the lane's injection
(read path), the same answer and judge prompts, backends and response cache, so running it
again costs nothing. It writes ``qa/curve.jsonl`` (answer rows, ``asked_at`` the session the
question was first asked after) and then ``qa/curve.json`` (the settings, the answer table it
started from, row count and hash, ``reference``: whether the reference was asked);
:func:`curve_answers` reads them back, and ignores a curve whose QA answers changed since.

With a cost limit (``max_cost``, ``--max-cost``) each call reserves its worst case first
(:mod:`memlab.backends.costs.spend`); a call that could pass the limit is not sent, the answers
are written without the curve's manifest (no partial curve is read) and
:class:`~memlab.backends.costs.spend.CostLimitError` is raised. Asked again with the response
cache, the calls that were answered are cache hits and cost nothing: the curve resumes.

Memory knows nothing of a strategy here: a lane's snapshots are memory documents (a strategy
that keeps its memory elsewhere records views of it), and its forgetting records are read
when its replay has them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from memlab.backends.caching.cache import CacheMode
from memlab.backends.remote.rate_limit import RateLimit
from memlab.core.jsondoc.document import utc_iso
from memlab.core.pipeline.llm import Backend
from memlab.datasets.models import Owner
from memlab.grids.qa_spec import QAError
from memlab.matching.base import FactMatcher
from memlab.postrun.qa_calls import QACalls, ask_and_grade
from memlab.postrun.qa_jobs import Fate, QAJob, answer_rows, read_path, run_owners
from memlab.postrun.qa_step import QAOptions, run_matcher
from memlab.postrun.reasking import cost_stop, reask_options, reasking
from memlab.qa.answering import AnswerSettings, AnswerTask, ReplayPoint, answer_tasks
from memlab.runs.records import QARow, read_rows
from memlab.runs.run import Run, load_run
from memlab.runs.run_lock import writes_run
from memlab.runs.rundir import CURVE_ANSWERS, CURVE_MANIFEST, QA_ANSWERS
from memlab.scoring.consolidation import curve_table, memory_tokens
from memlab.scoring.forgetting import FORGETTING_COUNTS, forgetting_counts
from memlab.scoring.qa.qa_verdicts import HEADLINE_KINDS, verdict_table

__all__ = [
    "add_curve",
    "curve",
    "curve_answers",
    "forgetting_table",
    "memory_sizes",
    "reask_seed",
    "run_curve",
]

logger = logging.getLogger(__name__)


@writes_run("qa --curve-every")
def add_curve(
    run: Run | str | Path,
    *,
    every: int = 1,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    max_workers: int = 8,
    progress: bool = False,
    backend_factory: Callable[[str], Backend] | None = None,
    prompts_dir: str | Path | None = None,
    max_cost: float | None = None,
    rate_limit: RateLimit | None = None,
) -> pd.DataFrame:
    """Ask every correctly answered question again after later sessions (see the module
    docstring) and return the re-asked answer rows.

    Args:
        run: A run with memory QA, or its directory.
        every: Ask again after every ``every``-th later session.
        cache_dir, cache_mode, max_workers, progress, backend_factory, prompts_dir, max_cost,
            rate_limit: As for :func:`memlab.postrun.qa_step.add_qa`.

    Raises:
        QAError: The run has no memory QA, ``every`` is below 1, or its dataset is gone.
        CostLimitError: A call could pass ``max_cost`` (the answers are written, the curve
            is not; asking again resumes from the response cache).
        DatasetChangedError: The dataset file is not the one the run replayed.
        RunLockedError: Another writer holds the run (:mod:`memlab.runs.run_lock`).
    """
    run = load_run(run) if isinstance(run, str | Path) else run
    options = reask_options(
        run,
        cache_dir=cache_dir,
        cache_mode=cache_mode,
        max_workers=max_workers,
        progress=progress,
        backend_factory=backend_factory,
        prompts_dir=prompts_dir,
        max_cost=max_cost,
        rate_limit=rate_limit,
    )
    return run_curve(run, every, options)


def run_curve(run: Run | str | Path, every: int, options: QAOptions) -> pd.DataFrame:
    """:func:`add_curve` with its settings as :class:`~memlab.postrun.qa_step.QAOptions`
    (the QA step's: ``memlab qa --curve-every`` counts both against one cost limit)."""
    run = load_run(run) if isinstance(run, str | Path) else run
    if every < 1:
        raise QAError(f"every must be at least 1, got {every}")
    if run.qa_answers.empty:
        raise QAError(f"{run.path}: no memory QA to ask again; run it first (memlab qa RUN)")
    asking = reasking(run, options)
    spec, prompts, answerer, grader = asking.spec, asking.prompts, asking.answerer, asking.grader
    owners = {o.user_id: o for o in asking.owners}
    settings = spec.answer_settings(prompts.answer)
    jobs = list(_jobs(run, owners, _anchors(run), settings, every))
    calls: QACalls[list[list[Fate]]] = ask_and_grade(
        (job.tasks for job in jobs),
        answerer,
        grader,
        prompts.judges,
        spec.judge_params(),
        max_workers=options.max_workers,
        progress=options.progress,
    )
    rows = answer_rows(jobs, calls, (answerer, grader), spec, prompts)
    for row in rows:
        question = next(q for q in owners[row["user_id"]].questions if q.id == row["question_id"])
        row["asked_at"] = owners[row["user_id"]].session_index(question.after_session)
    failed = sum(1 for r in rows if r["error"] is not None or r["judge_errors"])
    stop = cost_stop(options, failed, "curve answers")
    _write(run, rows, every, finished=stop is None)
    if stop is not None:
        raise stop
    if failed:  # kept as wrong answers; running the curve again retries them
        logger.warning("consolidation curve: %d of %d calls failed", failed, len(rows))
    return pd.DataFrame(rows)


def reask_seed(seed: int | None, session_index: int) -> int:
    """The sample seed of the answers asked again after session ``session_index``: the QA
    step's ``seed`` (0 when unset) plus 1 plus the index, never the QA step's own."""
    return (seed or 0) + 1 + session_index


def _at_session(settings: AnswerSettings, index: int) -> AnswerSettings:
    """``settings`` with the re-asks' sample seed of session ``index``."""
    return replace(
        settings, params=replace(settings.params, seed=reask_seed(settings.params.seed, index))
    )


def _anchors(run: Run) -> set[tuple[str, int, str, str]]:
    """(lane, sample, owner, question) of each answerable question answered correctly from
    memory under the run's judge, against the file's answer key."""
    answers = run.qa_answers
    mine = answers[(answers["condition"] == "memory") & answers["kind"].isin(HEADLINE_KINDS)]
    if mine.empty:
        return set()
    verdicts = verdict_table(mine)
    right = verdicts[
        (verdicts["judge"] == run.judge) & (verdicts["key"] == "answer") & verdicts["correct"]
    ]
    keys = right[["lane_id", "sample", "user_id", "question_id"]].to_numpy().tolist()
    return {(str(lane), int(sample), str(user), str(q)) for lane, sample, user, q in keys}


def _later(owner: Owner, asked: int, evidence: list[str], every: int) -> list[int]:
    """The sessions a question first asked after ``asked`` is asked again after."""
    later = []
    for index in range(asked + every, len(owner.sessions), every):
        active = {fact.id for fact in owner.active_gold_facts(index)}
        if not set(evidence) <= active:
            break  # a retracted evidence fact: the answer key no longer holds
        later.append(index)
    return later


def _jobs(
    run: Run,
    owners: dict[str, Owner],
    anchors: set[tuple[str, int, str, str]],
    settings: AnswerSettings,
    every: int,
) -> Iterator[QAJob]:
    """Per (lane, sample, owner) with a correct answer: the re-asking tasks, session order."""
    for lane_id, config in run.lanes.items():
        read = read_path(config)
        for sample in sorted({a[1] for a in anchors if a[0] == lane_id}):
            for user_id, owner in owners.items():
                chosen = [q for q in owner.questions if (lane_id, sample, user_id, q.id) in anchors]
                if not chosen:
                    continue
                record = run.dir.read_owner_record(lane_id, user_id, sample)
                snapshots = record.get("snapshots", [])
                due = {}
                for q in chosen:  # the reference right away, then the later sessions (if any)
                    first = owner.session_index(q.after_session)
                    later = _later(owner, first, q.evidence.facts, every)
                    due[q.id] = [first, *later] if later else []
                tasks: list[AnswerTask] = []
                for index in range(len(owner.sessions)):
                    asked = [q for q in chosen if index in due[q.id]]
                    if asked:
                        point = ReplayPoint(owner, index, snapshots[index])
                        at = _at_session(settings, index)
                        tasks += answer_tasks(point, asked, ["memory"], at, read)
                yield QAJob(lane_id, sample, owner, record, tasks)


def _write(run: Run, rows: list[dict[str, Any]], every: int, *, finished: bool = True) -> None:
    """The re-asked answers, then the curve's manifest (last: a step that stopped, or that
    is not ``finished``, leaves none)."""
    run_dir = run.dir
    run_dir.remove(run_dir.file(CURVE_MANIFEST))
    run_dir.write_jsonl(run_dir.file(CURVE_ANSWERS), rows)
    if not finished:
        return
    manifest = {
        "every": every,
        "reference": True,
        "judge": run.judge,
        "complete": not any(r["error"] is not None or r["judge_errors"] for r in rows),
        "qa_answers": run_dir.file_facts(run_dir.file(QA_ANSWERS)),
        "finished_at": utc_iso(datetime.now(UTC)),
        "files": {CURVE_ANSWERS.name: run_dir.file_facts(run_dir.file(CURVE_ANSWERS))},
    }
    run_dir.write_json(run_dir.file(CURVE_MANIFEST), manifest)
    logger.info("consolidation curve: %d answers -> %s", len(rows), run_dir.file(CURVE_ANSWERS))


def curve_answers(run: Run) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The re-asked answers and the curve's manifest; empty when the run has no curve, or
    when its QA answers changed since the curve was asked (then the curve is stale)."""
    run_dir = run.dir
    path = run_dir.file(CURVE_MANIFEST)
    empty = pd.DataFrame(columns=[*QARow.model_fields, "asked_at"])
    if not path.exists() or run.qa_answers.empty:
        return empty, {}
    manifest = run_dir.read_json(path, "curve manifest")
    if manifest.get("qa_answers") != run_dir.file_facts(run_dir.file(QA_ANSWERS)):
        logger.warning("%s: the QA answers changed since the curve was asked; ask it again", path)
        return empty, {}
    rows = read_rows(run_dir.file(CURVE_ANSWERS), QARow, inside=run.path)
    return (pd.DataFrame(rows) if rows else empty), manifest


def _records(run: Run) -> Iterator[tuple[str, int, Owner, dict[str, Any]]]:
    """Every (lane, sample, owner, owner record) of the run."""
    dataset = run.dataset_path
    if dataset is None:
        raise QAError(f"{run.path}: the dataset file the run replayed is gone")
    owners = run_owners(run, dataset, questions=False).owners
    samples = int(run.manifest.get("samples", 1) or 1)
    for lane_id in run.lanes:
        for sample in range(samples):
            for owner in owners:
                yield (
                    lane_id,
                    sample,
                    owner,
                    run.dir.read_owner_record(lane_id, owner.user_id, sample),
                )


def memory_sizes(run: Run) -> pd.DataFrame:
    """Per (lane, sample, owner, session): the memory's size in tokens after the session
    (:func:`memlab.scoring.consolidation.memory_tokens`) and ``days``, the virtual days from
    the owner's first session's start to the session's end."""
    rows = []
    for lane_id, sample, owner, record in _records(run):
        first = owner.sessions[0].started_at
        for index, snapshot in enumerate(record.get("snapshots", [])):
            ended = owner.sessions[index].ended_at
            rows.append(
                {
                    "lane_id": lane_id,
                    "sample": sample,
                    "user_id": owner.user_id,
                    "session_index": index,
                    "memory_tokens": memory_tokens(snapshot),
                    "days": (ended - first).total_seconds() / 86400,
                }
            )
    return pd.DataFrame(rows)


def curve(run: Run) -> pd.DataFrame:
    """The run's consolidation curve (:func:`memlab.scoring.consolidation.curve_table`): one
    row per lane and session; ``retained`` is NaN everywhere when no curve was asked."""
    reasks, _ = curve_answers(run)
    return curve_table(reasks, memory_sizes(run), run.judge, options=run.stats)


def forgetting_table(run: Run, matcher: FactMatcher | None = None) -> pd.DataFrame:
    """Per (lane, sample, owner): the forgetting counts of its replay
    (:data:`memlab.scoring.forgetting.FORGETTING_COUNTS`), NaN for a lane whose memory does not
    forget (its replays keep no ``forgetting`` records: a DeerFlow memory). ``matcher``
    decides which memory states a gold fact (default: the matcher that scored the run)."""
    columns = ["lane_id", "sample", "user_id", *FORGETTING_COUNTS]
    rows: list[dict[str, Any]] = []
    for lane_id, sample, owner, record in _records(run):
        row: dict[str, Any] = {"lane_id": lane_id, "sample": sample, "user_id": owner.user_id}
        events = record.get("forgetting")  # only a memory that forgets keeps the key
        if events is not None:
            matcher = matcher if matcher is not None else run_matcher(run)
            snapshots = record.get("snapshots", [])
            row.update(forgetting_counts(owner, events, snapshots, matcher.covers) or {})
        rows.append(row)
    return pd.DataFrame(rows, columns=columns).astype(dict.fromkeys(FORGETTING_COUNTS, float))
