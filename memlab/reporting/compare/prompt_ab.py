"""Is the candidate prompt better? One A/B: both prompts replayed, compared, one verdict each.

:func:`ab` replays a dataset twice under one configuration, once with the baseline prompt and
once with the candidate (two runs, ``NAME-base`` and ``NAME-candidate``, made by
:func:`memlab.sweeps.driver.sweep` with its cache and resume), compares them paired on the
owners they share (:func:`memlab.scoring.comparing.comparison.compare`: the write side, and memory
QA when asked), and gives one :class:`MetricVerdict` per primary metric: ``better``, ``worse``, ``no
difference`` larger than the minimum detectable effect (stated), or ``inconclusive`` with every
reason :mod:`memlab.scoring.comparing.inconclusive` finds that concerns it (the backend ignores
prompts, the model echoes the prompt, too few owners for the tolerance with the owners that would
detect it, unreadable judge verdicts, replies failing to parse on both sides, a metric one side
lacks). ``memlab ab`` prints :meth:`ABResult.lines`.
"""

from __future__ import annotations

import logging
import os
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from memlab.backends.caching.cache import CacheMode
from memlab.backends.registry import SIMULATED_MARK, is_simulated
from memlab.core.base.safe_names import encode_component, safe_component
from memlab.core.prompt_template import PromptVariant
from memlab.core.prompts import PromptRegistry, resolve_prompt
from memlab.grids.grid import Grid
from memlab.grids.qa_spec import QASpec
from memlab.matching.base import FactMatcher
from memlab.reporting.compare.gate import DEFAULT_TOLERANCE, tolerances_for
from memlab.reporting.compare.trial import sweep_prompt
from memlab.runs.run import Run
from memlab.scoring.comparing.comparison import compare, describe, describe_mde
from memlab.scoring.comparing.inconclusive import (
    Reason,
    Undetectable,
    inconclusive_reasons,
    undetectable,
)
from memlab.scoring.inference.stats import StatOptions
from memlab.scoring.metric_specs import metric_spec, primary_metrics
from memlab.sweeps.driver import sweep

__all__ = ["OUTCOMES", "WIDTH", "ABResult", "MetricVerdict", "ab", "judge_ab", "verdicts_of"]

logger = logging.getLogger(__name__)

WIDTH = 120
"""Columns :meth:`ABResult.lines` wraps its lines to."""

OUTCOMES = ("better", "worse", "no difference", "not applicable", "inconclusive")
"""What a :class:`MetricVerdict` can say."""

PromptSpec = str | os.PathLike[str] | PromptVariant


@dataclass(frozen=True)
class MetricVerdict:
    """The A/B's answer for one primary metric.

    Attributes:
        metric: The metric's column (``recall``).
        title: Its title (``recall``, ``QA accuracy``).
        outcome: One of :data:`OUTCOMES`.
        baseline: The baseline's value, formatted (``67.0%``).
        candidate: The candidate's value, formatted.
        detail: What decided it: the delta with its interval and p-value, the MDE, or each
            reason the comparison cannot tell.
        reasons: The inconclusive reasons that concern this metric.
    """

    metric: str
    title: str
    outcome: str
    baseline: str
    candidate: str
    detail: str
    reasons: tuple[Reason, ...] = ()

    @property
    def text(self) -> str:
        """``better: +17.0 pts [8.7, 25.6] (95% CI), p = 0.005 ...``,
        ``no difference larger than the MDE (4.8 pts): no owner changed``,
        ``inconclusive: the backend ignores prompts; ...``."""
        if self.outcome == "no difference":
            return self.detail
        return f"{self.outcome}: {self.detail}" if self.detail else self.outcome

    def __str__(self) -> str:
        return f"{self.title}: {self.baseline} -> {self.candidate}: {self.text}"


