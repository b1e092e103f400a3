"""Replay datasets through the pipeline, sweep configurations, and measure the results."""

from memlab.core.similarity import (
    content_tokens,
    count_duplicates,
    dice,
    normalize_text,
)
from memlab.eval.calibration import (
    Calibration,
    calibrate,
    load_pairs,
)
from memlab.eval.default_matcher import (
    DefaultMatcher,
    EmbeddingMatcher,
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
from memlab.eval.judge import LLMJudgeMatcher
from memlab.eval.matchers import (
    MATCHERS,
    default_matcher,
    resolve_matcher,
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
from memlab.eval.rescore import rescore
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
    "MATCHERS",
    "BackendFactory",
    "Calibration",
    "DefaultMatcher",
    "Embedder",
    "EmbeddingDuplicates",
    "EmbeddingMatcher",
    "EmbeddingsUnavailableError",
    "FactMatcher",
    "Grid",
    "GridError",
    "LLMJudgeMatcher",
    "LaneConfig",
    "LexicalMatcher",
    "MatchResult",
    "OwnerReplay",
    "Run",
    "RunError",
    "WordLlamaEmbedder",
    "calibrate",
    "content_tokens",
    "count_duplicates",
    "default_matcher",
    "dice",
    "failure_table",
    "flatten_call",
    "load_grid",
    "load_pairs",
    "load_run",
    "normalize_text",
    "parse_options_for",
    "replay_owner",
    "rescore",
    "resolve_matcher",
    "session_rows",
    "summarize",
    "sweep",
    "violation_table",
    "write_jsonl",
]
