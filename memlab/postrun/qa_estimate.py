"""The calls a QA step would send, estimated without calling a model (``--dry-run``).

Answer requests are built exactly as :func:`~memlab.postrun.qa_step.add_qa` builds them,
from each lane's memory after each question's session (a finished run's records, or the
memories of a sweep's dry replay), and looked up in the response cache with the cache's key
(:class:`~memlab.backends.costs.estimate.CacheProbe`). A judge request depends on the answer: for a
cached answer it is built from that answer and looked up too; for an answer the model has not
given, it is built from the question's labelled answer and counted as a call. Requests are
counted once per key, as the step sends them. The simulated model's calls are made (it is an
instrument, not a model) and cost nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlab.backends.caching.cache import CacheMode, request_key
from memlab.backends.costs.estimate import CacheProbe, Estimate, Tally
from memlab.backends.registry import cacheable, is_simulated
from memlab.core.pipeline.llm import Backend, CompletionRequest, GenerationParams
from memlab.datasets.models import Owner
from memlab.grids.lane import LaneConfig
from memlab.grids.qa_spec import QAError, QASpec, ResolvedPrompts, resolve_prompts
from memlab.postrun.qa_jobs import read_path, run_owners
from memlab.postrun.qa_step import qa_backend
from memlab.postrun.retention import retention_tasks
from memlab.qa.answering import AnswerTask, ReplayPoint, answer_tasks, judge_tasks, references
from memlab.qa.conditions import History
from memlab.runs.run import Run

__all__ = ["QAPlan", "dry_run_qa", "estimate_qa", "forgetting_asks"]

Snapshots = Callable[[str, Owner, int], Sequence[Mapping[str, Any]] | None]
"""(lane id, owner, sample) -> the lane's memory after each session (``None``: not replayed)."""


@dataclass(frozen=True)
class QAPlan:
    """What a QA step asks: its settings, prompts, lanes, owners and samples."""

    spec: QASpec
    prompts: ResolvedPrompts
    lanes: Mapping[str, LaneConfig]
    owners: Sequence[Owner]
    samples: int
    dataset: Path


class _Asker:
    """Sends (in the dry run's sense) each distinct request of one kind once."""

    def __init__(self, backend: Backend, spec: str, tally: Tally, probe: CacheProbe) -> None:
        self.backend = backend
        self.tally = tally
        self.probe = probe if cacheable(spec) else CacheProbe(None)
        self.seen: dict[str, str | None] = {}

    def ask(self, request: CompletionRequest, stand_in: str, exact: bool) -> str | None:
        """The reply the run would continue with (the cached one, else ``stand_in``), once
        per key; ``None`` for a request already counted. ``exact``: the request is the one
        the run would send (not built on a stand-in reply)."""
        model = request.model or self.backend.model
        key = request_key(self.backend.name, model, request)
        if key in self.seen:
            return self.seen[key]
        if self.tally.simulated:
            done = self.backend.complete(request)
            self.tally.simulated_call(done)
            reply: str | None = done.text
        else:
            hit = self.probe.lookup(self.backend.name, model, request) if exact else None
            if hit is not None:
                self.tally.hit(request, hit)
                reply = hit.text
            else:
                self.tally.miss(request, stand_in)
                reply = None
        self.seen[key] = reply
        return reply


def estimate_qa(
    plan: QAPlan,
    snapshots: Snapshots,
    estimate: Estimate,
    probe: CacheProbe,
    factory: Callable[[str], Backend] | None = None,
    *,
    forgetting: bool = False,
) -> None:
    """Add the QA step's requests to ``estimate`` (see the module docstring); with
    ``forgetting``, then the forgetting operating curve's (:func:`forgetting_asks`)."""
    spec, prompts = plan.spec, plan.prompts
    build = factory or (lambda s: qa_backend(s, plan.dataset, prompts.judges))
    answerer, grader = build(spec.answer_backend), build(spec.grader)
    answers, verdicts = _askers("qa", plan.spec, (answerer, grader), estimate, probe)
    settings = spec.answer_settings(prompts.answer)
    judge_params = spec.judge_params()
    for lane_id, config in plan.lanes.items():
        read = read_path(config)
        for owner in plan.owners:
            if not owner.questions:
                continue
            full = "full_context" in spec.conditions
            history = History(owner, config.token_counting) if full else None
            for sample in range(plan.samples):
                memories = snapshots(lane_id, owner, sample)
                if memories is None or len(memories) != len(owner.sessions):
                    continue  # not replayed (an unfinished replay): the step would stop
                for index in range(len(owner.sessions)):
                    questions = owner.questions_after(index)
                    point = ReplayPoint(owner, index, memories[index])
                    tasks = answer_tasks(point, questions, spec.conditions, settings, read, history)
                    for task in tasks:
                        _ask_and_grade(task, answers, verdicts, prompts, judge_params)
    if forgetting:
        again = _askers("forgetting", plan.spec, (answerer, grader), estimate, probe)
        for before, after in zip((answers, verdicts), again, strict=True):
            if after.probe.cache_dir is not None:  # asked before: the cache serves it
                after.seen = before.seen
        forgetting_asks(plan, snapshots, again)


