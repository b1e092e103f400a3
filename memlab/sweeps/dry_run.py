"""``--dry-run``: what a sweep would send to its models and cost, with no model called.

The sweep is planned as :func:`~memlab.sweeps.driver.sweep` plans it (same lanes, lane ids,
owners and records kept from the run directory). Each replay the sweep would run is then run
here through the real pipeline with a probe in place of each lane's backend: a request the
response cache holds (looked up with the cache's own key, :mod:`memlab.backends.costs.estimate`) is
answered with the cached reply, exactly as the real replay would be; the first request it
does not hold is a model call, and from then on the replay's prompts depend on replies the
model has not given. They are built from a stand-in reply: the simulated model's
(``sim:careful``), which answers from the dataset's labelled facts, so the memory, and the
prompts that carry it, grow roughly as a model's would; every later request of that replay is
counted as a call. A lane of the simulated model itself is replayed by it (an instrument:
nothing is billed). With a ``qa:`` key, the QA step's requests are estimated from the memories
these replays end with (:mod:`memlab.postrun.qa_estimate`).

Nothing is written: not the run directory, not the cache (entries are read without being
marked used).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memlab.backends.caching.cache import CacheMode
from memlab.backends.costs.estimate import CacheProbe, Estimate, Tally
from memlab.backends.registry import (
    MINIMAL_CONTRACT_REPLY,
    cacheable,
    is_simulated,
    resolve_backend,
)
from memlab.core.pipeline.llm import Backend, Completion, CompletionRequest
from memlab.errors import MemlabError
from memlab.grids.grid import ForkSpec, Grid
from memlab.grids.lane_backends import BackendFactory, registry_backend
from memlab.grids.qa_spec import resolve_prompts
from memlab.postrun.qa_estimate import QAPlan, estimate_qa
from memlab.sweeps.execute import kept_record
from memlab.sweeps.grid_check import PromptSource, dataset_path
from memlab.sweeps.plan import plan_sweep
from memlab.sweeps.replay import replay_owner

__all__ = ["STAND_IN", "dry_run"]

logger = logging.getLogger(__name__)

STAND_IN = "sim:careful"
"""The backend whose reply stands in for a reply the model has not given."""


class _Probe:
    """One replay's backend in a dry run (see the module docstring)."""

    def __init__(
        self, backend: Backend, tally: Tally, probe: CacheProbe, stand_in: Backend | None
    ) -> None:
        self.backend = backend  # what backend_identity() and the cache key read
        self.name = backend.name
        self.tally = tally
        self.probe = probe
        self.stand_in = stand_in
        self.diverged = False

    @property
    def model(self) -> str:
        """The lane backend's default model."""
        return self.backend.model

    def complete(self, request: CompletionRequest) -> Completion:
        """The cached reply, the simulated model's, or a stand-in (counted as a call)."""
        if self.tally.simulated:
            done = self.backend.complete(request)
            self.tally.simulated_call(done)
            return done
        model = request.model or self.backend.model
        if not self.diverged:
            hit = self.probe.lookup(self.name, model, request)
            if hit is not None:
                self.tally.hit(request, hit)
                return hit
        self.diverged = True
        text = self._stand_in(request)
        self.tally.miss(request, text)
        return Completion(text=text, finish_reason="stop", model=model, backend=self.name)

    def _stand_in(self, request: CompletionRequest) -> str:
        if self.stand_in is not None:
            try:
                return self.stand_in.complete(request).text
            except MemlabError as exc:  # a prompt it cannot read: the smallest valid reply
                logger.debug("stand-in reply failed: %s", exc)
        return MINIMAL_CONTRACT_REPLY


def dry_run(
    dataset: str | Path,
    grid: Grid,
    *,
    runs_dir: str | Path = "runs",
    run_name: str | None = None,
    prompts: PromptSource | None = None,
    backend_factory: BackendFactory | None = None,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    fork: ForkSpec | Mapping[str, Any] | None = None,
) -> Estimate:
    """The calls, tokens and cost :func:`~memlab.sweeps.driver.sweep` with these arguments
    would spend (see the module docstring); no model is called and nothing is written.

    Backends are built (their identity is part of each lane id) but never called, except the
    simulated model's.
    """
    data_file = dataset_path(grid, dataset)
    factory = backend_factory or (lambda spec: registry_backend(spec, data_file))
    plan = plan_sweep(
        dataset,
        grid,
        runs_dir=runs_dir,
        run_name=run_name,
        prompts=prompts,
        backend_factory=factory,
        fork=fork,
    )
    use_cache = cache_dir is not None and cache_mode is not CacheMode.OFF
    probe = CacheProbe(cache_dir if use_cache else None)
    stand_in = _stand_in_backend(data_file)
    jobs = plan.jobs()
    estimate = Estimate(f"{plan.name}: {len(plan.lanes)} lanes x {len(plan.owners)} owners")
    memories: dict[tuple[str, str, int], Sequence[Mapping[str, Any]]] = {}
    kept = 0
    with tempfile.TemporaryDirectory(prefix="memlab-dry-") as scratch:
        for index, (lane, owner, sample) in enumerate(jobs):
            key = (lane.lane_id, owner.user_id, sample)
            if kept_record(plan, lane, owner, sample):
                kept += 1
                record = plan.run_dir.read_object(plan.record_path(lane, owner, sample)) or {}
                memories[key] = record.get("snapshots", [])
                continue
            spec = lane.config.backend
            backend = plan.backends.get(spec)
            tally = estimate.tally("replay", spec, backend.model, is_simulated(spec))
            lane_probe = probe if cacheable(spec) else CacheProbe(None)
            replay = replay_owner(
                owner,
                lane,
                backend=_Probe(backend, tally, lane_probe, stand_in),
                store_path=Path(scratch) / f"{index}.json",
                replay_mode=plan.replay_mode,
                sample=sample,
            )
            memories[key] = replay.snapshots
    estimate.notes.append(
        f"{len(jobs)} replays: {kept} kept from {plan.run_path}, {len(jobs) - kept} to replay"
    )
    estimate.notes.append(
        "after a replay's first uncached request, its later prompts depend on replies the "
        f"model has not given: built on stand-in replies ({STAND_IN}, from the labelled "
        "facts) and counted as calls"
    )
    if use_cache and cache_mode is CacheMode.READ_ONLY:
        estimate.notes.append("cache mode read_only: every call counted here fails the run")
    if plan.grid.qa is not None:
        qa_plan = QAPlan(
            plan.grid.qa,
            resolve_prompts(plan.grid.qa, plan.grid.base_dir),
            {lane.lane_id: lane.config for lane in plan.lanes},
            plan.owners,
            plan.samples,
            data_file,
        )
        estimate_qa(
            qa_plan,
            lambda lane_id, owner, s: memories.get((lane_id, owner.user_id, s)),
            estimate,
            probe,
            backend_factory,
        )
    return estimate


def _stand_in_backend(data_file: Path) -> Backend | None:
    """The simulated model on the sweep's dataset, or ``None`` when it cannot be built."""
    try:
        return resolve_backend(STAND_IN, dataset=data_file)
    except MemlabError as exc:
        logger.warning("dry run: no stand-in replies (%s); the smallest valid reply instead", exc)
        return None
