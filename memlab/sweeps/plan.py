"""Resolve a grid before anything runs: every name looked up, every dependency identified.

A :class:`ResolvedLane` holds what a replay of one grid point depends on, resolved: the prompt
template (not just its name), the parse options, the merge strategy with all its parameters,
the request the updater sends (output mode, the schema actually sent, generation parameters,
model), the backend's identity (for a local GGUF its size and content hash), the memory
settings and the replay mode, plus memlab's version. The lane's id ends in a hash of all of
it, so an edited prompt file or a swapped model file makes a new lane instead of passing old
results off as new ones. :func:`identity_changes` says in words what differs between two
identities ("prompt text changed"), which is what a resumed sweep reports.

Resolution errors are :class:`~memlab.grids.grid.GridError` naming the grid file, the key path,
its line and the known choices. The checks that need no model (prompts, names, backends, the
dataset) are :mod:`memlab.sweeps.grid_check`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlab._version import __version__
from memlab.backends.caching.cache import CacheMode
from memlab.backends.costs.spend import SpendLimit
from memlab.backends.identity import backend_identity
from memlab.backends.remote.rate_limit import RateLimiters
from memlab.core.base.jsontext import canonical_hash
from memlab.core.base.safe_names import ensure_inside, safe_component
from memlab.core.base.yamlio import YamlInputError, key_lines, read_yaml
from memlab.core.jsondoc.merge import MergeStrategy, get_merge_strategy
from memlab.core.jsondoc.parsing import ParseOptions, parse_options_for
from memlab.core.pipeline.config import MemoryConfig
from memlab.core.pipeline.llm import Backend, GenerationParams
from memlab.core.pipeline.storage import InMemoryStorage
from memlab.core.pipeline.updater import MemoryUpdater
from memlab.core.prompt_template import PromptVariant
from memlab.core.prompts import PromptRegistry
from memlab.datasets.loader import load_dataset
from memlab.datasets.models import Owner
from memlab.errors import MemlabError
from memlab.grids.grid import ForkSpec, Grid, GridError
from memlab.grids.lane import LaneConfig, ReplayMode
from memlab.grids.lane_backends import BackendFactory, LaneBackends, registry_backend
from memlab.grids.owners import select_owners
from memlab.memory.designs import memory_design
from memlab.memory.policies import DEFAULT_POLICY
from memlab.memory.tiers.tiered import TieredSettings, lane_settings
from memlab.runs.rundir import RunDir
from memlab.scoring.qa.injection_audit import policy_identity
from memlab.sweeps.fork import Fork, load_fork
from memlab.sweeps.grid_check import (
    PromptSource,
    check_grid,
    check_names,
    check_output_modes,
    dataset_path,
    key_of,
    prompt_registry,
)

__all__ = [
    "BackendFactory",
    "LaneBackends",
    "ResolvedLane",
    "SweepPlan",
    "build_updater",
    "generation_params",
    "identity_changes",
    "injection_identity",
    "load_grid",
    "plan_sweep",
    "registry_backend",
    "resolve_lanes",
    "tiered_settings",
]


@dataclass(frozen=True)
class ResolvedLane:
    """A grid point with every name resolved and its content-addressed id.

    Attributes:
        config: The grid point (names and values as the grid gives them).
        prompt: The prompt variant the name resolved to (its template text included).
        parse_options: The parse ladder of the ``parse`` preset.
        identity: Everything the replay depends on besides the owner's data (see the module
            docstring); JSON-ready.
        lane_id: ``<readable config>-<8 hex of the identity hash>``.
        fork: Where each owner's replay starts when the grid forks (see
            :mod:`memlab.sweeps.fork`); ``None``: from an empty memory.
    """

    config: LaneConfig
    prompt: PromptVariant
    parse_options: ParseOptions
    identity: dict[str, Any]
    lane_id: str
    fork: Fork | None = field(default=None, compare=False, repr=False)

    @property
    def identity_hash(self) -> str:
        """SHA-256 of :attr:`identity`."""
        return canonical_hash(self.identity)

    def merge_strategy(self) -> MergeStrategy:
        """A fresh instance of the lane's merge strategy."""
        return get_merge_strategy(self.config.merge, **self.config.merge_params)

    def describe(self) -> dict[str, Any]:
        """The lane's ``config.json``: grid point, identity and the prompt template."""
        return {
            "lane_id": self.lane_id,
            "config": self.config.model_dump(mode="json"),
            "identity": self.identity,
            "prompt": {
                "name": self.prompt.name,
                "sha256": self.prompt.sha256,
                "source": self.prompt.source,
                "template": self.prompt.template,
            },
        }


