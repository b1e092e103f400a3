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
    "content_tokens": "memlab.core.similarity",
    "count_duplicates": "memlab.core.similarity",
    "dice": "memlab.core.similarity",
    "normalize_text": "memlab.core.similarity",
    "AuditSheet": "memlab.matching",
    "Calibration": "memlab.matching",
    "DefaultMatcher": "memlab.matching",
    "Embedder": "memlab.matching",
    "EmbeddingDuplicates": "memlab.matching",
    "EmbeddingMatcher": "memlab.matching",
    "EmbeddingsUnavailableError": "memlab.matching",
    "FactMatcher": "memlab.matching",
    "LLMJudgeMatcher": "memlab.matching",
    "LexicalMatcher": "memlab.matching",
    "MATCHERS": "memlab.matching",
    "MatchResult": "memlab.matching",
    "WordLlamaEmbedder": "memlab.matching",
    "calibrate": "memlab.matching",
    "judge_sheet": "memlab.matching",
    "read_sheet": "memlab.matching",
    "default_matcher": "memlab.matching",
    "load_pairs": "memlab.matching",
    "resolve_matcher": "memlab.matching",
    "CompareError": "memlab.scoring",
    "Lane": "memlab.scoring",
    "METRIC_SPECS": "memlab.scoring",
    "MetricSpec": "memlab.scoring",
    "POLICIES": "memlab.scoring",
    "StatOptions": "memlab.scoring",
    "StatsError": "memlab.scoring",
    "audit_injection": "memlab.scoring",
    "compare": "memlab.scoring",
    "compare_lanes": "memlab.scoring",
    "failure_table": "memlab.scoring",
    "metric_spec": "memlab.scoring",
    "owner_counts": "memlab.scoring",
    "owner_deltas": "memlab.scoring",
    "replay_rows": "memlab.scoring",
    "score_operations": "memlab.scoring",
    "session_rows": "memlab.scoring",
    "summarize": "memlab.scoring",
    "violation_table": "memlab.scoring",
    "AXES": "memlab.sweeps",
    "BackendFactory": "memlab.sweeps",
    "DaskSpec": "memlab.sweeps",
    "ExecutorError": "memlab.sweeps",
    "ForkSpec": "memlab.sweeps",
    "Grid": "memlab.sweeps",
    "GridError": "memlab.sweeps",
    "IncompleteSweepError": "memlab.sweeps",
    "LaneConfig": "memlab.sweeps",
    "OwnerReplay": "memlab.sweeps",
    "PromptSource": "memlab.sweeps",
    "ResolvedLane": "memlab.sweeps",
    "Run": "memlab.sweeps",
    "RunError": "memlab.sweeps",
    "SweepExecutor": "memlab.sweeps",
    "SweepPlan": "memlab.sweeps",
    "describe_fork": "memlab.sweeps",
    "draw_sheet": "memlab.sweeps",
    "load_grid": "memlab.sweeps",
    "load_run": "memlab.sweeps",
    "parse_executor": "memlab.sweeps",
    "plan_sweep": "memlab.sweeps",
    "replay_owner": "memlab.sweeps",
    "rescore": "memlab.sweeps",
    "sweep": "memlab.sweeps",
    "parse_options_for": "memlab.core.parsing",
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
