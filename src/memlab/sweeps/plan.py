"""Resolve a grid before anything runs: every name looked up, every dependency identified.

A :class:`ResolvedLane` holds what a replay of one grid point depends on, resolved: the prompt
template (not just its name), the parse options, the merge strategy with all its parameters,
the request the updater sends (output mode, the schema actually sent, generation parameters,
model), the backend's identity (for a local GGUF its size and content hash), the memory
settings and the replay mode, plus memlab's version. The lane's id ends in a hash of all of
it, so an edited prompt file or a swapped model file makes a new lane instead of passing old
results off as new ones. :func:`identity_changes` says in words what differs between two
identities ("prompt text changed"), which is what a resumed sweep reports.

Resolution errors are :class:`~memlab.sweeps.grid.GridError` naming the grid file, the key path,
its line and the known choices.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlab._version import __version__
from memlab.backends.cache import CachedBackend, CacheMode
from memlab.backends.identity import backend_identity
from memlab.backends.registry import available_backends, resolve_backend
from memlab.core.config import MemoryConfig
from memlab.core.llm import Backend, GenerationParams
from memlab.core.merge import MergeStrategy, get_merge_strategy
from memlab.core.parsing import ParseOptions
from memlab.core.prompts import PromptError, PromptRegistry, PromptVariant
from memlab.core.storage import InMemoryStorage
from memlab.core.updater import MemoryUpdater
from memlab.datasets.registry import resolve_dataset
from memlab.errors import MemlabError
from memlab.scoring.injection_audit import policy_identity
from memlab.simulation.model import dataset_options, is_simulated
from memlab.sweeps.grid import Grid, LaneConfig

if TYPE_CHECKING:  # fork builds on this module's hash
    from memlab.sweeps.fork import Fork

__all__ = [
    "BackendFactory",
    "LaneBackends",
    "PromptSource",
    "ResolvedLane",
    "build_updater",
    "cacheable",
    "canonical_hash",
    "check_grid",
    "dataset_path",
    "identity_changes",
    "injection_identity",
    "parse_options_for",
    "prompt_registry",
    "registry_backend",
    "resolve_lanes",
]

BackendFactory = Callable[[str], Backend]
"""Builds the backend for a lane's backend spec (e.g. ``"local:smollm2"``)."""

PromptSource = (
    PromptRegistry | Mapping[str, str] | str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
)
"""Extra prompts for a sweep: a registry, ``{name: template}``, or prompt file/directory paths."""

_PARSE_PRESETS: dict[str, Callable[[], ParseOptions]] = {
    "default": ParseOptions,
    "deerflow": ParseOptions.deerflow,
    "strict_only": ParseOptions.strict_only,
    "repair": lambda: ParseOptions(lenient=True, repair=True),
}


def parse_options_for(name: str) -> ParseOptions:
    """Return the parse-ladder options of a lane's ``parse`` preset."""
    return _PARSE_PRESETS[name]()


def canonical_hash(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (sorted keys, no whitespace)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class LaneBackends:
    """One backend per spec, built on first use and shared by all lanes (thread-safe).

    With a ``cache_dir`` every backend is wrapped in the response cache.
    """

    def __init__(
        self, factory: BackendFactory, cache_dir: Path | None, cache_mode: CacheMode
    ) -> None:
        self._factory = factory
        self._cache_dir = cache_dir
        self._cache_mode = cache_mode
        self._built: dict[str, Backend] = {}
        self._lock = threading.Lock()

    @property
    def factory(self) -> BackendFactory:
        """What builds a backend from a spec (remote workers build their own with it)."""
        return self._factory

    @property
    def cache_dir(self) -> Path | None:
        """The response cache directory, or ``None``."""
        return self._cache_dir

    @property
    def cache_mode(self) -> CacheMode:
        """How the response cache is used."""
        return self._cache_mode

    def caches(self, spec: str) -> bool:
        """Whether replies of ``spec`` go through the response cache."""
        return (
            self._cache_dir is not None
            and self._cache_mode is not CacheMode.OFF
            and cacheable(spec)
        )

    def get(self, spec: str) -> Backend:
        """The (cached) backend for ``spec``."""
        with self._lock:
            if spec not in self._built:
                backend = self._factory(spec)
                if self._cache_dir is not None and self.caches(spec):
                    backend = CachedBackend(backend, self._cache_dir, mode=self._cache_mode)
                self._built[spec] = backend
            return self._built[spec]


def cacheable(spec: str) -> bool:
    """Whether a backend's replies belong in the response cache: not the simulated model's
    (it answers instantly and deterministically). Drivers and remote workers both ask this."""
    return not is_simulated(spec)


def registry_backend(spec: str, dataset: Path) -> Backend:
    """The default backend factory of a sweep: the registry, giving specs that replay the
    dataset (``sim:``) its path. Module-level so that a ``functools.partial`` of it pickles
    (remote workers build their backends with it)."""
    return resolve_backend(spec, **dataset_options(spec, dataset))


def prompt_registry(grid: Grid, prompts: PromptSource | None = None) -> PromptRegistry:
    """The variants a grid may name: built-ins, ``prompts`` and the grid's ``prompts:`` files.

    Raises:
        GridError: A prompt file is missing or invalid, or two sources define one name.
    """
    registry = prompts.copy() if isinstance(prompts, PromptRegistry) else PromptRegistry()
    if isinstance(prompts, Mapping):
        for name, template in prompts.items():
            try:
                registry.register(PromptVariant(str(name), template, source=f"prompt {name!r}"))
            except PromptError as exc:
                raise grid.error("prompts", str(exc)) from None
    elif prompts is not None and not isinstance(prompts, PromptRegistry):
        paths = [prompts] if isinstance(prompts, str | os.PathLike) else list(prompts)
        for path in paths:
            _load_prompts(registry, Path(path), grid, "prompts")
    for index, entry in enumerate(grid.prompts):
        path = Path(entry)
        _load_prompts(
            registry,
            path if path.is_absolute() else grid.base_dir / path,
            grid,
            f"prompts[{index}]",
        )
    return registry


def _load_prompts(registry: PromptRegistry, path: Path, grid: Grid, key: str) -> None:
    if not path.exists():
        raise grid.error(key, f"prompt file {str(path)!r} does not exist")
    try:
        registry.load_path(path)
    except PromptError as exc:
        raise grid.error(key, str(exc)) from None


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
        params=GenerationParams(
            temperature=lane.temperature, max_tokens=lane.max_tokens, seed=lane.seed + sample
        ),
        sample=sample,
        schema_bounds=lane.schema_bounds,
        parse_options=parse_options_for(lane.parse),
        merge=get_merge_strategy(lane.merge, **lane.merge_params),
        **collaborators,
    )