@dataclass
class ABResult:
    """The outcome of :func:`ab`.

    Attributes:
        baseline: The run of the baseline prompt.
        candidate: The run of the candidate prompt.
        base_prompt: The baseline prompt as replayed.
        candidate_prompt: The candidate prompt as replayed.
        table: The paired comparison (:func:`memlab.scoring.comparing.comparison.compare`).
        reasons: Every reason the comparison cannot say whether the candidate is better.
        tolerances: The difference each primary metric must be able to detect, by metric.
        verdicts: One per primary metric the runs have, in the family's order.
    """

    baseline: Run
    candidate: Run
    base_prompt: PromptVariant
    candidate_prompt: PromptVariant
    table: pd.DataFrame = field(repr=False)
    reasons: list[Reason] = field(default_factory=list)
    tolerances: dict[str, float] = field(default_factory=dict)
    verdicts: list[MetricVerdict] = field(default_factory=list)

    @property
    def inconclusive(self) -> bool:
        """Whether any primary metric's verdict is inconclusive."""
        return any(v.outcome == "inconclusive" for v in self.verdicts)

    @property
    def simulated(self) -> bool:
        """Whether the runs replay the simulated model (a test instrument)."""
        lane = next(iter(self.baseline.lanes.values()))
        return is_simulated(lane.backend)

    def header(self) -> list[str]:
        """What was compared: prompts, dataset, owners, backend, memory QA, tolerance, runs."""
        lane = next(iter(self.baseline.lanes.values()))
        owners = int(self.table["owners"].max()) if not self.table.empty else 0
        label = f"{SIMULATED_MARK} " if self.simulated else ""
        qa = self.baseline.grid.qa
        answered = (
            f"memory QA answered by {qa.answer_backend}" if qa is not None else "no memory QA"
        )
        sizes = {
            metric_spec(m).title: metric_spec(m).fmt_delta(size).lstrip("+")
            for m, size in self.tolerances.items()
        }
        every = {v.metric for v in self.verdicts} <= set(self.tolerances)
        if every and len(set(sizes.values())) == 1:
            tolerance = f"tolerance {next(iter(sizes.values()))}"
        else:
            tolerance = "tolerance " + (", ".join(f"{m} {s}" for m, s in sizes.items()) or "none")
        return [
            f"{label}A/B on {self.baseline.grid.dataset}: {self.base_prompt.name} "
            f"({self.base_prompt.sha256[:8]}) -> {self.candidate_prompt.name} "
            f"({self.candidate_prompt.sha256[:8]}), {owners} owners paired",
            f"backend {lane.backend}; {answered}; {tolerance}",
            f"baseline run:  {self.baseline.path}",
            f"candidate run: {self.candidate.path}",
        ]

    def lines(self, width: int = WIDTH) -> list[str]:
        """The A/B as text, each line at most ``width`` columns (the runs' lines excepted, and
        the backend's when it names a file or URL: where a line breaks must not depend on
        where files are): what was compared, every inconclusive reason in full, then one
        verdict per primary metric (the last lines)."""
        title, backend, base_run, candidate_run = self.header()
        body = []
        if self.reasons:
            body += ["", "inconclusive because:"]
            body += [f"- {reason.text}" for reason in self.reasons]
        body += ["", "verdict per primary metric (baseline -> candidate):"]
        name_width = max((len(v.title) for v in self.verdicts), default=0)
        for found in self.verdicts:
            body.append(f"  {found.title:<{name_width}}  {found.baseline} -> {found.candidate}: "
                        f"{found.text}")  # fmt: skip
        if not self.verdicts:
            body.append("  no primary metric in both runs: nothing to compare")
        head = _wrapped(title, width) + ([backend] if "/" in backend else _wrapped(backend, width))
        return [
            *head,
            base_run,
            candidate_run,
            *(p for line in body for p in _wrapped(line, width)),
        ]

    @property
    def text(self) -> str:
        """:meth:`lines` joined."""
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return (
            f"ABResult({self.base_prompt.name!r} -> {self.candidate_prompt.name!r}: "
            + ", ".join(f"{v.metric} {v.outcome}" for v in self.verdicts)
            + ")"
        )


def _wrapped(line: str, width: int) -> list[str]:
    """``line`` wrapped to ``width``, continuation lines indented under its text."""
    if len(line) <= width:
        return [line]
    body = line.lstrip(" -")
    indent = " " * (len(line) - len(body) + 2)
    return textwrap.wrap(
        line, width, subsequent_indent=indent, break_long_words=True, break_on_hyphens=False
    )


