"""memlab: a workbench for LLM long-term-memory pipelines.

Replay labeled conversation datasets through the memory pipeline under different prompts,
thresholds and limits; validate every LLM reply against the JSON contract; chart and compare.

The most used names are exported here; subpackages hold the rest:
``memlab.core`` (the pipeline), ``memlab.backends`` (LLMs and the response cache),
``memlab.datasets`` (labeled data), ``memlab.eval`` (replay, sweeps, metrics) and
``memlab.reporting`` (charts, reports, the CI gate).

Names are imported on first use (PEP 562), so ``import memlab.core`` loads neither pandas nor
matplotlib; the ``TYPE_CHECKING`` imports below tell type checkers and IDEs what each is.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memlab._version import __version__ as __version__

if TYPE_CHECKING:
    from memlab.backends import (
        Backend,
        CachedBackend,
        CacheMode,
        Completion,
        CompletionRequest,
        GenerationParams,
        OutputMode,
        ScriptedBackend,
        resolve_backend,
    )
    from memlab.core import (
        JsonFileStorage,
        MemoryConfig,
        MemoryMiddleware,
        MemoryUpdateQueue,
        MemoryUpdater,
        ParseOptions,
        PromptVariant,
        UpdateResult,
        format_conversation_for_update,
        format_memory_for_injection,
        get_memory_queue,
        get_prompt,
        parse_reply,
        reset_memory_queue,
        update_memory_from_conversation,
        validate_update,
    )
    from memlab.datasets import dataset_stats, load_dataset
    from memlab.errors import MemlabError
    from memlab.eval import Grid, LaneConfig, Run, load_grid, load_run
    from memlab.reporting import build_report, check_gate, try_prompt
    from memlab.scoring.comparison import compare
    from memlab.sweeps.driver import sweep

# Where each exported name lives; the subpackage is imported when the name is first used.
_EXPORTS: dict[str, str] = {
    "Backend": "memlab.backends",
    "CacheMode": "memlab.backends",
    "CachedBackend": "memlab.backends",
    "Completion": "memlab.backends",
    "CompletionRequest": "memlab.backends",
    "GenerationParams": "memlab.backends",
    "OutputMode": "memlab.backends",
    "ScriptedBackend": "memlab.backends",
    "resolve_backend": "memlab.backends",
    "JsonFileStorage": "memlab.core",
    "MemoryConfig": "memlab.core",
    "MemoryMiddleware": "memlab.core",
    "MemoryUpdateQueue": "memlab.core",
    "MemoryUpdater": "memlab.core",
    "ParseOptions": "memlab.core",
    "PromptVariant": "memlab.core",
    "UpdateResult": "memlab.core",
    "format_conversation_for_update": "memlab.core",
    "format_memory_for_injection": "memlab.core",
    "get_memory_queue": "memlab.core",
    "get_prompt": "memlab.core",
    "parse_reply": "memlab.core",
    "reset_memory_queue": "memlab.core",
    "update_memory_from_conversation": "memlab.core",
    "validate_update": "memlab.core",
    "dataset_stats": "memlab.datasets",
    "load_dataset": "memlab.datasets",
    "MemlabError": "memlab.errors",
    "Grid": "memlab.eval",
    "LaneConfig": "memlab.eval",
    "Run": "memlab.eval",
    "load_grid": "memlab.eval",
    "load_run": "memlab.eval",
    "sweep": "memlab.eval",
    "compare": "memlab.eval",
    "build_report": "memlab.reporting",
    "check_gate": "memlab.reporting",
    "try_prompt": "memlab.reporting",
}

__all__ = [
    "Backend",
    "CacheMode",
    "CachedBackend",
    "Completion",
    "CompletionRequest",
    "GenerationParams",
    "Grid",
    "JsonFileStorage",
    "LaneConfig",
    "MemlabError",
    "MemoryConfig",
    "MemoryMiddleware",
    "MemoryUpdateQueue",
    "MemoryUpdater",
    "OutputMode",
    "ParseOptions",
    "PromptVariant",
    "Run",
    "ScriptedBackend",
    "UpdateResult",
    "build_report",
    "check_gate",
    "compare",
    "dataset_stats",
    "format_conversation_for_update",
    "format_memory_for_injection",
    "get_memory_queue",
    "get_prompt",
    "load_dataset",
    "load_grid",
    "load_run",
    "parse_reply",
    "reset_memory_queue",
    "resolve_backend",
    "sweep",
    "try_prompt",
    "update_memory_from_conversation",
    "validate_update",
]

# ``import memlab`` then ``memlab.reporting.charts`` works as with eager imports.
_SUBPACKAGES = frozenset(
    {"backends", "cli", "compat", "core", "datasets", "errors", "eval", "reporting"}
)


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"memlab.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
