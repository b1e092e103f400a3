"""memlab: a workbench for LLM long-term-memory pipelines.

Replay labeled conversation datasets through the memory pipeline under different prompts,
thresholds and limits; validate every LLM reply against the JSON contract; chart and compare.

The most used names are exported here; subpackages hold the rest:
``memlab.core`` (the pipeline), ``memlab.backends`` (LLMs and the response cache),
``memlab.datasets`` (labeled data), ``memlab.eval`` (replay, sweeps, metrics) and
``memlab.reporting`` (charts, reports, the CI gate).
"""

from memlab._version import __version__ as __version__
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
from memlab.eval import Grid, LaneConfig, Run, compare, load_grid, load_run, sweep
from memlab.reporting import build_report, check_gate, try_prompt

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
