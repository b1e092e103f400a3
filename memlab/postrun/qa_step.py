"""Add memory QA to a run: ask every lane's memory the dataset's questions, grade, record.

:func:`add_qa` reads a finished run directory and, for every lane, owner and repeated sample,
asks each question right after the session its ``after_session`` names, through
:mod:`memlab.qa.answering`:

- the lane's memory then is the replay's snapshot; it reaches the answer prompt through the
  lane's injection path (budget, token counting, policy ranked by the question:
  :func:`memlab.scoring.qa.injection_audit.policy_injector`), beside the baselines of the
  other conditions;
- every distinct request is sent once (the baselines of lanes with the same injection
  settings are the same prompts), concurrently on ``max_workers`` threads with no barrier
  between answering and grading (:mod:`memlab.postrun.qa_calls`), through the response cache
  when ``cache_dir`` is given: an interrupted or repeated QA step answers
  from the cache, content-keyed like every replay call;
- every answer is graded by every judge prompt against the file's answer key and, for a
  question an audit changed, the original one; a ``procedure`` question, asked under every
  condition like the others, is not judged but scored by the steps its reply names in order
  (:func:`memlab.qa.procedure_scores.reply_scores`: ``steps_named``, ``step_accuracy``);
- each answer from memory gets the fate of its evidence in the replay
  (:mod:`memlab.scoring.qa.qa_causes`), scored with the run's matcher (the one
  ``environment.json`` records) unless another is given; the QA manifest names it.

It writes ``qa/answers.jsonl`` (one row per lane, sample, owner, question and condition) and
then ``qa/manifest.json`` (the settings, the prompts' hashes, the backends, row count and
hash of the table); :attr:`memlab.runs.run.Run.qa_answers` reads them back. A QA step
whose calls had backend errors writes its rows (the errors included), marks the manifest
incomplete and raises :class:`IncompleteQAError`; running it again retries only the failed
calls (the others come from the cache).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab._version import __version__
from memlab.backends.caching.cache import CacheMode
from memlab.backends.costs.spend import CostLimitError, SpendLimit
from memlab.backends.identity import backend_identity
from memlab.backends.local.llama_batch import BatchOptions
from memlab.backends.registry import backend_options, is_simulated, resolve_backend
from memlab.backends.remote.rate_limit import RateLimit, RateLimiters
from memlab.core.base.redact import redact
from memlab.core.jsondoc.document import utc_iso
from memlab.core.pipeline.llm import Backend
from memlab.datasets.models import Owner
from memlab.errors import MemlabError
from memlab.grids.lane_backends import LaneBackends
from memlab.grids.qa_spec import QAError, QASpec, ResolvedPrompts, resolve_prompts
from memlab.grids.rate_limit_spec import limits_with_override
from memlab.matching.base import FactMatcher, matcher_name
from memlab.matching.matchers import default_matcher, resolve_matcher
from memlab.postrun.qa_calls import ask_and_grade
from memlab.postrun.qa_jobs import Fate, QAJob, answer_rows, read_path, run_owners
from memlab.qa.answering import (
    AnswerSettings,
    AnswerTask,
    ReplayPoint,
    answer_tasks,
)
from memlab.qa.conditions import History, ReadPath
from memlab.qa.qa_prompts import JudgePrompt
from memlab.runs.run import Run, load_run
from memlab.runs.run_lock import writes_run
from memlab.runs.rundir import QA_ANSWERS, QA_FORMAT, QA_MANIFEST
from memlab.scoring.qa.qa_causes import evidence_fates
from memlab.scoring.qa.qa_verdicts import errors_sentence

__all__ = [
    "IncompleteQAError",
    "JudgeErrorsError",
    "QAOptions",
    "add_fates",
    "add_qa",
    "qa_backend",
    "qa_rates",
    "rewrite_fates",
    "run_matcher",
    "run_qa",
]

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


class JudgeErrorsError(MemlabError, RuntimeError):
    """More answers than allowed have no verdict from a judge (its reply named no single
    verdict, or its call failed). They are counted wrong and the QA step is written, but a
    low accuracy made of them says nothing about the memory, so the step does not pass.

    Attributes:
        run: The run, its QA tables loaded.
        counts: :attr:`~memlab.runs.run.Run.qa_error_counts` of its answers.
        allowed: The share of answers without a verdict that was allowed.
    """

    def __init__(self, run: Run, counts: dict[str, int], allowed: float) -> None:
        self.run, self.counts, self.allowed = run, counts, allowed
        super().__init__(
            f"{run.path}: {errors_sentence(counts)} (allowed: {allowed:.0%} of answers); the "
            "answers are written. Use a judge that follows the judge prompt (check one with "
            "memlab judge audit), or accept them: --max-judge-errors SHARE, "
            "max_judge_errors=SHARE"
        )


def _judge_errors(run: Run, allowed: float) -> JudgeErrorsError | None:
    """The error to raise when a judge left more than ``allowed`` of the answers without a
    verdict (None when none did)."""
    counts = dict(run.qa_error_counts)  # the error keeps its own copy
    answers = max(counts["answers"], 1)
    worst = max((v for k, v in counts.items() if k.startswith("judge_errors:")), default=0)
    return JudgeErrorsError(run, counts, allowed) if worst / answers > allowed else None


def qa_backend(
    spec: str,
    dataset: Path,
    judges: Sequence[JudgePrompt] = (),
    batch: BatchOptions | None = None,
) -> Backend:
    """The default backend factory of a QA step: the registry, giving a backend that answers
    from the dataset (``sim:``) its path and the judge prompts it grades, and the local model
    its batched decoding (``batch``; None: one call at a time)."""
    options = backend_options(spec, dataset, batch)
    if is_simulated(spec) and judges:
        options["judges"] = list(judges)
    return resolve_backend(spec, **options)


@dataclass(frozen=True)
class QAOptions:
    """How a QA step runs, as one object: the keyword arguments of :func:`add_qa` (see there),
    which :func:`~memlab.sweeps.driver.sweep` passes to the QA step of a grid with ``qa:``."""

    cache_dir: str | Path | None = None
    cache_mode: CacheMode = CacheMode.READ_WRITE
    max_workers: int = 8
    progress: bool = True
    matcher: FactMatcher | None = None
    backend_factory: Callable[[str], Backend] | None = None
    prompts_dir: str | Path | None = None
    allow_incomplete: bool = False
    max_judge_errors: float = 0.0
    spend: SpendLimit | None = None
    """The cost limit the calls count against (``--max-cost``; None: no limit)."""
    rates: RateLimiters | None = None
    """The pace of the calls, one per endpoint and model (``--rpm``/``--tpm``; None: a pool
    of the step's own, learning the servers' limits from their replies)."""
    batch: BatchOptions | None = None
    """How the local model decodes concurrent calls together (``--local-batch``; None: the
    run's grid ``local_batch:``). Replies and cache keys are the same either way."""

    def factory(
        self, run: Run, dataset: Path, judges: Sequence[JudgePrompt]
    ) -> Callable[[str], Backend]:
        """The backend factory of a pass over ``run``: :attr:`backend_factory`, else
        :func:`qa_backend` with the run's ``dataset``, ``judges`` and the batched decoding."""
        if self.backend_factory is not None:
            return self.backend_factory
        batch = self.batch if self.batch is not None else run.grid.local_batch
        return lambda spec: qa_backend(spec, dataset, judges, batch)


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
    max_judge_errors: float = 0.0,
    max_cost: float | None = None,
    rate_limit: RateLimit | None = None,
    local_batch: int | None = None,
) -> Run:
    """Ask every lane of ``run`` the dataset's questions (see the module docstring).

    Args:
        run: A run, or its directory.
        spec: The QA settings (default: the grid's ``qa:`` key).
        cache_dir: Response cache directory for answers and verdicts; ``None``: no cache.
        cache_mode: ``READ_WRITE``, ``READ_ONLY`` (a miss is a failed call) or ``OFF``.
        max_workers: Concurrent calls.
        progress: Show a progress bar.
        matcher: Decides which stored fact states an evidence fact (default: the matcher
            that scored the run, :func:`run_matcher`).
        backend_factory: Builds a backend from a spec (default: :func:`qa_backend`).
        prompts_dir: Where relative ``answer_prompts``/``judge_prompts`` files are (default:
            the grid file's folder when the run was just swept, else the working directory).
        allow_incomplete: Return the run when some calls failed instead of raising
            :class:`IncompleteQAError`.
        max_judge_errors: The share of answers a judge may leave without a verdict (an
            unreadable reply) before :class:`JudgeErrorsError` is raised (default 0: none).
        max_cost: USD the calls may spend (declared prices, :mod:`memlab.backends.costs.spend`):
            a call that could pass it is not sent, and the step stops with
            :class:`~memlab.backends.costs.spend.CostLimitError` (what finished is written and
            running the step again resumes).
        rate_limit: Requests and tokens a minute the calls of each OpenAI-compatible
            endpoint and model are paced at, shared by every worker thread
            (:mod:`memlab.backends.remote.rate_limit`); servers' ``x-ratelimit-*`` headers can only
            lower it. Overrides the run's grid ``rate_limit:`` key value by value.
        local_batch: How many concurrent greedy calls the local model decodes together
            (``docs/local-model.md``; default: the run's grid ``local_batch:``).

    Returns:
        The run with its QA tables (:attr:`~memlab.runs.run.Run.qa_answers`).

    Raises:
        QAError: No QA settings, a dataset without questions, an unknown prompt, or a replay
            record missing from the run directory.
        IncompleteQAError: Some calls failed (written; running the step again retries them).
        JudgeErrorsError: A judge gave no verdict on more than ``max_judge_errors`` of the
            answers (written).
        DatasetChangedError: The dataset file is not the one the run replayed.
        RunLockedError: Another writer holds the run (:mod:`memlab.runs.run_lock`).
    """
    run = load_run(run) if isinstance(run, str | Path) else run
    options = QAOptions(
        cache_dir=cache_dir,
        cache_mode=cache_mode,
        max_workers=max_workers,
        progress=progress,
        matcher=matcher,
        backend_factory=backend_factory,
        prompts_dir=prompts_dir,
        allow_incomplete=allow_incomplete,
        max_judge_errors=max_judge_errors,
        spend=SpendLimit(max_cost) if max_cost is not None else None,
        rates=qa_rates(run, rate_limit),
        batch=BatchOptions(lanes=local_batch) if local_batch is not None else None,
    )
    return run_qa(run, spec, options)


