"""Every per-owner count, declared once.

A :class:`CountSpec` declares one per-owner count: its column, how an owner's value is formed
(the memory after its last session, a sum over its sessions, its LLM calls, or derived from
other counts) and the step that computes it. The session rows' types
(:class:`memlab.runs.records.SessionRow`), :func:`memlab.scoring.metrics.owner_counts` and
the metric specs (:mod:`memlab.scoring.metric_specs`) all read :data:`COUNT_SPECS`; a new
count is one entry here, computed where its step does.

This module imports neither pandas nor matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["COUNT_SPECS", "STALE_HORIZON", "CountSpec", "Over", "count_columns"]

Over = Literal["last_session", "sessions", "calls", "derived"]

STALE_HORIZON = 3
"""Session ends over which stale-fact survival is restricted: the retracting session's and the
next two (:data:`~memlab.scoring.metric_specs.METRIC_SPECS` ``stale_rmst``; counts
``stale_removed_<t>`` and ``stale_at_risk_<t>`` for ``t`` below it)."""


@dataclass(frozen=True)
class CountSpec:
    """One per-owner count (a column of :func:`memlab.scoring.metrics.owner_counts`).

    Attributes:
        column: The count's column in the session rows and the per-owner counts.
        over: How an owner's value is formed: from the memory after its ``last_session``, as
            the sum over its ``sessions``, from its LLM ``calls``, or ``derived`` from other
            counts.
        by: The step that computes it: ``state`` (memory vs labels, :mod:`~memlab.scoring.
            metrics`), ``merge`` (the updates' bookkeeping), ``replay``, ``operations``
            (:mod:`~memlab.scoring.operations`), ``injection``
            (:mod:`~memlab.scoring.qa.injection_audit`), ``qa`` (:mod:`~memlab.scoring.
            qa_metrics`), ``embeddings``, ``calls`` or ``owner``.
        in_rows: Every session row has it (``sessions.jsonl`` types it as an integer); the
            others only appear when measured (embeddings, operations of newer runs).
    """

    column: str
    over: Over
    by: str
    in_rows: bool = False


def _counts(over: Over, by: str, columns: str, *, in_rows: bool = False) -> tuple[CountSpec, ...]:
    return tuple(CountSpec(column, over, by, in_rows) for column in columns.split())


COUNT_SPECS: tuple[CountSpec, ...] = (
    *_counts(
        "last_session",
        "state",
        "facts gold_active gold_covered stored_precise retracted_held gold_retracted "
        "forbidden_stored dup_exact dup_normalized dup_near",
        in_rows=True,
    ),
    CountSpec("dup_embedding", "last_session", "embeddings"),
    # The memory's size in cl100k tokens (memlab.scoring.consolidation.memory_tokens).
    CountSpec("memory_tokens", "last_session", "state"),
    CountSpec("gold_regret", "last_session", "operations"),
    CountSpec("agent_runs", "sessions", "replay", in_rows=True),
    *_counts(
        "sessions",
        "merge",
        "added removed evicted skipped_below_threshold skipped_duplicate",
        in_rows=True,
    ),
    # Proposed facts and summaries that echo the prompt template's own text, dropped before
    # the merge (memlab.core.jsondoc.echo); absent from calls recorded before it was counted (0).
    CountSpec("echoed", "sessions", "merge", in_rows=True),
    *_counts(
        "sessions",
        "operations",
        "op_adds op_adds_expected op_adds_correct op_adds_missed op_adds_redundant "
        "op_adds_spurious op_removals op_removals_expected op_removals_correct "
        "op_removals_missed op_removals_wrong gold_evicted gold_below_threshold stale_facts "
        "stale_sessions stale_days "
        + " ".join(f"stale_removed_{t} stale_at_risk_{t}" for t in range(STALE_HORIZON)),
    ),
    *_counts(
        "sessions",
        "injection",
        "injections injection_tokens injection_facts injection_dropped gold_injected "
        "gold_injectable",
    ),
    # Memory QA: the questions asked after each session, answered from the lane's memory
    # and graded by one judge (memlab.scoring.qa.qa_metrics.qa_session_counts).
    *_counts(
        "sessions",
        "qa",
        "qa_questions qa_answerable qa_correct qa_f1 qa_bleu1 qa_abstain qa_abstain_correct "
        "qa_adversarial qa_adversarial_correct qa_read_tokens qa_read_latency_s qa_judge_errors "
        "qa_answer_errors",
    ),
    # Procedure questions answered from the lane's memory (not judged): how many, the sum of
    # their step-order accuracies and how many replies named a step of the procedure
    # (memlab.qa.procedure_scores); in the rows only when the QA step asked some.
    *_counts("sessions", "qa", "qa_procedures qa_procedure_steps qa_procedure_recalled"),
    # llm_calls (records that asked a model) is also in every session row: that session's.
    CountSpec("llm_calls", "calls", "calls", in_rows=True),
    *_counts(
        "calls",
        "calls",
        "replies parse_failures backend_errors prompt_tokens completion_tokens tokens cost_usd "
        "cache_hits model_calls simulated_calls",
    ),
    # The updates the queue handed to the memory (memlab.memory.strategy.is_queued_update):
    # what calls_saved_by_debounce subtracts from agent_runs.
    CountSpec("queued_updates", "calls", "calls"),
    # Replies with at least one echo of the prompt template (what echo_rate counts).
    CountSpec("echo_replies", "calls", "calls"),
    *_counts("derived", "owner", "owners sessions calls_saved_by_debounce"),
    *_counts(
        "derived",
        "operations",
        "op_adds_judged op_removals_judged op_add_f1_num op_add_f1_den op_remove_f1_num "
        "op_remove_f1_den",
    ),
)
"""Every per-owner count, in the column order of the per-owner counts."""


def count_columns(*, over: Over | None = None, by: str | None = None) -> tuple[str, ...]:
    """The declared count columns formed ``over`` that way and computed ``by`` that step."""
    return tuple(
        c.column
        for c in COUNT_SPECS
        if (over is None or c.over == over) and (by is None or c.by == by)
    )
