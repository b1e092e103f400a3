"""memlab: a workbench for LLM long-term-memory pipelines.

Replay labeled conversation datasets through the memory pipeline under different prompts,
thresholds and limits; validate every LLM reply against the JSON contract; chart and compare.

The names most users need are exported here; the subpackages hold the rest (the layers are
described in ``docs/architecture.md``): ``memlab.core`` (the pipeline, and the seed's names
such as ``get_memory_queue``), ``memlab.backends`` (LLMs and the response cache),
``memlab.datasets`` (labeled data), ``memlab.matching`` (fact matchers),
``memlab.memory_qa`` (memory QA, the whole feature: prompts, scores, judges, the step, reports),
``memlab.scoring`` (metrics and statistics), ``memlab.sweeps`` (grids, replays, run
directories), ``memlab.reporting`` (charts, reports, the CI gate) and ``memlab.plugins``
(the registries that built-ins and installed plugins share).

Names are imported on first use (PEP 562), so ``import memlab.core`` loads neither pandas nor
matplotlib; the ``TYPE_CHECKING`` imports below tell type checkers and IDEs what each is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face
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
        MemoryUpdater,
        ParseOptions,
        PromptVariant,
        UpdateResult,
        get_prompt,
        parse_reply,
        validate_update,
    )
    from memlab.datasets import dataset_stats, load_dataset
    from memlab.errors import MemlabError
    from memlab.matching import resolve_matcher
    from memlab.reporting import ab, build_report, check_gate, try_prompt
    from memlab.scoring import compare
    from memlab.sweeps import Grid, LaneConfig, Run, load_grid, load_run, rescore, sweep

# Where each exported name lives; its module is imported when the name is first used.
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
    "MemoryUpdater": "memlab.core",
    "ParseOptions": "memlab.core",
    "PromptVariant": "memlab.core",
    "UpdateResult": "memlab.core",
    "get_prompt": "memlab.core",
    "parse_reply": "memlab.core",
    "validate_update": "memlab.core",
    "dataset_stats": "memlab.datasets",
    "load_dataset": "memlab.datasets",
    "MemlabError": "memlab.errors",
    "resolve_matcher": "memlab.matching",
    "ab": "memlab.reporting",
    "build_report": "memlab.reporting",
    "check_gate": "memlab.reporting",
    "try_prompt": "memlab.reporting",
    "compare": "memlab.scoring",
    "Grid": "memlab.sweeps",
    "LaneConfig": "memlab.sweeps",
    "Run": "memlab.sweeps",
    "load_grid": "memlab.sweeps",
    "load_run": "memlab.sweeps",
    "rescore": "memlab.sweeps",
    "sweep": "memlab.sweeps",
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
    "MemoryUpdater",
    "OutputMode",
    "ParseOptions",
    "PromptVariant",
    "Run",
    "ScriptedBackend",
    "UpdateResult",
    "ab",
    "build_report",
    "check_gate",
    "compare",
    "dataset_stats",
    "get_prompt",
    "load_dataset",
    "load_grid",
    "load_run",
    "parse_reply",
    "rescore",
    "resolve_backend",
    "resolve_matcher",
    "sweep",
    "try_prompt",
    "validate_update",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