def qa_rates(run: Run, rate_limit: RateLimit | None) -> RateLimiters | None:
    """The pace of a QA step on ``run``: its grid's ``rate_limit:`` key, each value
    ``rate_limit`` sets (``--rpm``/``--tpm``) replacing the grid's (None: neither sets one)."""
    limits = limits_with_override(run.grid.rate_limit, rate_limit)
    return RateLimiters(limits) if limits else None


@writes_run("qa")
def run_qa(
    run: Run | str | Path, spec: QASpec | Mapping[str, Any] | None, options: QAOptions
) -> Run:
    """:func:`add_qa` with its settings as one :class:`QAOptions`."""
    run = load_run(run) if isinstance(run, str | Path) else run
    spec = _spec(run, spec)
    if options.max_workers < 1:
        raise QAError(f"max_workers must be at least 1, got {options.max_workers}")
    started = datetime.now(UTC)
    base = Path(options.prompts_dir) if options.prompts_dir is not None else run.grid.base_dir
    prompts = resolve_prompts(spec, base)
    dataset = run.dataset_path
    if dataset is None:
        raise QAError(f"{run.path}: the dataset file the run replayed is gone; QA needs it")
    owners, left_out = run_owners(run, dataset)
    cache_dir = Path(options.cache_dir) if options.cache_dir else None
    factory = options.factory(run, dataset, prompts.judges)
    backends = LaneBackends(factory, cache_dir, options.cache_mode, options.spend, options.rates)
    answerer, grader = backends.get(spec.answer_backend), backends.get(spec.grader)
    matcher = options.matcher if options.matcher is not None else run_matcher(run)
    jobs: list[QAJob] = []

    def batches() -> Iterator[list[AnswerTask]]:
        for job in _jobs(run, owners, spec, prompts):  # built while the first calls run
            jobs.append(job)
            yield job.tasks

    calls = ask_and_grade(
        batches(),
        answerer,
        grader,
        prompts.judges,
        spec.judge_params(),
        max_workers=options.max_workers,
        progress=options.progress,
        alongside=lambda: [_fates(job, matcher) for job in jobs],
    )
    rows = answer_rows(jobs, calls, (answerer, grader), spec, prompts)
    failed = [r for r in rows if r["error"] is not None or r["judge_errors"]]
    identity = _identity(spec, prompts, answerer, grader)
    _write(run, rows, spec, identity, matcher_name(matcher), started, not failed, left_out)
    done = dataclasses.replace(run)  # a fresh Run: its tables are read again
    run.dir.write_summary(done.summary.to_csv())  # with the QA metrics
    spend = options.spend
    if spend is not None and spend.stopped:
        raise CostLimitError(spend.spent, spend.limit, len(failed), "QA answers")
    if failed and not options.allow_incomplete:
        first = next((r["error"] for r in failed if r["error"]), "a judge call failed")
        raise IncompleteQAError(done, len(failed), str(first)[:300])
    unreadable = _judge_errors(done, options.max_judge_errors)
    if unreadable is not None:
        raise unreadable
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