def forgetting_asks(plan: QAPlan, snapshots: Snapshots, askers: tuple[_Asker, _Asker]) -> None:
    """The forgetting operating curve's requests (:func:`memlab.postrun.retention.
    retention_tasks` of every lane, owner and sample), after the QA step's."""
    settings = plan.spec.answer_settings(plan.prompts.answer)
    judge_params = plan.spec.judge_params()
    for lane_id, config in plan.lanes.items():
        read = read_path(config)
        for owner in plan.owners:
            for sample in range(plan.samples):
                memories = snapshots(lane_id, owner, sample)
                if memories is None or len(memories) != len(owner.sessions):
                    continue
                for task in retention_tasks(owner, memories, settings, read):
                    _ask_and_grade(task, *askers, plan.prompts, judge_params)


def _askers(
    step: str,
    spec: QASpec,
    backends: tuple[Backend, Backend],
    estimate: Estimate,
    probe: CacheProbe,
) -> tuple[_Asker, _Asker]:
    """The answer and verdict askers of ``step``, each tallied under its own name."""
    made = []
    for kind, name, backend in zip(
        ("answers", "verdicts"), (spec.answer_backend, spec.grader), backends, strict=True
    ):
        tally = estimate.tally(f"{step} {kind}", name, backend.model, is_simulated(name))
        made.append(_Asker(backend, name, tally, probe))
    return made[0], made[1]


def _ask_and_grade(
    task: AnswerTask,
    answers: _Asker,
    verdicts: _Asker,
    prompts: ResolvedPrompts,
    judge_params: GenerationParams,
) -> None:
    """One answer request and the judge requests of its (cached or stand-in) answer."""
    gold = references(task.question)["answer"]
    reply = answers.ask(task.request, gold, exact=True)
    answer = reply if reply is not None else gold
    for judge in judge_tasks(task.question, answer, prompts.judges, judge_params):
        verdicts.ask(judge.request, "CORRECT", exact=reply is not None)


def dry_run_qa(
    run: Run,
    spec: QASpec,
    *,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    backend_factory: Callable[[str], Backend] | None = None,
    forgetting: bool = False,
) -> Estimate:
    """The calls, tokens and cost :func:`~memlab.postrun.qa_step.add_qa` with these arguments
    would spend on ``run`` (see the module docstring), with ``forgetting`` the forgetting
    operating curve's after it too; nothing is written.

    Raises:
        QAError: As :func:`~memlab.postrun.qa_step.add_qa` would, before anything is sent.
    """
    dataset = run.dataset_path
    if dataset is None:
        raise QAError(f"{run.path}: the dataset file the run replayed is gone; QA needs it")
    prompts = resolve_prompts(spec, run.grid.base_dir)
    owners = run_owners(run, dataset).owners
    samples = int(run.manifest.get("samples", 1) or 1)
    plan = QAPlan(spec, prompts, run.lanes, owners, samples, dataset)
    estimate = Estimate(f"memory QA of {run.name}: {len(run.lanes)} lanes x {len(owners)} owners")

    def snapshots(lane_id: str, owner: Owner, sample: int) -> Sequence[Mapping[str, Any]] | None:
        record = run.dir.read_owner_record(lane_id, owner.user_id, sample)
        found = record.get("snapshots") if record is not None else None
        return found if isinstance(found, list) else None

    use_cache = cache_dir is not None and cache_mode is not CacheMode.OFF
    probe = CacheProbe(cache_dir if use_cache else None)
    estimate_qa(plan, snapshots, estimate, probe, backend_factory, forgetting=forgetting)
    estimate.notes.append(
        "a judge request of an answer the model has not given is built on the labelled "
        "answer and counted as a call"
    )
    if forgetting:
        estimate.notes.append(
            "forgetting: the forgetting operating curve's requests, every answerable question "
            "asked again of every lane after each later session; with the cache, one the QA "
            "step sends first is a cache hit and counted once"
        )
    return estimate
