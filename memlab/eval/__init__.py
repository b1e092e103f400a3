"""Deprecated: the names ``memlab.eval`` exported before it was split by job.

``memlab.eval`` held the sweep machinery, the metrics and the fact matchers in one flat
package. They now live in :mod:`memlab.sweeps`, :mod:`memlab.scoring` and
:mod:`memlab.matching` (see ``docs/architecture.md``); this face keeps old imports such as
``from memlab.eval import EmbeddingDuplicates`` working, with a ``DeprecationWarning``
naming the new place. Its former modules (``memlab.eval.metrics``, ...) are gone.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

__all__: list[str] = []  # nothing new is exported from here

# Old name -> where it lives now.
_MOVED: dict[str, str] = {
    "content_tokens": "memlab.core.jsondoc.similarity",
    "count_duplicates": "memlab.core.jsondoc.similarity",
    "dice": "memlab.core.jsondoc.similarity",
    "normalize_text": "memlab.core.jsondoc.similarity",
    "AuditSheet": "memlab.matching.matcher_audit",
    "Calibration": "memlab.matching.calibration",
    "DefaultMatcher": "memlab.matching.default_matcher",
    "Embedder": "memlab.matching.embeddings",
    "EmbeddingDuplicates": "memlab.matching.embeddings",
    "EmbeddingMatcher": "memlab.matching.default_matcher",
    "EmbeddingsUnavailableError": "memlab.matching.embeddings",
    "FactMatcher": "memlab.matching.base",
    "LLMJudgeMatcher": "memlab.matching.judge",
    "LexicalMatcher": "memlab.matching.base",
    "MATCHERS": "memlab.matching.matchers",
    "MatchResult": "memlab.matching.base",
    "WordLlamaEmbedder": "memlab.matching.embeddings",
    "calibrate": "memlab.matching.calibration",
    "judge_sheet": "memlab.matching.matcher_audit",
    "read_sheet": "memlab.matching.matcher_audit",
    "default_matcher": "memlab.matching.matchers",
    "load_pairs": "memlab.matching.calibration",
    "resolve_matcher": "memlab.matching.matchers",
    "CompareError": "memlab.scoring.comparing.comparison",
    "Lane": "memlab.scoring.comparing.comparison",
    "METRIC_SPECS": "memlab.scoring.metric_specs",
    "MetricSpec": "memlab.scoring.metric_specs",
    "POLICIES": "memlab.scoring.qa.injection_audit",
    "StatOptions": "memlab.scoring.inference.stats",
    "StatsError": "memlab.scoring.inference.stats",
    "audit_injection": "memlab.scoring.qa.injection_audit",
    "compare": "memlab.scoring.comparing.comparison",
    "compare_lanes": "memlab.scoring.comparing.comparison",
    "failure_table": "memlab.scoring.metrics",
    "metric_spec": "memlab.scoring.metric_specs",
    "owner_counts": "memlab.scoring.metrics",
    "owner_deltas": "memlab.scoring.comparing.comparison",
    "replay_rows": "memlab.scoring.metrics",
    "score_operations": "memlab.scoring.operations",
    "session_rows": "memlab.scoring.metrics",
    "summarize": "memlab.scoring.metrics",
    "violation_table": "memlab.scoring.metrics",
    "AXES": "memlab.grids.grid",
    "BackendFactory": "memlab.grids.lane_backends",
    "DaskSpec": "memlab.sweeps.executors",
    "ExecutorError": "memlab.sweeps.executors",
    "ForkSpec": "memlab.grids.grid",
    "Grid": "memlab.grids.grid",
    "GridError": "memlab.grids.grid",
    "IncompleteSweepError": "memlab.sweeps.driver",
    "LaneConfig": "memlab.grids.grid",
    "OwnerReplay": "memlab.sweeps.replay",
    "PromptSource": "memlab.sweeps.grid_check",
    "ResolvedLane": "memlab.sweeps.plan",
    "Run": "memlab.runs.run",
    "RunError": "memlab.runs.run",
    "SweepExecutor": "memlab.sweeps.executors",
    "SweepPlan": "memlab.sweeps.plan",
    "describe_fork": "memlab.sweeps.fork",
    "draw_sheet": "memlab.postrun.audit",
    "load_grid": "memlab.sweeps.plan",
    "load_run": "memlab.runs.run",
    "parse_executor": "memlab.sweeps.executors",
    "plan_sweep": "memlab.sweeps.plan",
    "replay_owner": "memlab.sweeps.replay",
    "rescore": "memlab.postrun.rescoring",
    "sweep": "memlab.sweeps.driver",
    "parse_options_for": "memlab.core.jsondoc.parsing",
    "flatten_call": "memlab.runs.run",
}


def __getattr__(name: str) -> Any:
    if name == "DEFAULT_PRICES":  # now declared by each backend
        warnings.warn(
            "memlab.eval.DEFAULT_PRICES is gone: each backend declares its prices; use "
            "memlab.backends.registry.price_table()",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module("memlab.backends.registry").price_table()
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'memlab.eval' has no attribute {name!r}")
    warnings.warn(
        f"memlab.eval.{name} moved to {module}.{name}; import it from there",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(module), name)