def _jobs(
    run: Run, owners: Sequence[Owner], spec: QASpec, prompts: ResolvedPrompts
) -> Iterator[QAJob]:
    """Every (lane, owner, sample) replay with the answer tasks of its questions."""
    settings = spec.answer_settings(prompts.answer)
    histories: dict[tuple[str, str], History] = {}
    samples = int(run.manifest.get("samples", 1) or 1)
    for lane_id, config in run.lanes.items():
        read = read_path(config)
        for owner in owners:
            if not owner.questions:
                continue
            key = (owner.user_id, config.token_counting)
            if key not in histories:  # counted only if a condition reads it
                histories[key] = History(owner, config.token_counting)
            for sample in range(samples):
                record = run.dir.read_owner_record(lane_id, owner.user_id, sample)
                tasks = _owner_tasks(owner, record, spec, settings, read, histories.get(key))
                yield QAJob(lane_id, sample, owner, record, tasks)


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
    # run_owners left out (and counted) the questions after a session the run did not replay.
    asked = sorted({owner.session_index(q.after_session) for q in owner.questions})
    procedures = owner.procedure_questions()
    for index in asked:
        point = ReplayPoint(owner, index, snapshots[index])
        questions = owner.questions_after(index)
        tasks += answer_tasks(point, questions, spec.conditions, settings, read, history)
        steps = [q for at, q in procedures if at == index]
        tasks += (
            answer_tasks(point, steps, spec.conditions, settings, read, history) if steps else []
        )
    return tasks


