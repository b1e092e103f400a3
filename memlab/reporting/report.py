"""Comparison reports: a self-contained ``index.html`` and a ``summary.md``.

The HTML has no external assets: charts are embedded PNG data URIs and the style sheet is
inline. Every piece of text that comes from a dataset, a model or a config is HTML-escaped.

Its first screen answers (:mod:`memlab.reporting.compare.verdict`): what was compared, the
significant differences against each baseline, the biggest prompt change. The metric tables and the
charts follow (of several runs: one chart of each kind with the runs overlaid,
:mod:`memlab.reporting.figures.overlay`); everything else is folded in ``<details>``. Real and
simulated lanes are never in one table (:mod:`memlab.reporting.groups`).

:func:`build_report` gathers what the report says (the tables, the sections, the notes on how
each run was measured, the fact-level diff of the most informative pair) and writes both files;
:mod:`memlab.reporting.report_render` renders them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from html import escape
from pathlib import Path

import pandas as pd

from memlab.backends.registry import SIMULATED_MARK, is_simulated
from memlab.core.base.atomic import atomic_write_text
from memlab.core.jsondoc.document import utc_iso
from memlab.core.jsondoc.similarity import normalize_text
from memlab.matching.calibration import calibration_of
from memlab.matching.matcher_audit import AuditError, read_sheet
from memlab.postrun.audit import sheet_path
from memlab.reporting.echoes import echo_notes
from memlab.reporting.figures.memory_time import memory_time_section
from memlab.reporting.forgetting_section import forgetting_section
from memlab.reporting.groups import lane_groups
from memlab.reporting.markdown import md_escape
from memlab.reporting.operations import operations_section
from memlab.reporting.qa.qa_section import qa_error_notes, qa_section, robust_inconclusive
from memlab.reporting.report_render import ReportContent, render_html, render_markdown
from memlab.reporting.statistics import statistics_section
from memlab.reporting.tables import compare_table, config_table, fact_diff, worst_failures
from memlab.runs.run import Run

__all__ = [
    "ReportPaths",
    "build_report",
    "simulated_note",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReportPaths:
    """Files written by :func:`build_report`."""

    html: Path
    markdown: Path


def _measure_notes(runs: Sequence[Run]) -> list[str]:
    """How each run measured its optional metrics (so differing settings are visible)."""
    notes = []
    for run in runs:
        notes.extend(_matcher_notes(run))
        measure = run.environment.get("embedding_duplicates")
        if measure:
            notes.append(f"duplicate rate (embeddings) in {run.name}: {measure}")
    return notes


def _matcher_notes(run: Run) -> list[str]:
    """Which fact matcher scored recall and precision, and how well it agrees with people:
    on the bundled calibration sets, and on the run's own pairs when its sheet is labelled."""
    record = run.environment.get("matcher")
    name = record.get("name") if isinstance(record, dict) else None
    if not isinstance(name, str):
        return [f"fact matcher of {run.name}: not recorded (memlab rescore records it)"]
    calibration = calibration_of(name)
    if calibration is not None:
        styles = "; ".join(
            f"{style} {counts.agreement:.1%} (wrong pairs accepted "
            f"{counts.wrong_accepted_rate:.1%})"
            for style, counts in sorted(calibration.by_style.items())
        )
        agreement = (
            f"agreement {calibration.agreement:.1%} with hand labels on the calibration test "
            f"split ({calibration.total.pairs} pairs; by style: {styles})"
        )
    else:
        agreement = "not calibrated here (memlab matcher calibrate --matcher NAME)"
    notes = [f"fact matcher of {run.name}: {name}, {agreement}"]
    notes.extend(_audit_notes(run, name))
    judge = record.get("judge") if isinstance(record, dict) else None
    if isinstance(judge, dict):
        rate = judge.get("agreement")
        shown = f"{rate:.1%}" if isinstance(rate, float) else "n/a"
        notes.append(
            f"judge prompts in {run.name} agree on {shown} of "
            f"{judge.get('pairs_judged')} pairs; recall by prompt: "
            + "; ".join(
                f"{lane} " + ", ".join(f"{p} {m.get('recall')}" for p, m in prompts.items())
                for lane, prompts in judge.get("lanes", {}).items()
            )
        )
    return notes


def _audit_notes(run: Run, name: str) -> list[str]:
    """The matcher's measured agreement on the run's own labelled pairs, if any."""
    path = sheet_path(run)
    if not os.path.lexists(path):  # lexists: a link, a FIFO or a device is refused, not skipped
        return []
    try:
        sheet = read_sheet(path, inside=run.path)
    except AuditError as exc:
        logger.warning("labelling sheet of %s not used: %s", run.name, exc)
        return [f"labelling sheet of {run.name} unreadable: {exc}"]
    estimate = sheet.estimate()
    if not estimate.sample.pairs:
        return [f"labelling sheet of {run.name}: no labels yet ({path})"]
    sample = estimate.sample
    note = (
        f"measured on {run.name}'s own pairs ({sample.pairs} labelled, matcher "
        f"{sheet.matcher}): agreement {sample.agreement:.1%}, kappa {sample.kappa:.2f}; "
        f"estimated over the run: agreement {estimate.run_agreement:.1%}, precision "
        f"{estimate.run_precision:.1%}, recall {estimate.run_recall:.1%}"
    )
    if sheet.matcher != name:
        note += f" (the run is now scored with {name})"
    return [note]