def build_updater(
    lane: LaneConfig,
    prompt: PromptVariant,
    backend: Backend,
    sample: int = 0,
    **collaborators: Any,
) -> MemoryUpdater:
    """The updater a replay of ``lane`` uses (one definition for replays and identities).

    Repeated sample ``k`` of a lane sends seed ``lane.seed + k`` and the sample index.
    """
    return MemoryUpdater(
        backend=backend,
        prompt=prompt,
        output_mode=lane.output_mode,
        params=generation_params(lane, sample),
        sample=sample,
        schema_bounds=lane.schema_bounds,
        parse_options=parse_options_for(lane.parse),
        merge=get_merge_strategy(lane.merge, **lane.merge_params),
        **collaborators,
    )


def generation_params(lane: LaneConfig, sample: int = 0) -> GenerationParams:
    """The sampling parameters of a lane's calls (repeated sample ``k``: seed ``seed + k``)."""
    return GenerationParams(
        temperature=lane.temperature, max_tokens=lane.max_tokens, seed=lane.seed + sample
    )


def tiered_settings(lane: LaneConfig) -> TieredSettings:
    """The tiered memory's parameters for ``lane``: its ``tiered`` options (the seed's values
    unless the grid sets them), counting tokens as the lane counts them."""
    return lane_settings(lane.settings())


def resolve_lanes(
    grid: Grid, registry: PromptRegistry, backends: LaneBackends, fork: Fork | None = None
) -> list[ResolvedLane]:
    """Resolve every lane of ``grid``; the first unresolvable name raises.

    ``fork`` (loaded by :func:`memlab.sweeps.fork.load_fork`) makes every lane start from the
    reference memory; its run, lane, session and snapshot hashes enter each identity.

    Raises:
        GridError: Naming the key (e.g. ``axes.merge[1]``), its line and the known choices.
    """
    check_names(grid, registry)
    check_output_modes(grid)
    grid.check_max_tokens()
    lanes: list[ResolvedLane] = []
    for config in grid.lanes():
        try:
            backend = backends.get(config.backend)
            backend_id = backend_identity(backend)
        except MemlabError as exc:
            raise grid.error(key_of(grid, "backend", config.backend), str(exc)) from None
        prompt = registry.get(config.prompt)
        updater = build_updater(config, prompt, backend, storage=InMemoryStorage())
        request = updater.build_request("", MemoryConfig())
        identity = {
            "memlab": __version__,
            "prompt": {"name": prompt.name, "sha256": prompt.sha256},
            "request": {
                "mode": request.mode.value,
                "schema_sha256": canonical_hash(request.schema) if request.schema else None,
                "params": request.params.as_dict(),
                "model": request.model,
            },
            "parse": updater.parse_options.to_dict(),
            "merge": {"name": config.merge, "params": _merge_params(updater.merge)},
            "backend": backend_id,
            "memory": {
                "fact_confidence_threshold": config.fact_confidence_threshold,
                "max_facts": config.max_facts,
                "debounce_seconds": config.debounce_seconds,
            },
            "replay_mode": grid.replay_mode,
        }
        injection = injection_identity(grid, config)
        if injection != _injection_values(LaneConfig.model_validate({}), {"name": DEFAULT_POLICY}):
            # Left out at the defaults: lanes recorded before these settings keep their ids.
            identity["injection"] = injection
        if fork is not None:
            identity["fork"] = fork.identity()
        design = memory_design(config.memory)
        if fork is not None and not design.forks:
            raise grid.error(
                grid.key_of("memory", config.memory),
                "a fork starts from a DeerFlow memory document; fork only memory: deerflow lanes",
            )
        if design.identity is not None:
            # Only for designs that declare one: DeerFlow lanes keep the ids they had before.
            identity["strategy"] = design.identity(config.settings())
        lane_id = f"{config.readable[:80]}-{canonical_hash(identity)[:8]}"
        lanes.append(ResolvedLane(config, prompt, updater.parse_options, identity, lane_id, fork))
    return lanes


