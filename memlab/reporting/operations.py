"""The reports' memory-operations section: what each update did, and what reached the agent.

Two tables per (run, lane) with deltas against the baseline (the first row): the operations
(:data:`~memlab.reporting.tables.OPERATION_METRICS`) and the memory they leave (stale
survival, eviction regret, injection audit: :data:`~memlab.reporting.tables.MEMORY_METRICS`).
Their intervals and paired tests are in the statistics section. A run whose grid forks says
so: its metrics cover the sessions from the fork on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

import pandas as pd

from memlab.reporting.markdown import md_escape
from memlab.reporting.tables import (
    MEMORY_METRICS,
    OPERATION_METRICS,
    memory_table,
    metric_table_html,
    metric_table_markdown,
    operations_table,
)
from memlab.runs.run import Run
from memlab.scoring.metric_model import MetricSpec
from memlab.scoring.metric_specs import metric_spec
from memlab.sweeps.fork import describe_fork

__all__ = ["OperationsSection", "operations_section", "section_html", "section_markdown"]

INTRO = (
    "Each session's update scored as operations against the labels: ADD expected for each "
    "gold fact the session reveals (and memory lacks), REMOVE for each retracted fact memory "
    "still holds (a correction is both). Precision = correct / (correct + spurious + "
    "redundant adds, or wrong removals); F1 = their harmonic mean with recall. Stale "
    "survival: sessions a retracted fact stays held. Eviction regret: share of active gold "
    "facts lost to max_facts or the confidence threshold. Injected coverage: share of active "
    "gold facts in what the next session's agent receives under the lane's budget and policy."
)


@dataclass(frozen=True)
class OperationsSection:
    """What the section shows."""

    operations: pd.DataFrame
    """:func:`~memlab.reporting.tables.operations_table` of the runs."""
    memory: pd.DataFrame
    """:func:`~memlab.reporting.tables.memory_table` of the runs."""
    notes: list[str] = field(default_factory=list)


def operations_section(runs: Sequence[Run]) -> OperationsSection | None:
    """The section for ``runs``; ``None`` when no run scored operations (an older run)."""
    operations, memory = operations_table(runs), memory_table(runs)
    if not _specs(operations):
        return None
    notes = [f"{run.name}: {describe_fork(run.grid.fork)}" for run in runs if run.grid.fork]
    return OperationsSection(operations, memory, notes)


def _specs(table: pd.DataFrame) -> list[MetricSpec]:
    """The section's metrics that ``table`` has."""
    names = (*OPERATION_METRICS, *MEMORY_METRICS)
    return [metric_spec(name) for name in names if name in table.columns]


def section_markdown(section: OperationsSection | None) -> list[str]:
    """Markdown lines of the section (none without one)."""
    if section is None:
        return []
    lines = ["## Memory operations", "", md_escape(INTRO), ""]
    lines += [f"{md_escape(note)}  " for note in section.notes]
    for table in (section.operations, section.memory):
        lines += ["", *metric_table_markdown(table, _specs(table))]
    return [*lines, "", "Deltas are against the first row; ★ marks the best value.", ""]


def section_html(section: OperationsSection | None) -> list[str]:
    """HTML parts of the section under its heading (none without one)."""
    if section is None:
        return []
    parts = [f"<p class='muted'>{escape(INTRO)}</p>"]
    parts += [f"<p><b>{escape(note)}</b></p>" for note in section.notes]
    tables = (section.operations, section.memory)
    parts += [metric_table_html(table, _specs(table)) for table in tables]
    return parts