def simulated_note(runs: Sequence[Run]) -> str:
    """A sentence naming the lanes that replay the simulated model ("" when none do)."""
    count = sum(is_simulated(lane.backend) for run in runs for lane in run.lanes.values())
    if not count:
        return ""
    return (
        f"{count} configuration(s) marked {SIMULATED_MARK} replay the simulated model, a test "
        "instrument with declared behaviour (backend sim:PROFILE), not a language model; "
        "their numbers show what the pipeline and the metrics do, not how any model performs."
    )


def build_report(
    runs: Sequence[Run],
    out_dir: str | Path,
    *,
    title: str = "memlab comparison report",
    intro: str = "",
    allow_mixed: bool = False,
) -> ReportPaths:
    """Write ``index.html`` and ``summary.md`` comparing ``runs``: the first real lane is the
    real lanes' baseline, the first simulated lane the simulated lanes'.

    ``intro`` opens the report (plain text, escaped; each line one item of a list); a note
    naming the simulated lanes follows it whenever a run has any. Lanes measured differently
    (another dataset, owner set, matcher or judge, a run of the simulated model beside a run
    of a real one, another answerer or answer key of memory QA) are refused
    (:class:`~memlab.scoring.comparing.comparability.MixedComparisonError`) unless ``allow_mixed``;
    the report's introduction then names what is mixed. A run whose dataset file changed since
    it was swept is refused (:class:`~memlab.runs.run_dataset.DatasetChangedError`).
    """
    if not runs:
        raise ValueError("build_report needs at least one run")
    for run in runs:  # a dataset changed since a run is refused, not quoted from
        _ = run.dataset_path
    stats = statistics_section(runs, allow_mixed=allow_mixed)
    # Answers no judge could grade lower accuracy without being the memory's fault: said first.
    banners = [*stats.banners, *qa_error_notes(runs)]
    # The caller's own introduction first (what the report is), then what it must warn of:
    # one short item each (a line of the caller's text is an item), never one long paragraph.
    notes = [
        part
        for part in (*intro.splitlines(), *banners, *echo_notes(runs), simulated_note(runs))
        if part.strip()
    ]
    qa = qa_section(runs, allow_mixed=allow_mixed)
    if qa is not None:  # what the introduction states is not stated twice
        qa = replace(
            qa,
            banners=[b for b in qa.banners if b not in stats.banners],
            robust=robust_inconclusive(qa.robust, stats.comparisons),
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    configs, changed = config_table(runs)
    metrics = compare_table(runs)
    failures = worst_failures(runs)
    diff, diff_title = _diff(runs)
    report = ReportContent(
        title,
        utc_iso(datetime.now(UTC)),
        runs,
        configs,
        changed,
        metrics,
        failures,
        diff,
        diff_title,
        stats=stats,
        operations=operations_section(runs),
        qa=qa,
        memory_time=memory_time_section(runs),
        forgetting=forgetting_section(runs),
        notes=_measure_notes(runs),
    )
    html, md = render_html(report), render_markdown(report)
    if notes:
        items = "".join(f"<li>{escape(note)}</li>" for note in notes)
        html = html.replace("<!--intro-->", f"<ul class='intro'>{items}</ul>", 1)
        listed = "".join(f"- {md_escape(note, 2000)}\n" for note in notes)
        md = md.replace("<!--intro-->\n", f"{listed}\n", 1)
    else:
        html, md = html.replace("<!--intro-->", "", 1), md.replace("<!--intro-->\n", "", 1)
    paths = ReportPaths(html=out / "index.html", markdown=out / "summary.md")
    atomic_write_text(paths.html, html)
    atomic_write_text(paths.markdown, md)
    logger.info("report written to %s", out)
    return paths


def _diff(runs: Sequence[Run]) -> tuple[pd.DataFrame, str]:
    """The fact-level diff of the most informative pair: of each configuration with its
    group's baseline, the pair whose final memories differ in the most facts (by normalized
    text), and a title naming the pair and why it was chosen."""
    pairs = [pair for group in lane_groups(runs) for pair in group.pairs()]
    if not pairs:
        return pd.DataFrame(columns=["user_id", "side", "fact_a", "fact_b"]), ""
    differing = [_differing_facts(a, b) for a, b in pairs]
    best = max(range(len(pairs)), key=lambda i: differing[i])
    (run_a, lane_a), (run_b, lane_b) = pairs[best]
    why = (
        f"of the {len(pairs)} pair(s) of a configuration with its baseline, the one whose final "
        f"memories differ most ({differing[best]} fact(s) by normalized text)"
        if differing[best]
        else f"no pair of a configuration with its baseline differs ({len(pairs)} compared)"
    )
    title = (
        f"A = {run_a.name}: {run_a.label(lane_a)}; B = {run_b.name}: {run_b.label(lane_b)}; {why}"
    )
    return fact_diff(run_a, lane_a, run_b, lane_b), title


def _differing_facts(a: tuple[Run, str], b: tuple[Run, str]) -> int:
    """Facts held by one lane's final memories and not the other's (normalized, per owner)."""

    def held(run: Run, lane_id: str) -> set[tuple[str, str]]:
        facts = run.final_facts(lane_id)
        if facts.empty:
            return set()
        # Iterating a column of pandas' string type boxes each value: take its objects.
        owners, texts = (facts[c].to_numpy(dtype=object) for c in ("user_id", "content"))
        pairs = zip(owners, texts, strict=True)
        return {(str(owner), normalize_text(str(text))) for owner, text in pairs}

    return len(held(*a) ^ held(*b))
