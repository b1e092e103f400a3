"""Replay datasets through the pipeline, sweep configurations, and measure the results."""

from memlab.core.similarity import (
    content_tokens,
    count_duplicates,
    dice,
    normalize_text,
)
from memlab.matching.base import (
    FactMatcher,
    LexicalMatcher,
    MatchResult,
)
from memlab.matching.calibration import (
    Calibration,
    calibrate,
    load_pairs,
)
from memlab.matching.default_matcher import (
    DefaultMatcher,
    EmbeddingMatcher,
)
from memlab.matching.embeddings import (
    Embedder,
    EmbeddingDuplicates,
    EmbeddingsUnavailableError,
    WordLlamaEmbedder,
)
from memlab.matching.judge import LLMJudgeMatcher
from memlab.matching.matchers import (
    MATCHERS,
    default_matcher,
    resolve_matcher,
)
from memlab.scoring.comparison import (
    CompareError,
    Lane,
    compare,
    compare_lanes,
    owner_deltas,
)
from memlab.scoring.injection_audit import POLICIES, audit_injection
from memlab.scoring.metric_specs import (
    METRIC_SPECS,
    MetricSpec,
    metric_spec,
)
from memlab.scoring.metrics import (
    DEFAULT_PRICES,
    failure_table,
    owner_counts,
    replay_rows,
    session_rows,
    summarize,
    violation_table,
)
from memlab.scoring.operations import score_operations
from memlab.scoring.stats import (
    StatOptions,
    StatsError,
)
from memlab.sweeps.driver import (
    IncompleteSweepError,
    SweepPlan,
    plan_sweep,
    sweep,
)
from memlab.sweeps.executors import (
    DaskSpec,
    ExecutorError,
    SweepExecutor,
    parse_executor,
)
from memlab.sweeps.fork import describe_fork
from memlab.sweeps.grid import (
    AXES,
    ForkSpec,
    Grid,
    GridError,
    LaneConfig,
    load_grid,
)
from memlab.sweeps.plan import (
    BackendFactory,
    PromptSource,
    ResolvedLane,
    parse_options_for,
)
from memlab.sweeps.replay import (
    OwnerReplay,
    replay_owner,
)
from memlab.sweeps.rescoring import rescore
from memlab.sweeps.run import (
    Run,
    RunError,
    flatten_call,
    load_run,
    write_jsonl,
)

__all__ = [
    "AXES",
    "DEFAULT_PRICES",
    "MATCHERS",
    "METRIC_SPECS",
    "POLICIES",
    "BackendFactory",
    "Calibration",
    "CompareError",
    "DaskSpec",
    "DefaultMatcher",
    "Embedder",
    "EmbeddingDuplicates",
    "EmbeddingMatcher",
    "EmbeddingsUnavailableError",
    "ExecutorError",
    "FactMatcher",
    "ForkSpec",
    "Grid",
    "GridError",
    "IncompleteSweepError",
    "LLMJudgeMatcher",
    "Lane",
    "LaneConfig",
    "LexicalMatcher",
    "MatchResult",
    "MetricSpec",
    "OwnerReplay",
    "PromptSource",
    "ResolvedLane",
    "Run",
    "RunError",
    "StatOptions",
    "StatsError",
    "SweepExecutor",
    "SweepPlan",
    "WordLlamaEmbedder",
    "audit_injection",
    "calibrate",
    "compare",
    "compare_lanes",
    "content_tokens",
    "count_duplicates",
    "default_matcher",
    "describe_fork",
    "dice",
    "failure_table",
    "flatten_call",
    "load_grid",
    "load_pairs",
    "load_run",
    "metric_spec",
    "normalize_text",
    "owner_counts",
    "owner_deltas",
    "parse_executor",
    "parse_options_for",
    "plan_sweep",
    "replay_owner",
    "replay_rows",
    "rescore",
    "resolve_matcher",
    "score_operations",
    "session_rows",
    "summarize",
    "sweep",
    "violation_table",
    "write_jsonl",
]