def injection_identity(grid: Grid, config: LaneConfig) -> dict[str, Any]:
    """The injection settings a replay's audit depends on (the embedder's too, when used).

    Raises:
        GridError: At the policy, when it needs the embeddings extra and it is missing.
    """
    try:
        policy = policy_identity(config.injection_policy)
    except MemlabError as exc:
        key = key_of(grid, "injection_policy", config.injection_policy)
        raise grid.error(key, str(exc)) from None
    return _injection_values(config, policy)


def _injection_values(config: LaneConfig, policy: dict[str, Any]) -> dict[str, Any]:
    return {
        "enabled": config.injection_enabled,
        "max_tokens": config.max_injection_tokens,
        "token_counting": config.token_counting,
        "policy": policy,
    }


def _merge_params(strategy: MergeStrategy) -> dict[str, Any]:
    params = getattr(strategy, "params", None)
    return dict(params) if isinstance(params, Mapping) else {"repr": repr(strategy)}


# What each part of an identity means to a user, for "replayed because ...".
_REASONS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("prompt", "sha256"), "prompt text changed"),
    (("prompt", "name"), "prompt changed"),
    (("request", "schema_sha256"), "schema sent changed"),
    (("request", "mode"), "output mode changed"),
    (("request", "params"), "generation parameters changed"),
    (("request", "model"), "model override changed"),
    (("parse",), "parse options changed"),
    (("merge",), "merge strategy or parameters changed"),
    (("backend",), "backend model changed"),
    (("memory",), "memory settings changed"),
    (("injection",), "injection settings changed"),
    (("fork",), "fork source changed"),
    (("replay_mode",), "replay mode changed"),
    (("strategy",), "memory design changed"),
    (("memlab",), "memlab version changed"),
)


def identity_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two lane identities, in words (empty when they are equal)."""
    reasons = []
    for path, reason in _REASONS:
        if _get(old, path) != _get(new, path):
            if reason == "prompt changed" and "prompt text changed" in reasons:
                continue
            reasons.append(reason)
    if not reasons and canonical_hash(old) != canonical_hash(new):
        reasons.append("lane settings changed")
    return reasons


def _get(value: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


@dataclass
class SweepPlan:
    """Everything a sweep will do, resolved before it starts.

    Attributes:
        grid: The sweep definition.
        dataset_path: The dataset file.
        owners: The selected owners (sessions cut to ``max_sessions``).
        lanes: The resolved lanes, in grid order.
        run_path: The run directory.
        backends: The backends by spec (shared by the lanes).
        predecessors: For a lane of this sweep, the description of an earlier lane in the run
            directory with the same grid point (to say why a replay was redone).
    """

    grid: Grid
    dataset_path: Path
    owners: list[Owner]
    lanes: list[ResolvedLane]
    run_path: Path
    backends: LaneBackends
    predecessors: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The sweep's name (the grid's)."""
        return self.grid.name

    @property
    def samples(self) -> int:
        """Replays per (lane, owner)."""
        return self.grid.samples

    @property
    def replay_mode(self) -> ReplayMode:
        """How sessions are fed to the queue (``debounce`` or ``per_session``)."""
        return self.grid.replay_mode

    def jobs(self) -> list[tuple[ResolvedLane, Owner, int]]:
        """Every (lane, owner, sample) replay of the sweep, in lane, owner, sample order."""
        return [
            (lane, owner, sample)
            for lane in self.lanes
            for owner in self.owners
            for sample in range(self.samples)
        ]

    @property
    def run_dir(self) -> RunDir:
        """The run directory's owner (layout, writes, lock)."""
        return RunDir(self.run_path)

    def record_path(self, lane: ResolvedLane, owner: Owner, sample: int = 0) -> Path:
        """Where the replay of ``owner`` under ``lane`` (repeated sample ``sample``) is kept."""
        return self.run_dir.record(lane.lane_id, owner.user_id, sample)


