"""Replay datasets through the pipeline, sweep configurations, and measure the results."""

from memlab.core.similarity import (
    content_tokens,
    count_duplicates,
    dice,
    normalize_text,
)
from memlab.eval.embeddings import (
    Embedder,
    EmbeddingDuplicates,
    EmbeddingsUnavailableError,
    WordLlamaEmbedder,
)
from memlab.eval.grid import (
    AXES,
    Grid,
    GridError,
    LaneConfig,
    load_grid,
)
from memlab.eval.matching import (
    FactMatcher,
    LexicalMatcher,
    MatchResult,
)
from memlab.eval.metrics import (
    DEFAULT_PRICES,
    failure_table,
    session_rows,
    summarize,
    violation_table,
)
from memlab.eval.replay import (
    OwnerReplay,
    parse_options_for,
    replay_owner,
)
from memlab.eval.run import (
    Run,
    RunError,
    flatten_call,
    load_run,
    write_jsonl,
)
from memlab.eval.sweep import (
    BackendFactory,
    sweep,
)

__all__ = [
    "AXES",
    "DEFAULT_PRICES",
    "BackendFactory",
    "Embedder",
    "EmbeddingDuplicates",
    "EmbeddingsUnavailableError",
    "FactMatcher",
    "Grid",
    "GridError",
    "LaneConfig",
    "LexicalMatcher",
    "MatchResult",
    "OwnerReplay",
    "Run",
    "RunError",
    "WordLlamaEmbedder",
    "content_tokens",
    "count_duplicates",
    "dice",
    "failure_table",
    "flatten_call",
    "load_grid",
    "load_run",
    "normalize_text",
    "parse_options_for",
    "replay_owner",
    "session_rows",
    "summarize",
    "sweep",
    "violation_table",
    "write_jsonl",
]
