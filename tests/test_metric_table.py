"""The declared tables of counts and metrics, pinned whole.

Each built-in count and metric is written out here field by field (a metric's fields left at
their defaults are omitted), so that a changed declaration, or a change to the helpers that
build the shared shapes (a rate with an interval; precision, recall and F1 of an operation),
fails here with the entry that moved.

This file runs first in the mutation runs of :mod:`memlab.scoring.metric_specs` and
:mod:`memlab.scoring.count_specs` (``scripts/mutation.py``): the tables are built when the
module is imported, and mutmut ties such code to the first test it runs.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from memlab.scoring.count_specs import COUNT_SPECS
from memlab.scoring.metric_specs import METRIC_SPECS

_RATE = (0.0, 1.0)
_EMB = "not measured (sweep with --embedding-duplicates)"
_QA = "no memory QA in this run (memlab qa RUN, or a grid with a qa: key)"
_OPS = "not recorded in this run (rerun the sweep to score operations)"
_PROCEDURES = (
    "no procedure questions in this run's memory QA (a dataset with procedure questions, memory QA "
    "with the memory condition)"
)

DEFAULTS: dict[str, Any] = {
    "unit": "count",
    "ratio": None,
    "total": None,
    "interval": False,
    "empty": math.nan,
    "valid": (0.0, math.inf),
    "gate": None,
    "report": False,
    "requires": "",
    "primary": False,
    "average": "micro",
    "survival": None,
}
"""A metric's fields when its declaration does not set them."""

