"""Every headline metric, declared once, and the registry every consumer reads.

What one metric is (how a summary column is computed from per-owner counts, how it is shown,
which direction is better, whether it is a rate that gets a bootstrap interval and paired
tests, its valid range, and its gate threshold) is a
:class:`~memlab.scoring.metric_model.MetricSpec`; the per-owner counts are declared in
:data:`memlab.scoring.count_specs.COUNT_SPECS`. The run summary, the report tables, the gate's
thresholds and checks and the ``memlab gate`` flags are all built from the registry
:data:`METRICS` (the built-ins of :data:`METRIC_SPECS`, and any a plugin registers).

Adding a metric is one entry below (or ``METRICS.register(spec.column, spec)`` from a plugin);
a metric that needs a new count also declares it in
:data:`~memlab.scoring.count_specs.COUNT_SPECS` and computes it where its step does
(:mod:`memlab.scoring.metrics` for the memory state). Every value is a sum over
owners of a per-owner count, or a ratio of two such sums (micro-averaged: recall = covered gold
facts of all owners / active gold facts of all owners), which is also what the bootstrap
resamples; a spec naming an undeclared count fails at import.

This module imports neither pandas nor matplotlib.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from memlab import plugins
from memlab.scoring.count_specs import COUNT_SPECS, STALE_HORIZON
from memlab.scoring.metric_model import Average, Direction, MetricSpec

__all__ = [
    "DEFAULT_PRIMARY",
    "METRICS",
    "METRIC_SPECS",
    "gate_specs",
    "interval_specs",
    "metric_spec",
    "primary_metrics",
    "report_specs",
    "summary_columns",
    "summary_specs",
]

_RATE = (0.0, 1.0)

_EMB_HINT = "not measured (sweep with --embedding-duplicates)"
_QA_HINT = "no memory QA in this run (memlab qa RUN, or a grid with a qa: key)"
_OPS_HINT = "not recorded in this run (rerun the sweep to score operations)"
_PROCEDURE_HINT = (
    "no procedure questions in this run's memory QA (a dataset with procedure questions, "
    "memory QA with the memory condition)"
)


def _rate(
    column: str,
    title: str,
    direction: Direction,
    ratio: tuple[str, str],
    *,
    gate: str = "",
    empty: float = math.nan,
    report: bool = False,
    requires: str = "",
    primary: bool = False,
    average: Average = "micro",
) -> MetricSpec:
    """A share with a bootstrap interval and paired tests, gated (by default under its column
    name): the shape most headline metrics have."""
    return MetricSpec(
        column,
        title,
        direction,
        "percent",
        ratio=ratio,
        interval=True,
        empty=empty,
        valid=_RATE,
        gate=gate or column,
        report=report,
        requires=requires,
        primary=primary,
        average=average,
    )


def _operation_rates(short: str, kind: str, name: str) -> tuple[MetricSpec, ...]:
    """Precision, recall and F1 of one operation type (see :mod:`memlab.scoring.operations`).

    F1 is the ratio ``2 correct / (2 correct + false + missed)`` of per-owner sums: the
    harmonic mean of the micro-averaged precision and recall, so its interval is a bootstrap
    interval like the others.
    """
    ratios = {
        "precision": (f"op_{kind}_correct", f"op_{kind}_judged"),
        "recall": (f"op_{kind}_correct", f"op_{kind}_expected"),
        "f1": (f"op_{short}_f1_num", f"op_{short}_f1_den"),
    }
    rates = tuple(
        _rate(
            f"op_{short}_{measure}",
            f"{name} {'F1' if measure == 'f1' else measure}",
            "higher",
            ratio,
            requires=_OPS_HINT,
        )
        for measure, ratio in ratios.items()
    )
    macro = _rate(
        f"op_{short}_precision_macro",
        f"{name} precision (macro)",
        "higher",
        ratios["precision"],
        requires=_OPS_HINT,
        average="macro",
    )
    return (*rates, macro)


METRIC_SPECS: tuple[MetricSpec, ...] = (
    MetricSpec("owners", "owners", None),
    MetricSpec("sessions", "sessions", None),
    MetricSpec("agent_runs", "agent runs", None),
    MetricSpec("parse_failures", "parse failures", "lower"),
    _rate(
        "parse_failure_rate",
        "parse failure rate",
        "lower",
        ("parse_failures", "replies"),
        gate="parse_failure",
        report=True,
        primary=True,
    ),
    MetricSpec("backend_errors", "backend errors", "lower"),
    _rate("backend_error_rate", "backend error rate", "lower", ("backend_errors", "llm_calls")),
    _rate("recall", "recall", "higher", ("gold_covered", "gold_active"), report=True, primary=True),
    _rate("precision", "precision", "higher", ("stored_precise", "facts"), report=True),
    # The mean of owners' precision: the one verdicts use (pooled precision moves when owners
    # that store many facts do better, with no owner's precision changing).
    _rate(
        "precision_macro",
        "precision (macro)",
        "higher",
        ("stored_precise", "facts"),
        primary=True,
        average="macro",
    ),
    MetricSpec("dup_exact", "exact duplicates", "lower"),
    MetricSpec("dup_normalized", "normalized duplicates", "lower"),
    MetricSpec("dup_near", "near duplicates", "lower"),
    _rate(
        "duplicate_rate", "duplicate rate", "lower", ("dup_near", "facts"), empty=0.0, report=True
    ),
    MetricSpec("dup_embedding", "duplicates (embeddings)", "lower", requires=_EMB_HINT),
    _rate(
        "duplicate_rate_embedding",
        "duplicate rate (embeddings)",
        "lower",
        ("dup_embedding", "facts"),
        empty=0.0,
        report=True,
        requires=_EMB_HINT,
    ),
    MetricSpec("final_facts", "final facts", None, total="facts", report=True),
    # Per session it draws the memory-size curve (memlab.scoring.consolidation).
    MetricSpec(
        "memory_tokens",
        "memory size (tokens / owner)",
        None,
        "number",
        ratio=("memory_tokens", "owners"),
        requires="not recorded in this run (rescore it: memlab rescore RUN)",
    ),
    MetricSpec(
        "retracted_held", "retracted facts held", "lower", gate="retracted_held", report=True
    ),
    _rate(
        "retracted_held_rate",
        "retracted-held rate",
        "lower",
        ("retracted_held", "gold_retracted"),
        requires="not recorded in this run (rerun the sweep to score it)",
    ),
    MetricSpec(
        "forbidden_stored",
        "forbidden content stored",
        "lower",
        gate="forbidden_stored",
        report=True,
    ),
    _rate(
        "forbidden_stored_rate",
        "forbidden-stored rate",
        "lower",
        ("forbidden_stored", "facts"),
        empty=0.0,
    ),
    # A model that copies the prompt's own example or instructions (memlab.core.jsondoc.echo): the
    # share of replies with an echo, which is never stored; a prompt comparison on such
    # replies measures the copying, not the prompts.
    _rate(
        "echo_rate", "replies echoing the prompt", "lower", ("echo_replies", "replies"), report=True
    ),
    MetricSpec("echoed", "prompt echoes dropped", "lower"),
    MetricSpec("llm_calls", "LLM calls", "lower", report=True),
    MetricSpec("calls_saved_by_debounce", "calls saved by debounce", "higher", report=True),
    MetricSpec("cache_hits", "cache hits", None),
    # Calls that reached a model (not the cache, not the simulated model), and the simulated
    # model's: llm_calls = model_calls + cache_hits + simulated_calls.
    MetricSpec("model_calls", "model calls", None),
    MetricSpec("simulated_calls", "simulated calls", None),
    MetricSpec("added", "facts added", None),
    MetricSpec("removed", "facts removed", None),
    MetricSpec("evicted", "facts evicted by the cap", None),
    MetricSpec("skipped_below_threshold", "facts below the threshold", None),
    MetricSpec("skipped_duplicate", "duplicate facts skipped", None),
    MetricSpec("prompt_tokens", "prompt tokens", None),
    MetricSpec("completion_tokens", "completion tokens", None),
    MetricSpec(
        "tokens_per_update",
        "tokens / update",
        "lower",
        "number",
        ratio=("tokens", "llm_calls"),
        empty=0.0,
        report=True,
    ),
    MetricSpec("cost_usd", "cost (USD)", "lower", "usd", report=True),
    MetricSpec(
        "cost_per_retained_fact",
        "cost per retained fact (USD)",
        "lower",
        "usd",
        ratio=("cost_usd", "facts"),
    ),
    # Memory operations, stale facts, eviction regret (memlab.scoring.operations).
    *_operation_rates("add", "adds", "add"),
    *_operation_rates("remove", "removals", "removal"),
    MetricSpec(
        "op_wrong_removals",
        "wrong removals",
        "lower",
        total="op_removals_wrong",
        gate="op_wrong_removals",
        requires=_OPS_HINT,
    ),
    *(
        MetricSpec(column, title, None, requires=_OPS_HINT)
        for column, title in (
            ("op_adds_correct", "correct adds"),
            ("op_adds_missed", "missed adds"),
            ("op_adds_redundant", "redundant adds"),
            ("op_adds_spurious", "spurious adds"),
            ("op_removals_correct", "correct removals"),
            ("op_removals_missed", "missed removals"),
        )
    ),
    MetricSpec(
        "stale_rmst",
        f"sessions a retracted fact survives (restricted mean, {STALE_HORIZON} sessions)",
        "lower",
        "number",
        survival=("stale_removed", "stale_at_risk", STALE_HORIZON),
        interval=True,
        valid=(0.0, float(STALE_HORIZON)),
        gate="stale_rmst",
        requires=_OPS_HINT,
    ),
    _rate(
        "eviction_regret",
        "eviction regret",
        "lower",
        ("gold_regret", "gold_active"),
        requires=_OPS_HINT,
    ),
    # What the next session's agent receives (memlab.scoring.qa.injection_audit).
    _rate(
        "injected_gold_coverage",
        "injected gold coverage",
        "higher",
        ("gold_injected", "gold_injectable"),
        requires="not recorded in this run (rerun the sweep to audit injection)",
    ),
    MetricSpec(
        "injection_tokens_mean",
        "injected tokens / session",
        None,
        "number",
        ratio=("injection_tokens", "injections"),
        empty=0.0,
    ),
    MetricSpec("injection_dropped", "facts dropped by the budget", None),
    # Does the memory help the agent answer? (memlab.scoring.qa.qa_metrics): answerable questions
    # answered from the lane's memory, graded by the run's headline judge; abstain and
    # adversarial questions apart. Primary: a run with memory QA is judged on it; a run
    # without has no QA counts, so the metric is absent from its comparisons and family.
    _rate(
        "qa_accuracy",
        "QA accuracy",
        "higher",
        ("qa_correct", "qa_answerable"),
        report=True,
        requires=_QA_HINT,
        primary=True,
    ),
    _rate("qa_f1", "QA token F1", "higher", ("qa_f1", "qa_answerable"), requires=_QA_HINT),
    _rate("qa_bleu1", "QA BLEU-1", "higher", ("qa_bleu1", "qa_answerable"), requires=_QA_HINT),
    _rate(
        "qa_abstain_accuracy",
        "QA abstention accuracy (never said)",
        "higher",
        ("qa_abstain_correct", "qa_abstain"),
        requires=_QA_HINT,
    ),
    _rate(
        "qa_adversarial_accuracy",
        "QA adversarial accuracy",
        "higher",
        ("qa_adversarial_correct", "qa_adversarial"),
        requires=_QA_HINT,
    ),
    # Procedure questions (kind procedure, asked of the lane's memory, never judged): the
    # mean step-order accuracy of the replies and the share that name a step of the procedure.
    _rate(
        "qa_procedure_step_accuracy",
        "QA procedure step-order accuracy",
        "higher",
        ("qa_procedure_steps", "qa_procedures"),
        requires=_PROCEDURE_HINT,
    ),
    _rate(
        "qa_procedure_recall",
        "QA procedures recalled (a step named)",
        "higher",
        ("qa_procedure_recalled", "qa_procedures"),
        requires=_PROCEDURE_HINT,
    ),
    # Answers a judge gave no verdict on (its call failed or its reply named no single verdict)
    # and answers whose call failed: each counted wrong above, and shown so that a low
    # accuracy made of unreadable verdicts is not read as a bad memory.
    _rate(
        "qa_judge_error_rate",
        "QA answers without a verdict",
        "lower",
        ("qa_judge_errors", "qa_questions"),
        gate="judge_errors",
        report=True,
        requires=_QA_HINT,
    ),
    _rate(
        "qa_answer_error_rate",
        "QA answers that failed",
        "lower",
        ("qa_answer_errors", "qa_questions"),
        gate="answer_errors",
        requires=_QA_HINT,
    ),
    MetricSpec(
        "qa_read_tokens_per_question",
        "read tokens / question",
        "lower",
        "number",
        ratio=("qa_read_tokens", "qa_questions"),
        report=True,
        requires=_QA_HINT,
    ),
    MetricSpec(
        "qa_read_latency_per_question",
        "read latency / question (s)",
        "lower",
        "number",
        ratio=("qa_read_latency_s", "qa_questions"),
        requires=_QA_HINT,
    ),
)
"""The built-in summary metrics in column order; the report's metric table keeps this order."""


