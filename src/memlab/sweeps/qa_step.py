"""Add memory QA to a run: ask every lane's memory the dataset's questions, grade, record.

:func:`add_qa` reads a finished run directory and, for every lane, owner and repeated sample,
asks each question right after the session its ``after_session`` names, through
:mod:`memlab.qa.answering`:

- the lane's memory then is the replay's snapshot; it reaches the answer prompt through the
  lane's injection path (budget, token counting, policy ranked by the question:
  :func:`memlab.scoring.injection_audit.policy_injector`), beside the baselines of the
  other conditions;
- every distinct request is sent once (the baselines of lanes with the same injection
  settings are the same prompts), concurrently on ``max_workers`` threads, through the
  response cache when ``cache_dir`` is given: an interrupted or repeated QA step answers
  from the cache, content-keyed like every replay call;
- every answer is graded by every judge prompt against the file's answer key and, for a
  question an audit changed, the original one;
- each answer from memory gets the fate of its evidence in the replay
  (:mod:`memlab.scoring.qa_causes`), scored with the run's matcher.

It writes ``qa/answers.jsonl`` (one row per lane, sample, owner, question and condition) and
then ``qa/manifest.json`` (the settings, the prompts' hashes, the backends, row count and
hash of the table); :attr:`memlab.sweeps.run.Run.qa_answers` reads them back. A QA step
whose calls had backend errors writes its rows (the errors included), marks the manifest
incomplete and raises :class:`IncompleteQAError`; running it again retries only the failed
calls (the others come from the cache).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab._version import __version__
from memlab.backends.cache import CacheMode, request_key
from memlab.backends.identity import backend_identity
from memlab.backends.registry import backend_options, is_simulated, resolve_backend
from memlab.core.atomic import atomic_write_text
from memlab.core.document import utc_iso
from memlab.core.llm import Backend, CompletionRequest
from memlab.core.qa_prompts import JudgePrompt
from memlab.core.redact import redact
from memlab.datasets.loader import load_dataset
from memlab.datasets.models import Owner
from memlab.errors import MemlabError
from memlab.matching.base import FactMatcher, matcher_name
from memlab.matching.matchers import default_matcher
from memlab.qa.answering import (
    AnswerSettings,
    AnswerTask,
    CallResult,
    ReplayPoint,
    answer_row,
    answer_tasks,
    call,
    judge_tasks,
)
from memlab.qa.conditions import History, ReadPath
from memlab.scoring.injection_audit import policy_embedder, policy_injector
from memlab.scoring.qa_causes import evidence_fates
from memlab.sweeps.grid import LaneConfig
from memlab.sweeps.lane_backends import LaneBackends
from memlab.sweeps.plan import select_owners
from memlab.sweeps.qa_spec import QAError, QASpec, ResolvedPrompts, resolve_prompts
from memlab.sweeps.run import (
    QA_ANSWERS,
    QA_FORMAT,
    QA_MANIFEST,
    Run,
    file_facts,
    load_run,
    owned_path,
    read_owner_record,
    write_jsonl,
)

__all__ = ["IncompleteQAError", "add_qa", "qa_backend"]

logger = logging.getLogger(__name__)


class IncompleteQAError(MemlabError, RuntimeError):
    """Some answer or judge calls failed (a read-only cache miss, a refused connection).

    The answers are written with their errors and the QA manifest is marked incomplete;
    running the QA step again retries exactly those calls.

    Attributes:
        run: The run, its QA tables loaded.
        failed: How many calls failed.
    """

    def __init__(self, run: Run, failed: int, first_error: str) -> None:
        self.run = run
        self.failed = failed
        super().__init__(
            f"{failed} QA call(s) in {run.path} failed (first: {first_error}); fix the backend "
            "or record the responses, then run the QA step again to retry them (or allow an "
            "incomplete QA step: --allow-incomplete, allow_incomplete=True)"
        )


def qa_backend(spec: str, dataset: Path, judges: Sequence[JudgePrompt] = ()) -> Backend:
    """The default backend factory of a QA step: the registry, giving a backend that answers
    from the dataset (``sim:``) its path and the judge prompts it grades."""
    options = backend_options(spec, dataset)
    if is_simulated(spec) and judges:
        options["judges"] = list(judges)
    return resolve_backend(spec, **options)


@dataclasses.dataclass
class _Job:
    """One lane's replay of one owner (one sample) and the answers asked of it."""

    lane_id: str
    sample: int
    owner: Owner
    record: Mapping[str, Any]
    tasks: list[AnswerTask]