def _said(reason: Reason, metric: str, found: Mapping[str, Undetectable]) -> str:
    """A reason in a metric's verdict: its few words, or for a tolerance the comparison cannot
    show it detects, the finding in full (with the owners that would detect it)."""
    size = found.get(metric)
    if size is None or reason.kind != size.kind or reason.metrics != (metric,):
        return reason.short
    return f"too few owners: {size.what}" if size.kind == "too few owners" else size.what


def _metric_verdict(
    row: pd.Series, reasons: Sequence[Reason], found: Mapping[str, Undetectable]
) -> MetricVerdict:
    """The verdict of one primary row (``found``: the tolerances it cannot show it detects)."""
    spec = metric_spec(str(row["metric"]))
    base, value = spec.fmt(row["baseline"]), spec.fmt(row["value"])
    mine = tuple(r for r in reasons if r.concerns(str(row["lane"]), spec.column))
    verdict = str(row["verdict"])
    if verdict == "not applicable":  # measured on neither side: nothing to be unsure of
        detail = "undefined on both sides"
        return MetricVerdict(spec.column, spec.title, verdict, base, value, detail)
    if mine:
        detail = "; ".join(dict.fromkeys(_said(r, spec.column, found) for r in mine))
        return MetricVerdict(spec.column, spec.title, "inconclusive", base, value, detail, mine)
    if verdict in ("better", "worse"):
        return MetricVerdict(spec.column, spec.title, verdict, base, value, describe(row))
    mde = describe_mde(row)
    if mde == "-":  # every owner has the metric's best value on both sides
        detail = "no difference: every owner has the same value on both sides"
    else:
        seen = "no owner changed" if verdict == "no change" else describe(row)
        detail = f"no difference larger than the MDE ({mde}): {seen}"
    return MetricVerdict(spec.column, spec.title, "no difference", base, value, detail)


def verdicts_of(
    table: pd.DataFrame,
    reasons: Sequence[Reason],
    tolerances: Mapping[str, float],
    *,
    power: float = 0.80,
) -> list[MetricVerdict]:
    """One :class:`MetricVerdict` per primary row of ``table`` (a comparison of one pair)."""
    found = {u.metric: u for u in undetectable(table, tolerances, power=power)}
    primary = table[table["role"] == "primary"]
    return [_metric_verdict(row, reasons, found) for _, row in primary.iterrows()]


def _resolved(spec: PromptSpec, registry: PromptRegistry, what: str) -> PromptVariant:
    """A prompt the user named: a variant, a prompt file, or a name ``registry`` knows."""
    variant = resolve_prompt(spec, registry, name=what)
    logger.debug("%s prompt: %s (%s)", what, variant.name, variant.sha256[:8])
    return variant


def _qa_spec(qa: QASpec | Mapping[str, Any] | bool | None, backend: str) -> QASpec | None:
    """The QA settings: ``True`` asks with the defaults, answered and judged by ``backend``."""
    if qa is None or qa is False:
        return None
    if isinstance(qa, QASpec):
        return qa
    settings = {} if qa is True else dict(qa)
    settings.setdefault("answer_backend", backend)
    return QASpec.model_validate(settings)


def _side(
    name: str,
    prompt: PromptVariant,
    common: Mapping[str, Any],
    settings: Mapping[str, Any],
) -> tuple[Grid, dict[str, str] | None, PromptVariant]:
    """The one-lane grid of one side, the prompt it needs besides the built-ins, the prompt."""
    replayed, extra = sweep_prompt(prompt)
    grid = Grid.from_mapping(
        {"name": name, **common, "base": {**settings, "prompt": replayed.name}},
        source=f"A/B side {name}",
    )
    return grid, extra, replayed


