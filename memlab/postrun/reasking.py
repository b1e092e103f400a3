"""What the passes that ask a run's questions again after the QA step share with it: the
consolidation curve (:mod:`memlab.postrun.consolidation`) and retention, the forgetting
operating curve's answers (:mod:`memlab.postrun.retention`).

Both send their calls through the QA step's path, with its settings as one
:class:`~memlab.postrun.qa_step.QAOptions`: the run's QA settings and prompts, the backends
behind the response cache, the cost limit and the pace. :func:`reask_options` builds those
options from keyword arguments (a cost limit of the pass's own), :func:`reasking` the
backends and owners, and :func:`cost_stop` the error of a pass that stopped at its limit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memlab.backends.caching.cache import CacheMode
from memlab.backends.costs.spend import CostLimitError, SpendLimit
from memlab.backends.remote.rate_limit import RateLimit
from memlab.core.pipeline.llm import Backend
from memlab.datasets.models import Owner
from memlab.grids.lane_backends import LaneBackends
from memlab.grids.qa_spec import QAError, QASpec, ResolvedPrompts, resolve_prompts
from memlab.postrun.qa_jobs import run_owners
from memlab.postrun.qa_step import QAOptions, qa_rates
from memlab.runs.run import Run

__all__ = ["Reasking", "cost_stop", "reask_options", "reasking"]


def reask_options(
    run: Run,
    *,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    max_workers: int = 8,
    progress: bool = False,
    backend_factory: Callable[[str], Backend] | None = None,
    prompts_dir: str | Path | None = None,
    max_cost: float | None = None,
    rate_limit: RateLimit | None = None,
) -> QAOptions:
    """The options of a pass over ``run`` from its keyword arguments (as for
    :func:`memlab.postrun.qa_step.add_qa`): a cost limit of its own (``max_cost``), the pace
    of the run's grid ``rate_limit:`` with ``rate_limit`` over it."""
    return QAOptions(
        cache_dir=cache_dir,
        cache_mode=cache_mode,
        max_workers=max_workers,
        progress=progress,
        backend_factory=backend_factory,
        prompts_dir=prompts_dir,
        spend=SpendLimit(max_cost) if max_cost is not None else None,
        rates=qa_rates(run, rate_limit),
    )


@dataclass(frozen=True)
class Reasking:
    """How a pass asks: the run's QA settings and prompts, its owners (with questions) and
    the answering and grading backends (cached, counted against the cost limit, paced)."""

    spec: QASpec
    prompts: ResolvedPrompts
    owners: list[Owner]
    answerer: Backend
    grader: Backend


def reasking(run: Run, options: QAOptions) -> Reasking:
    """The :class:`Reasking` of a pass over ``run`` (which has memory QA settings).

    Raises:
        QAError: The run's dataset file is gone.
        DatasetChangedError: The dataset file is not the one the run replayed.
    """
    spec = QASpec.model_validate(run.qa_manifest["spec"])
    base = Path(options.prompts_dir) if options.prompts_dir is not None else run.grid.base_dir
    prompts = resolve_prompts(spec, base)
    dataset = run.dataset_path
    if dataset is None:
        raise QAError(f"{run.path}: the dataset file the run replayed is gone; QA needs it")
    owners = run_owners(run, dataset).owners
    factory = options.factory(run, dataset, prompts.judges)
    cache_dir = Path(options.cache_dir) if options.cache_dir else None
    backends = LaneBackends(factory, cache_dir, options.cache_mode, options.spend, options.rates)
    answerer, grader = backends.get(spec.answer_backend), backends.get(spec.grader)
    return Reasking(spec, prompts, list(owners), answerer, grader)


def cost_stop(options: QAOptions, unfinished: int, what: str) -> CostLimitError | None:
    """The error of a pass whose cost limit refused a call (``unfinished`` ``what`` left for
    the next run), or ``None`` when none was refused."""
    spend = options.spend
    if spend is None or not spend.stopped:
        return None
    return CostLimitError(spend.spent, spend.limit, unfinished, what)
