"""How ``memlab compare`` prints a comparison table: narrow by default, wide on request.

The narrow view fits :data:`WIDTH` columns: one block per configuration under a heading line,
one row per metric named by its id (what ``--metrics`` takes; a primary one marked ``*``), the
interval without its level and the p-value (``--wide`` shows both), the verdict without
"(exploratory)" (an unmarked row is exploratory), or ``inconclusive: <short reasons>`` for a
metric an inconclusive reason concerns. Cells too long for the width are cut with an ellipsis,
never wrapped, so a row stays one line. The wide view is
:func:`memlab.scoring.comparing.comparison.comparison_text` with the same verdicts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from memlab.scoring.comparing.comparison import comparison_text, delta_bounds, describe_mde
from memlab.scoring.comparing.inconclusive import Reason, shown_verdicts
from memlab.scoring.inference.coverage import too_few_text
from memlab.scoring.metric_specs import metric_spec

__all__ = [
    "PRIMARY_MARK",
    "PRIMARY_NOTE",
    "WIDTH",
    "fit",
    "narrow_rows",
    "narrow_text",
    "wide_text",
]

WIDTH = 120
"""The widest line the narrow view prints."""

PRIMARY_MARK = " *"
"""Marks a primary metric's row (the Holm family) in the narrow view."""

PRIMARY_NOTE = "* primary metric (Holm family); the other rows are exploratory"
"""The line under the narrow view that says what the mark means."""

_ELLIPSIS = "…"
_EXPLORATORY = " (exploratory)"


def _delta(row: pd.Series) -> str:
    """``-17.0 pts [-24.7, -9.6]``: the delta and its interval at the verdict's level."""
    spec = metric_spec(str(row["metric"]))
    delta = float(row["delta"])
    if math.isnan(delta) or str(row["verdict"]) == "no change":
        return "-"
    bounds = delta_bounds(row)
    # The narrow view has no room for the words: "[-]", and a note under the table says why.
    return f"{spec.fmt_delta(delta)} {'[-]' if bounds.startswith('(') else bounds}"


def _mde(row: pd.Series) -> str:
    """The MDE; ``none`` when no test is possible (the reason lines say with how many owners)."""
    return "none" if math.isinf(float(row["mde"])) else describe_mde(row)


def narrow_rows(table: pd.DataFrame, reasons: Sequence[Reason] = ()) -> pd.DataFrame:
    """The columns a reader needs first, one row per (configuration, metric) of a
    :func:`memlab.scoring.comparing.comparison.compare` table: ``configuration``, ``metric`` (its
    id, marked :data:`PRIMARY_MARK` when primary; the others are exploratory), ``baseline``,
    ``value``, ``delta [CI]``, ``verdict`` (``inconclusive: <short reasons>`` when one of
    ``reasons`` concerns the metric), ``MDE`` and ``owners +/-`` (owners better / worse)."""
    rows = []
    verdicts = shown_verdicts(table, list(table["verdict"]), reasons) if not table.empty else []
    for (_, row), verdict in zip(table.iterrows(), verdicts, strict=True):
        spec = metric_spec(str(row["metric"]))
        rows.append(
            {
                "configuration": f"{row['run']}: {row['lane']}",
                "metric": spec.column + (PRIMARY_MARK if row["role"] == "primary" else ""),
                "baseline": spec.fmt(row["baseline"]),
                "value": spec.fmt(row["value"]),
                "delta [CI]": _delta(row),
                "verdict": verdict.removesuffix(_EXPLORATORY),
                "MDE": _mde(row),
                "owners +/-": f"{row['owners_better']}/{row['owners_worse']}",
            }
        )
    return pd.DataFrame(rows)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + _ELLIPSIS


def _render(frame: pd.DataFrame, left: Sequence[str]) -> list[str]:
    """``frame`` as aligned text lines, the ``left`` columns left-justified (pandas
    right-justifies every cell)."""
    shown = frame.copy()
    for column in left:
        size = max(len(column), *(len(v) for v in shown[column]))
        shown[column] = [v.ljust(size) for v in shown[column]]
        shown = shown.rename(columns={column: column.ljust(size)})
    return str(shown.to_string(index=False)).splitlines()


def fit(
    frame: pd.DataFrame,
    width: int = WIDTH,
    *,
    shrink: Sequence[str] = (),
    left: Sequence[str] = (),
) -> list[str]:
    """``frame`` as text lines of at most ``width`` characters: the ``shrink`` columns, in
    order, are cut (with an ellipsis) as far as needed, down to 8 characters each; any line
    still too wide is cut at the end. The ``left`` columns are left-justified."""
    frame = frame.astype(str)
    for column in shrink:
        over = max(len(line) for line in _render(frame, left)) - width
        if over <= 0:
            break
        longest = max(len(column), *(len(v) for v in frame[column]))
        keep = max(8, longest - over)
        frame[column] = [_cut(v, keep) for v in frame[column]]
    return [_cut(line, width) for line in _render(frame, left)]


def narrow_text(table: pd.DataFrame, width: int = WIDTH, reasons: Sequence[Reason] = ()) -> str:
    """The narrow view: under a heading per configuration, its metrics' rows (a verdict a
    reason concerns said inconclusive); every line at most ``width`` characters. Columns are
    aligned across the blocks."""
    rows = narrow_rows(table, reasons)
    if rows.empty:
        return ""
    configurations = rows.pop("configuration")
    lines = fit(rows, width, shrink=["verdict", "metric"], left=["metric"])
    header, body = lines[0], lines[1:]
    out: list[str] = []
    for index, configuration in enumerate(configurations):
        if index == 0 or configuration != configurations.iloc[index - 1]:
            out += [*([""] if out else []), _cut(f"{configuration}:", width), header]
        out.append(body[index])
    few = sorted(
        {
            int(row["owners"])
            for _, row in table.iterrows()
            if _delta(row).endswith("[-]") and delta_bounds(row).startswith("(")
        }
    )
    notes = [f"[-]: {too_few_text(n)}" for n in few]
    return "\n".join([*out, PRIMARY_NOTE, *notes])


def wide_text(table: pd.DataFrame, reasons: Sequence[Reason] = ()) -> str:
    """The full-width view: every column of
    :func:`memlab.scoring.comparing.comparison.comparison_text`, a verdict a reason concerns
    said inconclusive as in the narrow view."""
    text = comparison_text(table)
    if not text.empty:
        text["verdict"] = shown_verdicts(table, list(table["verdict"]), reasons)
    return str(text.to_string(index=False))