def ab(
    base: PromptSpec,
    candidate: PromptSpec,
    *,
    backend: str,
    dataset: str | Path = "personas",
    settings: Mapping[str, Any] | None = None,
    owners: Sequence[str] | None = None,
    max_owners: int | None = None,
    max_sessions: int | None = None,
    qa: QASpec | Mapping[str, Any] | bool | None = None,
    tolerance: float | Mapping[str, float] | None = DEFAULT_TOLERANCE,
    prompts: Sequence[str | os.PathLike[str]] = (),
    runs_dir: str | Path = "runs",
    name: str | None = None,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    max_workers: int = 4,
    progress: bool = True,
    matcher: FactMatcher | None = None,
    options: StatOptions | None = None,
    resume: bool = True,
    max_judge_errors: float = 0.0,
) -> ABResult:
    """Replay ``dataset`` under ``base`` and under ``candidate`` and say which prompt is better.

    Args:
        base, candidate: The prompts: a name (a built-in, a plugin's, or one defined in
            ``prompts``), a prompt file, a template string or a variant.
        backend: The backend spec both sides replay (``local:smollm2``, ``sim:attentive``).
        dataset: A bundled dataset name or a JSONL path.
        settings: Other lane settings both sides share (``output_mode``, ``max_tokens``...).
        owners, max_owners, max_sessions: Which owners and sessions to replay (as a grid's).
        qa: Memory QA after each replay: ``True`` (answered and judged by ``backend``), QA
            settings (:class:`memlab.grids.qa_spec.QASpec` or its fields), or ``None``.
        tolerance: The smallest difference each primary metric's verdict must be able to see
            (a fraction for every rate, or ``{metric: size}``); a metric that cannot show it
            would detect it is inconclusive, naming the owners that would. ``None``: only "no
            test possible" is checked of the owners' number.
        prompts: Prompt files or directories whose variants ``base`` and ``candidate`` may name.
        runs_dir, name: The runs go to ``runs_dir/NAME-base`` and ``runs_dir/NAME-candidate``
            (default name ``ab-BASE-vs-CANDIDATE``); existing runs are resumed as by
            :func:`memlab.sweep` (unchanged replays kept).
        cache_dir, cache_mode, max_workers, progress, matcher, resume, max_judge_errors: As
            for :func:`memlab.sweep`.
        options: Resamples, seed, alpha and power of the comparison (default: the run's).

    Raises:
        MemlabError: An unknown prompt or dataset, invalid settings or QA settings, an
            incomplete replay (as :func:`memlab.sweep`).
    """
    registry = PromptRegistry()
    for path in prompts:
        registry.load_path(path, replace=True)
    before = _resolved(base, registry, "base")
    after = _resolved(candidate, registry, "candidate")
    name = safe_component(name, "A/B name") if name else None
    stem = name or encode_component(f"ab-{before.name}-vs-{after.name}")
    qa_spec = _qa_spec(qa, backend)
    common: dict[str, Any] = {
        "dataset": str(dataset),
        "owners": list(owners) if owners else None,
        "max_owners": max_owners,
        "max_sessions": max_sessions,
        **({"qa": qa_spec.model_dump()} if qa_spec is not None else {}),
    }
    lane = {**(settings or {}), "backend": backend}
    runs, replayed = [], []
    for side, prompt in (("base", before), ("candidate", after)):
        grid, extra, variant = _side(f"{stem}-{side}", prompt, common, lane)
        replayed.append(variant)
        runs.append(
            sweep(
                grid.dataset,
                grid,
                runs_dir=runs_dir,
                prompts=extra,
                cache_dir=cache_dir,
                cache_mode=cache_mode,
                max_workers=max_workers,
                progress=progress,
                matcher=matcher,
                resume=resume,
                max_judge_errors=max_judge_errors,
            )
        )
    return judge_ab(
        runs[0], runs[1], replayed[0], replayed[1], tolerance=tolerance, options=options
    )


def judge_ab(
    baseline: Run,
    candidate: Run,
    base_prompt: PromptVariant,
    candidate_prompt: PromptVariant,
    *,
    tolerance: float | Mapping[str, float] | None = DEFAULT_TOLERANCE,
    options: StatOptions | None = None,
) -> ABResult:
    """Compare two one-lane runs paired on their owners: the verdicts of :func:`ab`."""
    options = options or baseline.stats
    table = compare(baseline, candidate, options=options)
    family = [m for m in primary_metrics(baseline.primary) if m in set(table["metric"])]
    tolerances = tolerances_for(tolerance, family)
    reasons = inconclusive_reasons(table, tolerances=tolerances, power=options.power)
    verdicts = verdicts_of(table, reasons, tolerances, power=options.power)
    return ABResult(
        baseline, candidate, base_prompt, candidate_prompt, table, reasons, tolerances, verdicts
    )