def add_qa(
    run: Run | str | Path,
    spec: QASpec | Mapping[str, Any] | None = None,
    *,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    max_workers: int = 8,
    progress: bool = True,
    matcher: FactMatcher | None = None,
    backend_factory: Callable[[str], Backend] | None = None,
    prompts_dir: str | Path | None = None,
    allow_incomplete: bool = False,
) -> Run:
    """Ask every lane of ``run`` the dataset's questions (see the module docstring).

    Args:
        run: A run, or its directory.
        spec: The QA settings (default: the grid's ``qa:`` key).
        cache_dir: Response cache directory for answers and verdicts; ``None``: no cache.
        cache_mode: ``READ_WRITE``, ``READ_ONLY`` (a miss is a failed call) or ``OFF``.
        max_workers: Concurrent calls.
        progress: Show a progress bar.
        matcher: Decides which stored fact states an evidence fact (default: the default
            matcher).
        backend_factory: Builds a backend from a spec (default: :func:`qa_backend`).
        prompts_dir: Where relative ``answer_prompts``/``judge_prompts`` files are (default:
            the grid file's folder when the run was just swept, else the working directory).
        allow_incomplete: Return the run when some calls failed instead of raising
            :class:`IncompleteQAError`.

    Returns:
        The run with its QA tables (:attr:`~memlab.sweeps.run.Run.qa_answers`).

    Raises:
        QAError: No QA settings, a dataset without questions, an unknown prompt, or a replay
            record missing from the run directory.
    """
    run = load_run(run) if isinstance(run, str | Path) else run
    spec = _spec(run, spec)
    if max_workers < 1:
        raise QAError(f"max_workers must be at least 1, got {max_workers}")
    started = datetime.now(UTC)
    base = Path(prompts_dir) if prompts_dir is not None else run.grid.base_dir
    prompts = resolve_prompts(spec, base)
    dataset = run.dataset_path
    if dataset is None:
        raise QAError(f"{run.path}: the dataset file the run replayed is gone; QA needs it")
    owners = _owners(run, dataset)
    factory = backend_factory or (lambda s: qa_backend(s, dataset, prompts.judges))
    backends = LaneBackends(factory, Path(cache_dir) if cache_dir else None, cache_mode)
    answerer, grader = backends.get(spec.answer_backend), backends.get(spec.grader)
    jobs = _jobs(run, owners, spec, prompts)
    answers = _run_calls(
        answerer, [t.request for job in jobs for t in job.tasks], max_workers, progress, "answers"
    )
    graded = _grade(jobs, answers, answerer, grader, spec, prompts, max_workers, progress)
    matcher = matcher if matcher is not None else default_matcher()
    rows = _rows(jobs, answers, graded, (answerer, grader), spec, prompts, matcher)
    failed = [r for r in rows if r["error"] is not None or r["judge_errors"]]
    identity = _identity(spec, prompts, answerer, grader)
    _write(run, rows, spec, identity, matcher_name(matcher), started, not failed)
    done = dataclasses.replace(run)  # a fresh Run: its tables are read again
    summary = owned_path(run.path / "summary.csv", run.path)
    atomic_write_text(summary, done.summary.to_csv())  # with the QA metrics
    if failed and not allow_incomplete:
        first = next((r["error"] for r in failed if r["error"]), "a judge call failed")
        raise IncompleteQAError(done, len(failed), str(first)[:300])
    return done


def _spec(run: Run, spec: QASpec | Mapping[str, Any] | None) -> QASpec:
    if spec is None:
        if run.grid.qa is None:
            raise QAError(
                f"{run.path}: no QA settings: the run's grid has no qa: key; give them, e.g. "
                "memlab qa RUN --answer-backend local:smollm2"
            )
        return run.grid.qa
    return spec if isinstance(spec, QASpec) else QASpec.model_validate(dict(spec))