def _fates(job: QAJob, matcher: FactMatcher) -> list[Fate]:
    """The fate of each task's evidence (answers from memory only), in task order."""
    rows: list[dict[str, Any]] = [
        {
            "condition": t.condition,
            "question_id": t.question.id,
            "session_index": t.session_index,
            "injected": list(t.context.injected),
            "fate": None,
            "evidence_fates": None,
        }
        for t in job.tasks
    ]
    add_fates(job.owner, job.record, rows, matcher)
    return [(r["fate"], r["evidence_fates"]) for r in rows]


def add_fates(
    owner: Owner,
    record: Mapping[str, Any],
    rows: Sequence[dict[str, Any]],
    matcher: FactMatcher,
) -> None:
    """Set ``fate`` and ``evidence_fates`` of each answer from memory among ``rows`` (answer
    rows of ``owner``'s replay ``record``), with ``matcher`` deciding which stored fact holds
    an evidence fact (:func:`~memlab.scoring.qa.qa_causes.evidence_fates`). Rescoring a run with
    another matcher calls it again."""
    questions = {q.id: q for q in owner.questions}
    memory = [r for r in rows if r["condition"] == "memory"]
    asked = [(questions[r["question_id"]], r["session_index"], r["injected"]) for r in memory]
    warm = getattr(matcher, "warm", None)
    if callable(warm):  # read and embed the texts in one batch (the default matcher)
        snapshots = record.get("snapshots", [])
        warm(
            [f.content for s in owner.sessions for f in s.labels.facts]
            + [str(f.get("content", "")) for snap in snapshots for f in snap.get("facts", [])]
        )
    for row, (fate, detail) in zip(
        memory, evidence_fates(owner, record, asked, matcher.covers), strict=True
    ):
        row["fate"], row["evidence_fates"] = fate, detail


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
    left_out: int = 0,
) -> None:
    """The answer table, then the QA manifest (last: a QA step that stopped leaves none);
    ``left_out``: the questions not asked, after a session the run did not replay."""
    manifest = {
        "qa_format": QA_FORMAT,
        "complete": complete,
        "spec": spec.model_dump(mode="json"),
        "identity": identity,
        "matcher": matcher,
        "lanes": list(run.lanes),
        "owners": sorted({r["user_id"] for r in rows}),
        "questions_left_out": left_out,
        "started_at": utc_iso(started),
        "finished_at": utc_iso(datetime.now(UTC)),
    }
    path = run.dir.write_step_table(QA_ANSWERS, redact(rows), QA_MANIFEST, manifest, fresh=True)
    logger.info("qa: %d answers -> %s", len(rows), path)