def _unknown_metric(column: str, known: Sequence[str]) -> KeyError:
    return KeyError(f"unknown metric {column!r}; known metrics: {', '.join(known)}")


_DECLARED_COUNTS = frozenset(count.column for count in COUNT_SPECS)


def _check_metric(column: str, spec: object) -> str:
    """A spec registered under another column, or over undeclared counts, is refused where it
    is registered, not in every summary."""
    if not isinstance(spec, MetricSpec):
        return f"an entry is a MetricSpec, got {type(spec).__name__}"
    if spec.column != column:
        return f"it is registered under {column!r} but its column is {spec.column!r}"
    missing = [source for source in spec.sources if source not in _DECLARED_COUNTS]
    if missing:
        return f"its per-owner counts {missing} are not declared in COUNT_SPECS"
    return ""


METRICS: plugins.Registry[MetricSpec] = plugins.declare(
    "metric",
    "metric",
    unknown=_unknown_metric,
    check=_check_metric,
    builtins={spec.column: spec for spec in METRIC_SPECS},
)
"""Every summary metric by column: the built-ins, then those plugins register
(``METRICS.register(spec.column, spec)``), in column order."""

# The functions below read METRICS when called (no copies made at import), so every consumer
# sees the same list, plugins' metrics included.


def summary_specs() -> tuple[MetricSpec, ...]:
    """Every summary metric, in column order."""
    return tuple(METRICS.values())