def _owners(run: Run, dataset: Path) -> list[Owner]:
    """The owners the run replayed, as it replayed them (selection and session cut)."""
    chosen = set(run.owner_ids)
    owners = [o for o in select_owners(load_dataset(dataset), run.grid) if o.user_id in chosen]
    if not any(o.questions for o in owners):
        raise QAError(
            f"{dataset}: the run's owners have no questions; add questions to the dataset "
            "(docs/dataset-format.md, Questions)"
        )
    return owners


def _read_path(config: LaneConfig) -> ReadPath:
    """The lane's injection settings as the agent's read path (policies ranked by question)."""
    memory_config = config.memory_config()
    policy = config.injection_policy
    return ReadPath(
        max_tokens=config.max_injection_tokens,
        token_counting=config.token_counting,
        enabled=config.injection_enabled,
        inject=policy_injector(memory_config, policy, policy_embedder(policy)),
    )


def _jobs(run: Run, owners: Sequence[Owner], spec: QASpec, prompts: ResolvedPrompts) -> list[_Job]:
    """Every (lane, owner, sample) replay with the answer tasks of its questions."""
    settings = AnswerSettings(prompts.answer, spec.answer_params())
    histories: dict[tuple[str, str], History] = {}
    samples = int(run.manifest.get("samples", 1) or 1)
    jobs: list[_Job] = []
    for lane_id, config in run.lanes.items():
        read = _read_path(config)
        for owner in owners:
            if not owner.questions:
                continue
            key = (owner.user_id, config.token_counting)
            if key not in histories and "full_context" in spec.conditions:
                histories[key] = History(owner, config.token_counting)
            for sample in range(samples):
                record = read_owner_record(run.path, lane_id, owner.user_id, sample)
                tasks = _owner_tasks(owner, record, spec, settings, read, histories.get(key))
                jobs.append(_Job(lane_id, sample, owner, record, tasks))
    return jobs


def _owner_tasks(
    owner: Owner,
    record: Mapping[str, Any],
    spec: QASpec,
    settings: AnswerSettings,
    read: ReadPath,
    history: History | None,
) -> list[AnswerTask]:
    snapshots = record.get("snapshots", [])
    if len(snapshots) != len(owner.sessions):
        raise QAError(
            f"{owner.user_id}: the replay record has {len(snapshots)} snapshots for "
            f"{len(owner.sessions)} sessions; the dataset changed since the sweep: rerun it"
        )
    tasks: list[AnswerTask] = []
    asked = sorted({owner.session_index(q.after_session) for q in owner.questions})
    for index in asked:
        point = ReplayPoint(owner, index, snapshots[index])
        questions = owner.questions_after(index)
        tasks += answer_tasks(point, questions, spec.conditions, settings, read, history)
    return tasks


def _key(backend: Backend, request: CompletionRequest) -> str:
    return request_key(backend.name, request.model or backend.model, request)


def _run_calls(
    backend: Backend,
    requests: Iterable[CompletionRequest],
    max_workers: int,
    progress: bool,
    what: str,
) -> dict[str, CallResult]:
    """Each distinct request's result, by its cache key, sent on ``max_workers`` threads."""
    distinct: dict[str, CompletionRequest] = {}
    for request in requests:
        distinct.setdefault(_key(backend, request), request)
    # Imported here: tqdm.auto warns at import time in a notebook without ipywidgets.
    from tqdm.auto import tqdm

    results: dict[str, CallResult] = {}
    with (
        ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="memlab-qa") as pool,
        tqdm(total=len(distinct), desc=f"qa {what}", unit="call", disable=not progress) as bar,
    ):
        futures = {pool.submit(call, backend, r): key for key, r in distinct.items()}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            bar.update(1)
    logger.info("qa %s: %d distinct calls", what, len(distinct))
    return results


def _grade(
    jobs: Sequence[_Job],
    answers: Mapping[str, CallResult],
    answerer: Backend,
    grader: Backend,
    spec: QASpec,
    prompts: ResolvedPrompts,
    max_workers: int,
    progress: bool,
) -> dict[str, CallResult]:
    requests = []
    for job in jobs:
        for task in job.tasks:
            text = answers[_key(answerer, task.request)].text
            if text is not None:
                judged = judge_tasks(task.question, text, prompts.judges, spec.judge_params())
                requests += [j.request for j in judged]
    return _run_calls(grader, requests, max_workers, progress, "verdicts")


