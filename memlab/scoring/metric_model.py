"""What one summary metric is: a :class:`MetricSpec` says how a summary column is computed
from per-owner counts, how it is shown, which direction is better, whether it is a rate that
gets a bootstrap interval and paired tests, its valid range, and its gate threshold.

The built-in metrics and the registry of every metric are :mod:`memlab.scoring.metric_specs`'s.
This module imports neither pandas nor matplotlib.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Average", "Direction", "MetricSpec", "Unit"]

Direction = Literal["higher", "lower"]
Unit = Literal["percent", "count", "number", "usd"]
Average = Literal["micro", "macro"]

_COUNT = (0.0, math.inf)


@dataclass(frozen=True)
class MetricSpec:
    """One summary metric.

    Attributes:
        column: Summary column (and the name used by ``memlab compare`` and the gate).
        title: Display name in reports.
        direction: ``"higher"`` or ``"lower"`` is better; ``None`` for counts that are neither
            (no best-value marker, no gate).
        unit: ``percent`` (a share, shown as 12.5%), ``count``, ``number`` or ``usd``.
        ratio: Per-owner count columns ``(numerator, denominator)``: the metric is the ratio
            of their sums over owners. ``None``: the sum of the per-owner count ``total``.
        total: Per-owner count column summed (default: ``column``); only without ``ratio``.
        interval: A rate that gets ``<column>_lo``/``<column>_hi`` (bootstrap over owners)
            and is compared between configurations by the paired test. Needs ``ratio`` or
            ``survival``.
        primary: One of the few metrics that answer "is B better": the Holm family of a
            comparison (:mod:`memlab.scoring.comparing.comparison`). Every other interval metric is
            secondary: shown with its interval and labelled exploratory. A grid's
            ``primary: [...]`` overrides the set for its runs.
        average: ``micro`` (the ratio of sums over owners) or ``macro`` (the mean over owners
            of each owner's ratio, owners with a zero denominator left out): a macro rate does
            not move because some owners store more facts than others.
        survival: ``(events, at_risk, horizon)``: the restricted mean survival time up to
            ``horizon`` from per-owner count columns ``<events>_<t>`` and ``<at_risk>_<t>``
            (Kaplan-Meier, :mod:`memlab.scoring.inference.survival`), censoring at the data's end
            taken into account.
        empty: The value of a ratio whose denominator is 0 (NaN: not computable).
        valid: The range a value (and a gate threshold) can take.
        gate: Threshold name without its ``max_``/``min_`` prefix (``"parse_failure"`` gives
            ``max_parse_failure`` and ``--max-parse-failure``); ``None``: not gated.
        report: Shown in the report's metric table (every interval metric is also shown with
            its interval and paired tests).
        requires: How to get the metric when a run lacks its counts (then the summary leaves
            it out); "" for metrics every run has.
    """

    column: str
    title: str
    direction: Direction | None
    unit: Unit = "count"
    ratio: tuple[str, str] | None = None
    total: str | None = None
    interval: bool = False
    empty: float = math.nan
    valid: tuple[float, float] = _COUNT
    gate: str | None = None
    report: bool = False
    requires: str = ""
    primary: bool = False
    average: Average = "micro"
    survival: tuple[str, str, int] | None = None

    def __post_init__(self) -> None:
        # Declaration mistakes fail at import, not in a report months later.
        if self.interval and self.ratio is None and self.survival is None:
            raise ValueError(f"metric {self.column}: an interval needs a ratio or a survival")
        if self.primary and not self.interval:
            raise ValueError(f"metric {self.column}: a primary metric needs an interval")
        if self.average == "macro" and self.ratio is None:
            raise ValueError(f"metric {self.column}: a macro average needs a ratio")
        if self.ratio is not None and self.total is not None:
            raise ValueError(f"metric {self.column}: give ratio or total, not both")
        if self.gate is not None and self.direction is None:
            raise ValueError(f"metric {self.column}: a gated metric needs a direction")

    @property
    def higher_is_better(self) -> bool:
        """True when larger values are better."""
        return self.direction == "higher"

    @property
    def ranked(self) -> bool:
        """False for counts that are not better or worse in themselves (no best marker)."""
        return self.direction is not None

    @property
    def percent(self) -> bool:
        """True for shares shown as percentages."""
        return self.unit == "percent"

    @property
    def sources(self) -> tuple[str, ...]:
        """The per-owner count columns the metric is computed from."""
        if self.survival is not None:
            events, at_risk, horizon = self.survival
            return tuple(f"{name}_{t}" for name in (events, at_risk) for t in range(horizon))
        return self.ratio if self.ratio is not None else (self.total or self.column,)

    @property
    def bound(self) -> Literal["max", "min"]:
        """``max`` when lower is better (a gate sets a ceiling), else ``min``."""
        return "max" if self.direction == "lower" else "min"

    @property
    def threshold(self) -> str | None:
        """The gate threshold's name (``max_parse_failure``), or None when not gated."""
        return f"{self.bound}_{self.gate}" if self.gate else None

    @property
    def flag(self) -> str | None:
        """The ``memlab gate`` flag (``--max-parse-failure``), or None when not gated."""
        return f"--{self.threshold.replace('_', '-')}" if self.threshold else None

    def gate_help(self) -> str:
        """Help text of the gate flag."""
        low, high = self.valid
        what = "highest" if self.bound == "max" else "lowest"
        span = f"{low:g}-{high:g}" if math.isfinite(high) else f">= {low:g}"
        hint = f"; {self.requires}" if self.requires else ""
        return f"{what} allowed {self.title} ({span}){hint}"

    def fmt(self, value: Any) -> str:
        """Format a value for display ("-" for missing)."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "-"
        if self.unit == "percent":
            return f"{value:.1%}"
        if isinstance(value, float) and not float(value).is_integer():
            return f"{value:.4g}"
        return f"{int(value)}"

    def fmt_delta(self, delta: float) -> str:
        """A signed difference: percentage points for rates (``+6.2 pts``), else the unit."""
        if math.isnan(delta):
            return "-"
        if self.unit == "percent":
            return f"{delta * 100:+.1f} pts"
        return f"{delta:+.4g}"

    def fmt_bounds(self, lo: float, hi: float, *, points: bool = False) -> str:
        """``[lo, hi]``; with ``points``, a delta of a rate in percentage points."""
        if math.isnan(lo) or math.isnan(hi):
            return "[-]"
        if self.unit == "percent":
            if points:
                return f"[{lo * 100:.1f}, {hi * 100:.1f}]"
            return f"[{lo:.1%}, {hi:.1%}]"
        return f"[{lo:.4g}, {hi:.4g}]"
