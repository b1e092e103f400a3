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
from memlab.eval.compare import (
    CompareError,
    Lane,
    compare,
    compare_lanes,
    owner_deltas,
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
from memlab.eval.executors import (
    DaskSpec,
    ExecutorError,
    SweepExecutor,
    parse_executor,
)
from memlab.eval.fork import describe_fork
from memlab.eval.grid import (
    AXES,
    ForkSpec,
    Grid,
    GridError,
    LaneConfig,
    load_grid,
)
from memlab.eval.injection_audit import POLICIES, audit_injection
from memlab.eval.judge import LLMJudgeMatcher
from memlab.eval.matcher_audit import (
    AuditSheet,
    draw_sheet,
    judge_sheet,
    read_sheet,
)
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
from memlab.eval.metric_specs import (
    METRIC_SPECS,
    MetricSpec,
    metric_spec,
)
from memlab.eval.metrics import (
    DEFAULT_PRICES,
    failure_table,
    owner_counts,
    replay_rows,
    session_rows,
    summarize,
    violation_table,
)
from memlab.eval.operations import score_operations
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
from memlab.eval.rescore import rescore
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
    "MATCHERS",
    "METRIC_SPECS",
    "POLICIES",
    "AuditSheet",
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
    "draw_sheet",
    "failure_table",
    "flatten_call",
    "judge_sheet",
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
    "read_sheet",
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