def _rows(
    jobs: Sequence[_Job],
    answers: Mapping[str, CallResult],
    graded: Mapping[str, CallResult],
    backends: tuple[Backend, Backend],
    spec: QASpec,
    prompts: ResolvedPrompts,
    matcher: FactMatcher,
) -> list[dict[str, Any]]:
    """The answer rows of every job, with their verdicts and their evidence's fate."""
    answerer, grader = backends
    rows: list[dict[str, Any]] = []
    for job in jobs:
        mine: list[dict[str, Any]] = []
        for task in job.tasks:
            result = answers[_key(answerer, task.request)]
            verdicts: dict[str, dict[str, CallResult]] = {}
            if result.text is not None:
                judged = judge_tasks(
                    task.question, result.text, prompts.judges, spec.judge_params()
                )
                for j in judged:
                    verdicts.setdefault(j.judge, {})[j.key] = graded[_key(grader, j.request)]
            row = answer_row(task, result, verdicts)
            mine.append({"lane_id": job.lane_id, "sample": job.sample, **row})
        _add_fates(job, mine, matcher)
        rows += mine
    return rows


def _add_fates(job: _Job, rows: list[dict[str, Any]], matcher: FactMatcher) -> None:
    """The fate of each answer from memory's evidence (other conditions: None)."""
    memory = [(i, r) for i, r in enumerate(rows) if r["condition"] == "memory"]
    asked = [(job.tasks[i].question, r["session_index"], r["injected"]) for i, r in memory]
    warm = getattr(matcher, "warm", None)
    if callable(warm):  # read and embed the texts in one batch (the default matcher)
        snapshots = job.record.get("snapshots", [])
        warm(
            [f.content for s in job.owner.sessions for f in s.labels.facts]
            + [str(f.get("content", "")) for snap in snapshots for f in snap.get("facts", [])]
        )
    fates = evidence_fates(job.owner, job.record, asked, matcher.covers)
    for row in rows:
        row["fate"], row["evidence_fates"] = None, None
    for (i, _row), (fate, detail) in zip(memory, fates, strict=True):
        rows[i]["fate"], rows[i]["evidence_fates"] = fate, detail


def _identity(
    spec: QASpec, prompts: ResolvedPrompts, answerer: Backend, grader: Backend
) -> dict[str, Any]:
    return {
        "memlab": __version__,
        **prompts.identity(),
        "answer_backend": backend_identity(answerer),
        "judge_backend": backend_identity(grader),
        "answer_params": spec.answer_params().as_dict(),
        "judge_params": spec.judge_params().as_dict(),
    }


def _write(
    run: Run,
    rows: list[dict[str, Any]],
    spec: QASpec,
    identity: dict[str, Any],
    matcher: str,
    started: datetime,
    complete: bool,
) -> None:
    """The answer table, then the QA manifest (last: a QA step that stopped leaves none)."""
    qa_dir = owned_path(run.path / QA_ANSWERS.parent, run.path, "QA directory")
    qa_dir.mkdir(parents=True, exist_ok=True)
    owned_path(run.path / QA_MANIFEST, run.path).unlink(missing_ok=True)
    write_jsonl(owned_path(run.path / QA_ANSWERS, run.path), redact(rows))
    manifest = {
        "qa_format": QA_FORMAT,
        "complete": complete,
        "spec": spec.model_dump(mode="json"),
        "identity": identity,
        "matcher": matcher,
        "lanes": list(run.lanes),
        "owners": sorted({r["user_id"] for r in rows}),
        "started_at": utc_iso(started),
        "finished_at": utc_iso(datetime.now(UTC)),
        "files": {QA_ANSWERS.name: file_facts(run.path / QA_ANSWERS, run.path)},
    }
    atomic_write_text(owned_path(run.path / QA_MANIFEST, run.path), json.dumps(manifest, indent=2))
    logger.info("qa: %d answers -> %s", len(rows), run.path / QA_ANSWERS)