# column over by [rows: every session row has it]
COUNTS = """
facts last_session state rows
gold_active last_session state rows
gold_covered last_session state rows
stored_precise last_session state rows
retracted_held last_session state rows
gold_retracted last_session state rows
forbidden_stored last_session state rows
dup_exact last_session state rows
dup_normalized last_session state rows
dup_near last_session state rows
dup_embedding last_session embeddings
memory_tokens last_session state
gold_regret last_session operations
agent_runs sessions replay rows
added sessions merge rows
removed sessions merge rows
evicted sessions merge rows
skipped_below_threshold sessions merge rows
skipped_duplicate sessions merge rows
echoed sessions merge rows
op_adds sessions operations
op_adds_expected sessions operations
op_adds_correct sessions operations
op_adds_missed sessions operations
op_adds_redundant sessions operations
op_adds_spurious sessions operations
op_removals sessions operations
op_removals_expected sessions operations
op_removals_correct sessions operations
op_removals_missed sessions operations
op_removals_wrong sessions operations
gold_evicted sessions operations
gold_below_threshold sessions operations
stale_facts sessions operations
stale_sessions sessions operations
stale_days sessions operations
stale_removed_0 sessions operations
stale_at_risk_0 sessions operations
stale_removed_1 sessions operations
stale_at_risk_1 sessions operations
stale_removed_2 sessions operations
stale_at_risk_2 sessions operations
injections sessions injection
injection_tokens sessions injection
injection_facts sessions injection
injection_dropped sessions injection
gold_injected sessions injection
gold_injectable sessions injection
qa_questions sessions qa
qa_answerable sessions qa
qa_correct sessions qa
qa_f1 sessions qa
qa_bleu1 sessions qa
qa_abstain sessions qa
qa_abstain_correct sessions qa
qa_adversarial sessions qa
qa_adversarial_correct sessions qa
qa_read_tokens sessions qa
qa_read_latency_s sessions qa
qa_judge_errors sessions qa
qa_answer_errors sessions qa
qa_procedures sessions qa
qa_procedure_steps sessions qa
qa_procedure_recalled sessions qa
llm_calls calls calls rows
replies calls calls
parse_failures calls calls
backend_errors calls calls
prompt_tokens calls calls
completion_tokens calls calls
tokens calls calls
cost_usd calls calls
cache_hits calls calls
model_calls calls calls
simulated_calls calls calls
queued_updates calls calls
echo_replies calls calls
owners derived owner
sessions derived owner
calls_saved_by_debounce derived owner
op_adds_judged derived operations
op_removals_judged derived operations
op_add_f1_num derived operations
op_add_f1_den derived operations
op_remove_f1_num derived operations
op_remove_f1_den derived operations
"""
METRICS = [
    ("owners", "owners", None, dict()),
    ("sessions", "sessions", None, dict()),
    ("agent_runs", "agent runs", None, dict()),
    ("parse_failures", "parse failures", "lower", dict()),
    (
        "parse_failure_rate",
        "parse failure rate",
        "lower",
        dict(
            unit="percent",
            ratio=("parse_failures", "replies"),
            interval=True,
            valid=_RATE,
            gate="parse_failure",
            report=True,
            primary=True,
        ),
    ),
    ("backend_errors", "backend errors", "lower", dict()),
    (
        "backend_error_rate",
        "backend error rate",
        "lower",
        dict(
            unit="percent",
            ratio=("backend_errors", "llm_calls"),
            interval=True,
            valid=_RATE,
            gate="backend_error_rate",
        ),
    ),
    (
        "recall",
        "recall",
        "higher",
        dict(
            unit="percent",
            ratio=("gold_covered", "gold_active"),
            interval=True,
            valid=_RATE,
            gate="recall",
            report=True,
            primary=True,
        ),
    ),
    (
        "precision",
        "precision",
        "higher",
        dict(
            unit="percent",
            ratio=("stored_precise", "facts"),
            interval=True,
            valid=_RATE,
            gate="precision",
            report=True,
        ),
    ),
    (
        "precision_macro",
        "precision (macro)",
        "higher",
        dict(
            unit="percent",
            ratio=("stored_precise", "facts"),
            interval=True,
            valid=_RATE,
            gate="precision_macro",
            primary=True,
            average="macro",
        ),
    ),
    ("dup_exact", "exact duplicates", "lower", dict()),
    ("dup_normalized", "normalized duplicates", "lower", dict()),
    ("dup_near", "near duplicates", "lower", dict()),
    (
        "duplicate_rate",
        "duplicate rate",
        "lower",
        dict(
            unit="percent",
            ratio=("dup_near", "facts"),
            interval=True,
            empty=0.0,
            valid=_RATE,
            gate="duplicate_rate",
            report=True,
        ),
    ),
    ("dup_embedding", "duplicates (embeddings)", "lower", dict(requires=_EMB)),
    (
        "duplicate_rate_embedding",
        "duplicate rate (embeddings)",
        "lower",
        dict(
            unit="percent",
            ratio=("dup_embedding", "facts"),
            interval=True,
            empty=0.0,
            valid=_RATE,
            gate="duplicate_rate_embedding",
            report=True,
            requires=_EMB,
        ),
    ),
    ("final_facts", "final facts", None, dict(total="facts", report=True)),
    (
        "memory_tokens",
        "memory size (tokens / owner)",
        None,
        dict(
            unit="number",
            ratio=("memory_tokens", "owners"),
            requires="not recorded in this run (rescore it: memlab rescore RUN)",
        ),
    ),
    ("retracted_held", "retracted facts held", "lower", dict(gate="retracted_held", report=True)),
    (
        "retracted_held_rate",
        "retracted-held rate",
        "lower",
        dict(
            unit="percent",
            ratio=("retracted_held", "gold_retracted"),
            interval=True,
            valid=_RATE,
            gate="retracted_held_rate",
            requires="not recorded in this run (rerun the sweep to score it)",
        ),
    ),
    (
        "forbidden_stored",
        "forbidden content stored",
        "lower",
        dict(gate="forbidden_stored", report=True),
    ),
    (
        "forbidden_stored_rate",
        "forbidden-stored rate",
        "lower",
        dict(
            unit="percent",
            ratio=("forbidden_stored", "facts"),
            interval=True,
            empty=0.0,
            valid=_RATE,
            gate="forbidden_stored_rate",
        ),
    ),
    (
        "echo_rate",
        "replies echoing the prompt",
        "lower",
        dict(
            unit="percent",
            ratio=("echo_replies", "replies"),
            interval=True,
            valid=_RATE,
            gate="echo_rate",
            report=True,
        ),
    ),
    ("echoed", "prompt echoes dropped", "lower", dict()),
    ("llm_calls", "LLM calls", "lower", dict(report=True)),
    ("calls_saved_by_debounce", "calls saved by debounce", "higher", dict(report=True)),
    ("cache_hits", "cache hits", None, dict()),
    ("model_calls", "model calls", None, dict()),
    ("simulated_calls", "simulated calls", None, dict()),
    ("added", "facts added", None, dict()),
    ("removed", "facts removed", None, dict()),
    ("evicted", "facts evicted by the cap", None, dict()),
    ("skipped_below_threshold", "facts below the threshold", None, dict()),
    ("skipped_duplicate", "duplicate facts skipped", None, dict()),
    ("prompt_tokens", "prompt tokens", None, dict()),
    ("completion_tokens", "completion tokens", None, dict()),
    (
        "tokens_per_update",
        "tokens / update",
        "lower",
        dict(unit="number", ratio=("tokens", "llm_calls"), empty=0.0, report=True),
    ),
    ("cost_usd", "cost (USD)", "lower", dict(unit="usd", report=True)),
    (
        "cost_per_retained_fact",
        "cost per retained fact (USD)",
        "lower",
        dict(unit="usd", ratio=("cost_usd", "facts")),
    ),
    (
        "op_add_precision",
        "add precision",
        "higher",
        dict(
            unit="percent",
            ratio=("op_adds_correct", "op_adds_judged"),
            interval=True,
            valid=_RATE,
            gate="op_add_precision",
            requires=_OPS,
        ),
    ),
    (
        "op_add_recall",
        "add recall",
        "higher",
        dict(
            unit="percent",
            ratio=("op_adds_correct", "op_adds_expected"),
            interval=True,
            valid=_RATE,
            gate="op_add_recall",
            requires=_OPS,
        ),
    ),
    (
        "op_add_f1",
        "add F1",
        "higher",
        dict(
            unit="percent",
            ratio=("op_add_f1_num", "op_add_f1_den"),
            interval=True,
            valid=_RATE,
            gate="op_add_f1",
            requires=_OPS,
        ),
    ),
    (
        "op_add_precision_macro",
        "add precision (macro)",
        "higher",
        dict(
            unit="percent",
            ratio=("op_adds_correct", "op_adds_judged"),
            interval=True,
            valid=_RATE,
            gate="op_add_precision_macro",
            requires=_OPS,
            average="macro",
        ),
    ),
    (
        "op_remove_precision",
        "removal precision",
        "higher",
        dict(
            unit="percent",
            ratio=("op_removals_correct", "op_removals_judged"),
            interval=True,
            valid=_RATE,
            gate="op_remove_precision",
            requires=_OPS,
        ),
    ),
    (
        "op_remove_recall",
        "removal recall",
        "higher",
        dict(
            unit="percent",
            ratio=("op_removals_correct", "op_removals_expected"),
            interval=True,
            valid=_RATE,
            gate="op_remove_recall",
            requires=_OPS,
        ),
    ),
    (
        "op_remove_f1",
        "removal F1",
        "higher",
        dict(
            unit="percent",
            ratio=("op_remove_f1_num", "op_remove_f1_den"),
            interval=True,
            valid=_RATE,
            gate="op_remove_f1",
            requires=_OPS,
        ),
    ),
    (
        "op_remove_precision_macro",
        "removal precision (macro)",
        "higher",
        dict(
            unit="percent",
            ratio=("op_removals_correct", "op_removals_judged"),
            interval=True,
            valid=_RATE,
            gate="op_remove_precision_macro",
            requires=_OPS,
            average="macro",
        ),
    ),
    (
        "op_wrong_removals",
        "wrong removals",
        "lower",
        dict(total="op_removals_wrong", gate="op_wrong_removals", requires=_OPS),
    ),
    ("op_adds_correct", "correct adds", None, dict(requires=_OPS)),
    ("op_adds_missed", "missed adds", None, dict(requires=_OPS)),
    ("op_adds_redundant", "redundant adds", None, dict(requires=_OPS)),
    ("op_adds_spurious", "spurious adds", None, dict(requires=_OPS)),
    ("op_removals_correct", "correct removals", None, dict(requires=_OPS)),
    ("op_removals_missed", "missed removals", None, dict(requires=_OPS)),
    (
        "stale_rmst",
        "sessions a retracted fact survives (restricted mean, 3 sessions)",
        "lower",
        dict(
            unit="number",
            interval=True,
            valid=(0.0, 3.0),
            gate="stale_rmst",
            requires=_OPS,
            survival=("stale_removed", "stale_at_risk", 3),
        ),
    ),
    (
        "eviction_regret",
        "eviction regret",
        "lower",
        dict(
            unit="percent",
            ratio=("gold_regret", "gold_active"),
            interval=True,
            valid=_RATE,
            gate="eviction_regret",
            requires=_OPS,
        ),
    ),
    (
        "injected_gold_coverage",
        "injected gold coverage",
        "higher",
        dict(
            unit="percent",
            ratio=("gold_injected", "gold_injectable"),
            interval=True,
            valid=_RATE,
            gate="injected_gold_coverage",
            requires="not recorded in this run (rerun the sweep to audit injection)",
        ),
    ),
    (
        "injection_tokens_mean",
        "injected tokens / session",
        None,
        dict(unit="number", ratio=("injection_tokens", "injections"), empty=0.0),
    ),
    ("injection_dropped", "facts dropped by the budget", None, dict()),
    (
        "qa_accuracy",
        "QA accuracy",
        "higher",
        dict(
            unit="percent",
            ratio=("qa_correct", "qa_answerable"),
            interval=True,
            valid=_RATE,
            gate="qa_accuracy",
            report=True,
            requires=_QA,
            primary=True,
        ),
    ),
    (
        "qa_f1",
        "QA token F1",
        "higher",
        dict(
            unit="percent",
            ratio=("qa_f1", "qa_answerable"),
            interval=True,
            valid=_RATE,
            gate="qa_f1",
            requires=_QA,
        ),
    ),
    (
        "qa_bleu1",
        "QA BLEU-1",
        "higher",
        dict(
            unit="percent",
            ratio=("qa_bleu1", "qa_answerable"),
            interval=True,
            valid=_RATE,
            gate="qa_bleu1",
            requires=_QA,
        ),
    ),
    (
        "qa_abstain_accuracy",
        "QA abstention accuracy (never said)",
        "higher",
        dict(
            unit="percent",
            ratio=("qa_abstain_correct", "qa_abstain"),
            interval=True,
            valid=_RATE,
            gate="qa_abstain_accuracy",
            requires=_QA,
        ),
    ),
    (
        "qa_adversarial_accuracy",
        "QA adversarial accuracy",
        "higher",
        dict(
            unit="percent",
            ratio=("qa_adversarial_correct", "qa_adversarial"),
            interval=True,
            valid=_RATE,
            gate="qa_adversarial_accuracy",
            requires=_QA,
        ),
    ),
    (
        "qa_procedure_step_accuracy",
        "QA procedure step-order accuracy",
        "higher",
        dict(
            unit="percent",
            ratio=("qa_procedure_steps", "qa_procedures"),
            interval=True,
            valid=_RATE,
            gate="qa_procedure_step_accuracy",
            requires=_PROCEDURES,
        ),
    ),
    (
        "qa_procedure_recall",
        "QA procedures recalled (a step named)",
        "higher",
        dict(
            unit="percent",
            ratio=("qa_procedure_recalled", "qa_procedures"),
            interval=True,
            valid=_RATE,
            gate="qa_procedure_recall",
            requires=_PROCEDURES,
        ),
    ),
    (
        "qa_judge_error_rate",
        "QA answers without a verdict",
        "lower",
        dict(
            unit="percent",
            ratio=("qa_judge_errors", "qa_questions"),
            interval=True,
            valid=_RATE,
            gate="judge_errors",
            report=True,
            requires=_QA,
        ),
    ),
    (
        "qa_answer_error_rate",
        "QA answers that failed",
        "lower",
        dict(
            unit="percent",
            ratio=("qa_answer_errors", "qa_questions"),
            interval=True,
            valid=_RATE,
            gate="answer_errors",
            requires=_QA,
        ),
    ),
    (
        "qa_read_tokens_per_question",
        "read tokens / question",
        "lower",
        dict(unit="number", ratio=("qa_read_tokens", "qa_questions"), report=True, requires=_QA),
    ),
    (
        "qa_read_latency_per_question",
        "read latency / question (s)",
        "lower",
        dict(unit="number", ratio=("qa_read_latency_s", "qa_questions"), requires=_QA),
    ),
]


def _same(a: Any, b: Any) -> bool:
    return a == b or (
        isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    )


def _declared(spec: Any) -> tuple[Any, ...]:
    fields = dataclasses.asdict(spec)
    head = fields.pop("column"), fields.pop("title"), fields.pop("direction")
    assert set(fields) == set(DEFAULTS), "a new MetricSpec field: add its default to DEFAULTS"
    return (*head, {k: v for k, v in fields.items() if not _same(v, DEFAULTS[k])})


def test_the_declared_tables_are_pinned_whole() -> None:
    counts = [(c.column, c.over, c.by, c.in_rows) for c in COUNT_SPECS]
    expected_counts = [
        (column, over, by, flag == ["rows"])
        for column, over, by, *flag in (line.split() for line in COUNTS.strip().splitlines())
    ]
    assert counts == expected_counts
    assert [_declared(spec) for spec in METRIC_SPECS] == METRICS