def plan_sweep(
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
    spend: SpendLimit | None = None,
    rates: RateLimiters | None = None,
) -> SweepPlan:
    """Resolve a sweep without running it (see :func:`sweep` for the arguments; ``spend``:
    the limit every backend's calls count against; ``rates``: their pace).

    Raises:
        GridError: An unknown or invalid name in the grid, located by key and line; a fork
            whose reference run, lane or session does not fit.
        UnsafeNameError: A run name or user id that cannot be a file name.
        DatasetError: The dataset is invalid.
    """
    if fork is not None:
        grid = grid.model_copy(update={"fork": ForkSpec.model_validate(fork)})
    data_file = dataset_path(grid, dataset)
    owners = select_owners(load_dataset(data_file), grid)
    name = safe_component(run_name or grid.name, "run name")
    runs_root = Path(runs_dir)
    run_path = ensure_inside(runs_root / name, runs_root, "run directory")
    default_factory = functools.partial(registry_backend, dataset=data_file, batch=grid.local_batch)
    backends = LaneBackends(
        backend_factory or default_factory,
        Path(cache_dir) if cache_dir is not None else None,
        cache_mode,
        spend,
        rates,
    )
    fork_start = load_fork(grid, owners)
    if fork_start is not None:  # recorded resolved, as the dataset is, for later readers
        resolved = fork_start.spec.model_copy(update={"run": str(fork_start.run_path.resolve())})
        grid = grid.model_copy(update={"fork": resolved})
    lanes = resolve_lanes(grid, prompt_registry(grid, prompts), backends, fork_start)
    plan = SweepPlan(grid, data_file, owners, lanes, run_path, backends)
    plan.predecessors = _predecessors(plan.run_dir, lanes)
    return plan


def _predecessors(run_dir: RunDir, lanes: Sequence[ResolvedLane]) -> dict[str, dict[str, Any]]:
    """For each new lane, the closest earlier lane of the run directory, by lane id.

    Candidates are the lanes of the previous sweep's manifest (all described lanes when it
    stopped early) that this sweep does not keep; the closest differs from the new lane's grid
    point in the fewest settings. Its identity says why the new lane's replays were redone.
    """
    current = {lane.lane_id for lane in lanes}
    candidates: list[tuple[float, dict[str, Any], LaneConfig]] = []
    for described, mtime in run_dir.previous_lanes():
        if described.get("lane_id") in current:
            continue
        try:
            config = LaneConfig.model_validate(described["config"])
        except (ValueError, KeyError):
            continue  # another format: nothing to explain with
        candidates.append((mtime, described, config))
    found: dict[str, dict[str, Any]] = {}
    for lane in lanes:
        new = lane.config.settings()
        scored = [
            (sum(new[k] != old.settings()[k] for k in new), -mtime, i)
            for i, (mtime, _, old) in enumerate(candidates)
        ]
        if scored:
            found[lane.lane_id] = candidates[min(scored)[2]][1]
    return found


def load_grid(path: str | Path, prompts: Any = None) -> Grid:
    """Load a grid from a YAML (or JSON) file and resolve every name in it.

    Relative prompt and dataset paths are read from the grid file's folder. Prompt names may
    refer to the built-ins, the grid's ``prompts:`` files and ``prompts`` (see
    :data:`memlab.sweeps.grid_check.PromptSource`).

    Raises:
        GridError: Naming the file, the line, the key path and the known choices.
    """
    path = Path(path)
    try:
        document = read_yaml(path, what="grid file")  # bounded: size, aliases, depth
    except YamlInputError as exc:
        raise GridError(str(path), "", str(exc).removeprefix(f"{path}: ")) from None
    node, data = document.node, document.data
    if not isinstance(data, Mapping):
        raise GridError(str(path), "", "a grid file must hold a mapping at the top level")
    grid = Grid.from_mapping(data, str(path), base_dir=path.parent, lines=key_lines(node))
    check_grid(grid, prompts)
    return grid
