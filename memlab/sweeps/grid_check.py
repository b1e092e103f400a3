"""Check a grid before anything runs: its prompts, names, backends and dataset.

:func:`check_grid` resolves every name in a grid that needs no model: the prompt variants
(built-ins, the prompts a caller passes, :data:`PromptSource`, and the grid's ``prompts:``
files, gathered by :func:`prompt_registry`), memory designs, injection policies, QA conditions,
merge strategies with their parameters, backend prefixes and the output modes they support, and
the dataset file (:func:`dataset_path`). Each problem is a
:class:`~memlab.grids.grid.GridError` naming the grid file, the key path, its line and the known
choices. :mod:`memlab.sweeps.plan` resolves the checked grid into lanes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memlab.backends.registry import (
    UnknownBackendError,
    available_backends,
    backend_plugin,
    find_backend_plugin,
)
from memlab.core.jsondoc.merge import get_merge_strategy
from memlab.core.pipeline.llm import OutputMode
from memlab.core.prompt_template import PromptError, PromptVariant
from memlab.core.prompts import PromptRegistry
from memlab.datasets.registry import resolve_dataset
from memlab.errors import MemlabError
from memlab.grids.grid import Grid
from memlab.memory.designs import UnknownDesignError, memory_design
from memlab.memory.policies import UnknownPolicyError, injection_policy
from memlab.memory.tiers.tiered_embedding import embedding_problem

__all__ = [
    "PromptSource",
    "check_grid",
    "check_names",
    "check_output_modes",
    "dataset_path",
    "key_of",
    "prompt_registry",
]

PromptSource = (
    PromptRegistry | Mapping[str, str] | str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
)
"""Extra prompts for a sweep: a registry, ``{name: template}``, or prompt file/directory paths."""


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


def check_grid(grid: Grid, prompts: PromptSource | None = None) -> PromptRegistry:
    """Resolve every name in ``grid`` that needs no model: prompts (files and names), merge
    strategies with their parameters, backend prefixes and the dataset.

    Returns:
        The prompt registry the grid's lanes draw from.

    Raises:
        GridError: At the first problem, located by key path and line.
    """
    registry = prompt_registry(grid, prompts)
    check_names(grid, registry)
    _check_backends(grid)
    grid.check_max_tokens()
    dataset_path(grid)
    return registry


def _check_backends(grid: Grid) -> None:
    """Every backend prefix is registered and supports the output modes its lanes ask for."""
    for key, spec in grid.values("backend"):
        try:
            backend_plugin(str(spec))
        except UnknownBackendError:
            raise grid.error(
                key,
                f"unknown backend {spec!r}; known prefixes: {', '.join(available_backends())} "
                "(e.g. 'local:smollm2', 'openai:gpt-4o-mini', 'scripted')",
            ) from None
    check_output_modes(grid)
    for config in grid.lanes():
        problem = embedding_problem(config.tiered.embedding)
        if problem is not None:
            raise grid.error(f"{grid.key_of('tiered', None)}.embedding", problem)


def check_output_modes(grid: Grid) -> None:
    """Each lane's backend supports its output mode (as the backend's plugin declares)."""
    for config in grid.lanes():
        plugin = find_backend_plugin(config.backend)
        modes = plugin.output_modes if plugin is not None else frozenset(OutputMode)
        if config.output_mode not in modes:
            supported = ", ".join(sorted(mode.value for mode in modes))
            raise grid.error(
                key_of(grid, "output_mode", config.output_mode.value),
                f"backend {config.backend!r} does not support output mode "
                f"{config.output_mode.value}; it supports: {supported}",
            )


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


def check_names(grid: Grid, registry: PromptRegistry) -> None:
    """Prompt, memory design, injection policy, QA condition and merge names (with their
    parameters) exist; reported at the grid key."""
    for key, name in grid.values("memory"):
        try:
            memory_design(str(name))
        except UnknownDesignError as exc:
            raise grid.error(key, str(exc)) from None
    if grid.qa is not None:
        try:
            grid.qa.check_conditions()
        except MemlabError as exc:
            raise grid.error("qa.conditions", str(exc).removeprefix("qa.conditions: ")) from None
    for key, name in grid.values("injection_policy"):
        try:
            injection_policy(str(name))
        except UnknownPolicyError as exc:
            raise grid.error(key, str(exc)) from None
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
                    else key_of(grid, "merge_params", merge_params)
                )
                raise grid.error(where, str(exc)) from None


def key_of(grid: Grid, field: str, value: Any) -> str:
    return grid.key_of(field, value)
