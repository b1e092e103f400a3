"""Replay datasets through the pipeline, sweep configurations, and measure the results."""

from memlab.eval.compare import (
    CompareError,
    Lane,
    compare,
    compare_lanes,
    owner_deltas,
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
    content_tokens,
    count_duplicates,
    dice,
    normalize_text,
)
from memlab.eval.metric_specs import (
    METRIC_SPECS,
    MetricSpec,
    metric_spec,
)
from memlab.eval.metrics import (
    DEFAULT_PRICES,
    failure_table,
    owner_counts,
    session_rows,
    summarize,
    violation_table,
)
from memlab.eval.plan import (
    BackendFactory,
    PromptSource,
    ResolvedLane,
    parse_options_for,
)
from memlab.eval.replay import (
    OwnerReplay,
    replay_owner,
)
from memlab.eval.run import (
    Run,
    RunError,
    flatten_call,
    load_run,
    write_jsonl,
)
from memlab.eval.stats import (
    StatOptions,
    StatsError,
)
from memlab.eval.sweep import (
    IncompleteSweepError,
    SweepPlan,
    plan_sweep,
    sweep,
)

__all__ = [
    "AXES",
    "DEFAULT_PRICES",
    "METRIC_SPECS",
    "BackendFactory",
    "CompareError",
    "Embedder",
    "EmbeddingDuplicates",
    "EmbeddingsUnavailableError",
    "FactMatcher",
    "Grid",
    "GridError",
    "IncompleteSweepError",
    "Lane",
    "LaneConfig",
    "LexicalMatcher",
    "MetricSpec",
    "OwnerReplay",
    "PromptSource",
    "ResolvedLane",
    "Run",
    "RunError",
    "StatOptions",
    "StatsError",
    "SweepPlan",
    "WordLlamaEmbedder",
    "compare",
    "compare_lanes",
    "content_tokens",
    "count_duplicates",
    "dice",
    "failure_table",
    "flatten_call",
    "load_grid",
    "load_run",
    "metric_spec",
    "normalize_text",
    "owner_counts",
    "owner_deltas",
    "parse_options_for",
    "plan_sweep",
    "replay_owner",
    "session_rows",
    "summarize",
    "sweep",
    "violation_table",
    "write_jsonl",
]