def rewrite_fates(run: Run, rows: list[dict[str, Any]], matcher: str) -> None:
    """Rewrite ``run``'s answer table as ``rows`` (the same answers, their fates scored again
    by the matcher named ``matcher``); the QA manifest, written last, records that matcher and
    the table's new checksum."""
    manifest = {**run.qa_manifest, "matcher": matcher}
    run.dir.write_step_table(QA_ANSWERS, rows, QA_MANIFEST, manifest)


def run_matcher(run: Run) -> FactMatcher:
    """The matcher that scored ``run`` (``environment.json``), built again; the default
    matcher when the run records none, or one that cannot be built offline (an LLM judge)
    or is not installed (with a warning naming it). A run scored by ``default`` read on an
    install without the embeddings extra gets ``default-lexical``, with a warning: the QA
    step records that name, not the run's."""
    recorded = run.environment.get("matcher")
    name = str(recorded.get("name") or "") if isinstance(recorded, dict) else ""
    if name.startswith("judge"):
        logger.warning(
            "%s: matcher %r asks an LLM; using the default matcher (give the judge matcher "
            "explicitly to use it)",
            run.path,
            name,
        )
    elif name:
        try:
            built = resolve_matcher(name)
        except MemlabError as exc:
            logger.warning(
                "%s: matcher %r unavailable (%s); using the default", run.path, name, exc
            )
        else:
            if name == "default" and matcher_name(built) != name:
                # Without the embeddings extra `default` builds `default-lexical`.
                logger.warning(
                    "%s: the run was scored by matcher %r, which this install cannot build; "
                    "using %r (install memlab[embeddings] to use %r)",
                    run.path,
                    name,
                    matcher_name(built),
                    name,
                )
            return built
    return default_matcher()
