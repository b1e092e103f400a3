"""Ask every labelled answer again after each later session: what a memory keeps of what the
labels say it should (:mod:`memlab.scoring.retention`).

The consolidation curve (:mod:`memlab.postrun.consolidation`) re-asks the questions a lane
answered correctly, after the session each was asked after. Retention asks from the labels
instead, the same for every lane: each answerable question is asked of the lane's memory
snapshot after every session that follows the one where its evidence facts were all stated,
to the last session, until a session retracts one of them (its answer key no longer holds).
So every lane is asked the same questions at the same points, and each answer needs the
memory to have carried the facts over at least one gap between sessions, through whatever
its forgetting did. A lane that never answered a question correctly is asked it too: a
memory that lost a fact before the question's own session counts as having lost it.

The calls go through the QA step's path (:mod:`memlab.postrun.qa_calls`): the lane's
injection, the run's answer and judge prompts, backends and response cache, so asking again
costs nothing. The answers are returned, not written into the run. With a cost limit
(``max_cost``, or the QA step's in :func:`run_retention`) each call reserves its worst case
first; a call that could pass it is not sent and
:class:`~memlab.backends.costs.spend.CostLimitError` is raised instead of returning answers
(no partial curve); asked again with the response cache, the answered calls are cache hits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from memlab.backends.caching.cache import CacheMode
from memlab.backends.remote.rate_limit import RateLimit
from memlab.core.pipeline.llm import Backend
from memlab.datasets.models import Owner
from memlab.datasets.questions import Question
from memlab.grids.qa_spec import QAError
from memlab.postrun.qa_calls import QACalls, ask_and_grade
from memlab.postrun.qa_jobs import Fate, QAJob, answer_rows, read_path
from memlab.postrun.qa_step import QAOptions
from memlab.postrun.reasking import cost_stop, reask_options, reasking
from memlab.qa.answering import AnswerSettings, AnswerTask, ReplayPoint, answer_tasks
from memlab.qa.conditions import ReadPath
from memlab.runs.run import Run, load_run

__all__ = ["ask_retention", "retention_sessions", "retention_tasks", "run_retention"]


def retention_sessions(owner: Owner, question: Question) -> list[int]:
    """The sessions ``question`` is asked after: each one after the session where its
    evidence facts are first all active, until one is retracted (module docstring)."""
    evidence = set(question.evidence.facts)
    sessions: list[int] = []
    stated = False
    for index in range(len(owner.sessions)):
        active = evidence <= {fact.id for fact in owner.active_gold_facts(index)}
        if stated and not active:
            break
        if stated:
            sessions.append(index)
        stated = stated or active
    return sessions


def retention_tasks(
    owner: Owner,
    snapshots: Sequence[Mapping[str, Any]],
    settings: AnswerSettings,
    read: ReadPath,
) -> list[AnswerTask]:
    """The tasks asked of one lane's memory of ``owner`` (``snapshots``: after each session),
    in session order: each answerable question after its :func:`retention_sessions`."""
    due = {q.id: retention_sessions(owner, q) for q in owner.questions if q.kind == "answerable"}
    tasks: list[AnswerTask] = []
    for index in range(min(len(owner.sessions), len(snapshots))):
        asked = [q for q in owner.questions if index in due.get(q.id, [])]
        if asked:
            point = ReplayPoint(owner, index, snapshots[index])
            tasks += answer_tasks(point, asked, ["memory"], settings, read)
    return tasks


def _jobs(run: Run, owners: list[Owner], settings: AnswerSettings) -> Iterator[QAJob]:
    """Per (lane, sample, owner): the tasks asked of its snapshots, in session order."""
    samples = int(run.manifest.get("samples", 1) or 1)
    for lane_id, config in run.lanes.items():
        read = read_path(config)
        for sample in range(samples):
            for owner in owners:
                if not any(
                    retention_sessions(owner, q) for q in owner.questions if q.kind == "answerable"
                ):
                    continue
                record = run.dir.read_owner_record(lane_id, owner.user_id, sample)
                tasks = retention_tasks(owner, record.get("snapshots", []), settings, read)
                yield QAJob(lane_id, sample, owner, record, tasks)


def ask_retention(
    run: Run | str | Path,
    *,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    max_workers: int = 8,
    backend_factory: Callable[[str], Backend] | None = None,
    prompts_dir: str | Path | None = None,
    max_cost: float | None = None,
    rate_limit: RateLimit | None = None,
) -> pd.DataFrame:
    """Ask every answerable question after each session that follows its evidence (module
    docstring) of every lane; the answer rows (``session_index``: the session asked after).

    Args:
        run: A run with memory QA (its QA settings say how to ask), or its directory.
        cache_dir, cache_mode, max_workers, backend_factory, prompts_dir, max_cost,
            rate_limit: As for :func:`memlab.postrun.qa_step.add_qa`.

    Raises:
        QAError: The run has no memory QA, or its dataset is gone.
        CostLimitError: A call could pass ``max_cost`` (nothing is returned; asking again
            resumes from the response cache).
        DatasetChangedError: The dataset file is not the one the run replayed.
    """
    run = load_run(run) if isinstance(run, str | Path) else run
    options = reask_options(
        run,
        cache_dir=cache_dir,
        cache_mode=cache_mode,
        max_workers=max_workers,
        backend_factory=backend_factory,
        prompts_dir=prompts_dir,
        max_cost=max_cost,
        rate_limit=rate_limit,
    )
    return run_retention(run, options)


def run_retention(run: Run | str | Path, options: QAOptions) -> pd.DataFrame:
    """:func:`ask_retention` with its settings as :class:`~memlab.postrun.qa_step.QAOptions`
    (the QA step's: ``memlab qa --forgetting`` counts both against one cost limit).

    Raises:
        CostLimitError: The options' cost limit refused a call: the answers are not returned,
            so no partial curve is kept.
    """
    run = load_run(run) if isinstance(run, str | Path) else run
    if not run.qa_manifest:
        raise QAError(f"{run.path}: no memory QA settings; run it first (memlab qa RUN)")
    asking = reasking(run, options)
    spec, prompts = asking.spec, asking.prompts
    jobs = list(_jobs(run, asking.owners, spec.answer_settings(prompts.answer)))
    calls: QACalls[list[list[Fate]]] = ask_and_grade(
        (job.tasks for job in jobs),
        asking.answerer,
        asking.grader,
        prompts.judges,
        spec.judge_params(),
        max_workers=options.max_workers,
        progress=options.progress,
    )
    rows = answer_rows(jobs, calls, (asking.answerer, asking.grader), spec, prompts)
    failed = sum(1 for r in rows if r["error"] is not None or r["judge_errors"])
    stop = cost_stop(options, failed, "forgetting curve answers")
    if stop is not None:
        raise stop
    return pd.DataFrame(rows)