def metric_spec(column: str) -> MetricSpec:
    """The spec of a summary column; a clear error listing the known ones otherwise."""
    return METRICS.lookup(column)


def interval_specs() -> tuple[MetricSpec, ...]:
    """The rates that get intervals and paired tests, in column order."""
    return tuple(spec for spec in summary_specs() if spec.interval)


DEFAULT_PRIMARY: tuple[str, ...] = tuple(spec.column for spec in METRIC_SPECS if spec.primary)
"""The built-in primary metrics (a comparison's Holm family unless a grid names its own)."""


def primary_metrics(chosen: Sequence[str] | None = None) -> tuple[str, ...]:
    """The primary set: ``chosen`` (checked: rates with intervals), else every registered
    metric declared primary."""
    if chosen is None:
        return tuple(spec.column for spec in summary_specs() if spec.primary)
    rates = [spec.column for spec in interval_specs()]
    unknown = [name for name in chosen if name not in rates]
    if unknown:
        raise KeyError(
            f"primary metric {unknown[0]!r} is not a rate with an interval; rates: "
            + ", ".join(rates)
        )
    return tuple(dict.fromkeys(chosen))


def report_specs() -> tuple[MetricSpec, ...]:
    """The metrics of the report's metric table, in order."""
    return tuple(spec for spec in summary_specs() if spec.report)


def gate_specs() -> dict[str, MetricSpec]:
    """Gated metrics by threshold name (``max_parse_failure`` -> its spec)."""
    return {spec.threshold: spec for spec in summary_specs() if spec.threshold is not None}


def summary_columns() -> tuple[str, ...]:
    """Every summary column in order: each interval metric followed by ``_lo`` and ``_hi``."""
    columns: list[str] = []
    for spec in summary_specs():
        columns.append(spec.column)
        if spec.interval:
            columns += [f"{spec.column}_lo", f"{spec.column}_hi"]
    return tuple(columns)