def resolve_lanes(
    grid: Grid, registry: PromptRegistry, backends: LaneBackends, fork: Fork | None = None
) -> list[ResolvedLane]:
    """Resolve every lane of ``grid``; the first unresolvable name raises.

    ``fork`` (loaded by :func:`memlab.sweeps.fork.load_fork`) makes every lane start from the
    reference memory; its run, lane, session and snapshot hashes enter each identity.

    Raises:
        GridError: Naming the key (e.g. ``axes.merge[1]``), its line and the known choices.
    """
    _check_names(grid, registry)
    lanes: list[ResolvedLane] = []
    for config in grid.lanes():
        try:
            backend = backends.get(config.backend)
            backend_id = backend_identity(backend)
        except MemlabError as exc:
            raise grid.error(_key_of(grid, "backend", config.backend), str(exc)) from None
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
        if injection != _injection_values(LaneConfig.model_validate({}), {"name": "confidence"}):
            # Left out at the defaults: lanes recorded before these settings keep their ids.
            identity["injection"] = injection
        if fork is not None:
            identity["fork"] = fork.identity()
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
        key = _key_of(grid, "injection_policy", config.injection_policy)
        raise grid.error(key, str(exc)) from None
    return _injection_values(config, policy)


def _injection_values(config: LaneConfig, policy: dict[str, Any]) -> dict[str, Any]:
    return {
        "enabled": config.injection_enabled,
        "max_tokens": config.max_injection_tokens,
        "token_counting": config.token_counting,
        "policy": policy,
    }


def check_grid(grid: Grid, prompts: PromptSource | None = None) -> PromptRegistry:
    """Resolve every name in ``grid`` that needs no model: prompts (files and names), merge
    strategies with their parameters, backend prefixes and the dataset.

    Returns:
        The prompt registry the grid's lanes draw from.

    Raises:
        GridError: At the first problem, located by key path and line.
    """
    registry = prompt_registry(grid, prompts)
    _check_names(grid, registry)
    known = available_backends()
    for key, spec in grid.values("backend"):
        prefix = str(spec).strip().partition(":")[0]
        if str(spec).strip() != "auto" and prefix not in known:
            raise grid.error(
                key,
                f"unknown backend {spec!r}; known prefixes: {', '.join(known)} (e.g. "
                "'local:smollm2', 'openai:gpt-4o-mini', 'scripted')",
            )
    dataset_path(grid)
    return registry


def dataset_path(grid: Grid, dataset: str | Path | None = None) -> Path:
    """The dataset file: ``dataset`` (default the grid's), next to the grid file or as given.

    Raises:
        GridError: At ``dataset`` when no file or bundled dataset has that name.
    """
    name = grid.dataset if dataset is None else dataset
    beside_grid = grid.base_dir / name
    try:
        beside = not Path(name).is_absolute() and beside_grid.is_file()
    except OSError:  # a name too long for the file system: resolve_dataset says so
        beside = False
    if beside:
        return beside_grid
    try:
        return resolve_dataset(name)
    except MemlabError as exc:
        raise grid.error("dataset", str(exc)) from None


def _merge_params(strategy: MergeStrategy) -> dict[str, Any]:
    params = getattr(strategy, "params", None)
    return dict(params) if isinstance(params, Mapping) else {"repr": repr(strategy)}


def _check_names(grid: Grid, registry: PromptRegistry) -> None:
    """Prompt and merge names (with their parameters) exist; reported at the grid key."""
    known = ", ".join(registry.names())
    for key, name in grid.values("prompt"):
        if name not in registry:
            raise grid.error(
                key,
                f"unknown prompt {name!r}; known prompts: {known} (add files "
                "under prompts: in the grid, or pass --prompts FILE)",
            )
    params = [value for _, value in grid.values("merge_params")]
    for key, name in grid.values("merge"):
        for merge_params in params:
            try:
                get_merge_strategy(name, **merge_params)
            except (ValueError, TypeError) as exc:
                where = (
                    key
                    if "unknown merge" in str(exc)
                    else _key_of(grid, "merge_params", merge_params)
                )
                raise grid.error(where, str(exc)) from None


def _key_of(grid: Grid, field: str, value: Any) -> str:
    return next((key for key, v in grid.values(field) if v == value), f"base.{field}")


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
