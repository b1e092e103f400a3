"""Comparison reports: a self-contained ``index.html`` and a ``summary.md``.

The HTML has no external assets: charts are embedded PNG data URIs and the style sheet is
inline. Every piece of text that comes from a dataset, a model or a config is HTML-escaped.
"""

from __future__ import annotations

import base64
import io
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from memlab.backends.registry import is_simulated
from memlab.core.atomic import atomic_write_text
from memlab.core.document import utc_iso
from memlab.matching.calibration import calibration_of
from memlab.matching.matcher_audit import AuditError, read_sheet
from memlab.reporting import charts
from memlab.reporting.markdown import md_code_block, md_escape, md_table_head, md_table_row
from memlab.reporting.operations import OperationsSection, operations_section
from memlab.reporting.operations import section_html as operations_html
from memlab.reporting.operations import section_markdown as operations_markdown
from memlab.reporting.prompt_changes import (
    prompt_changes,
    prompt_changes_html,
    prompt_changes_markdown,
)
from memlab.reporting.qa import QASection, qa_html, qa_markdown, qa_section
from memlab.reporting.statistics import (
    StatisticsSection,
    section_html,
    section_markdown,
    statistics_section,
)
from memlab.reporting.tables import (
    compare_table,
    config_table,
    fact_diff,
    metric_table_html,
    metric_table_markdown,
    metrics_in,
    worst_failures,
)
from memlab.sweeps.audit import sheet_path
from memlab.sweeps.run import Run

__all__ = ["ReportPaths", "build_report", "figure_to_data_uri", "simulated_note"]

logger = logging.getLogger(__name__)

CHARTS: tuple[tuple[str, tuple[Callable[[Run], Figure], ...]], ...] = (
    ("Parse outcome", (charts.parse_failure_chart,)),
    ("Schema violations", (charts.violation_heatmap,)),
    ("Fact growth and eviction regret", (charts.fact_growth_chart, charts.eviction_regret_chart)),
    ("Duplication", (charts.duplication_chart,)),
    ("Operating curve", (charts.operating_curve_chart,)),
    ("Stale facts after a retraction", (charts.stale_survival_chart,)),
    ("Injected memory coverage by budget", (charts.injection_coverage_chart,)),
    ("Tokens per update", (charts.tokens_chart,)),
)
"""The report's charts by title; charts that share a title are shown side by side."""

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1100px;
color:#222;padding:0 1rem}
table{border-collapse:collapse;margin:1rem 0;font-size:.85rem;display:block;overflow-x:auto;
max-width:100%}
td,th{border:1px solid #ccc;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums}
.best{font-weight:700;background:#e8f5e9} .delta{color:#666;font-size:.75rem}
.changed{background:#fff8e1} pre{white-space:pre-wrap;max-height:14rem;overflow:auto;
background:#f7f7f7;padding:.5rem;font-size:.78rem;margin:0}
img{max-width:100%;border:1px solid #eee} .muted{color:#777}
.scroll{overflow-x:auto;max-width:100%} .scroll td{max-width:16rem;overflow-wrap:break-word}
.intro{background:#f5f8fc;border-left:4px solid #30638e;padding:.5rem 1rem}
"""


@dataclass(frozen=True)
class _Report:
    """Everything the HTML and the Markdown renderings show, computed once."""

    title: str
    generated: str
    runs: Sequence[Run]
    configs: pd.DataFrame
    changed: list[str]
    metrics: pd.DataFrame
    failures: pd.DataFrame
    diff: pd.DataFrame
    diff_title: str
    stats: StatisticsSection
    operations: OperationsSection | None
    qa: QASection | None


@dataclass(frozen=True)
class ReportPaths:
    """Files written by :func:`build_report`."""

    html: Path
    markdown: Path


def figure_to_data_uri(fig: Figure) -> str:
    """Render a Figure as a ``data:image/png;base64,...`` URI."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _html_table(frame: pd.DataFrame, classes: Callable[[int, str], str] | None = None) -> str:
    head = "".join(f"<th>{escape(str(c))}</th>" for c in frame.columns)
    body = []
    for i, (_, row) in enumerate(frame.iterrows()):
        cells = []
        for column in frame.columns:
            css = classes(i, str(column)) if classes else ""
            cells.append(f'<td class="{css}">{escape(str(row[column]))}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


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
    if not path.is_file():
        return []
    try:
        sheet = read_sheet(path)
    except AuditError as exc:
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
        f"{count} configuration(s) marked [simulated] replay the simulated model, a test "
        "instrument with declared behaviour (backend sim:PROFILE), not a language model; "
        "their numbers show what the pipeline and the metrics do, not how any model performs."
    )


def build_report(
    runs: Sequence[Run],
    out_dir: str | Path,
    *,
    title: str = "memlab comparison report",
    intro: str = "",
) -> ReportPaths:
    """Write ``index.html`` and ``summary.md`` comparing ``runs`` (the first is the baseline).

    ``intro`` opens the report (plain text, escaped); a note naming the simulated lanes
    follows it whenever a run has any.
    """
    if not runs:
        raise ValueError("build_report needs at least one run")
    intro = " ".join(part for part in (intro, simulated_note(runs)) if part)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    configs, changed = config_table(runs)
    metrics = compare_table(runs)
    failures = worst_failures(runs)
    diff, diff_title = _diff(runs)
    report = _Report(
        title,
        utc_iso(datetime.now(UTC)),
        runs,
        configs,
        changed,
        metrics,
        failures,
        diff,
        diff_title,
        stats=statistics_section(runs),
        operations=operations_section(runs),
        qa=qa_section(runs),
    )
    html, md = _html(report), _markdown(report)
    if intro:
        html = html.replace("<!--intro-->", f"<p class='intro'>{escape(intro)}</p>", 1)
        md = md.replace("<!--intro-->\n", f"{md_escape(intro, 2000)}\n\n", 1)
    else:
        html, md = html.replace("<!--intro-->", "", 1), md.replace("<!--intro-->\n", "", 1)
    paths = ReportPaths(html=out / "index.html", markdown=out / "summary.md")
    atomic_write_text(paths.html, html)
    atomic_write_text(paths.markdown, md)
    logger.info("report written to %s", out)
    return paths


def _diff(runs: Sequence[Run]) -> tuple[pd.DataFrame, str]:
    lanes = [(run, lane_id) for run in runs for lane_id in run.lanes]
    if len(lanes) < 2:
        return pd.DataFrame(columns=["user_id", "side", "fact_a", "fact_b"]), ""
    (run_a, lane_a), (run_b, lane_b) = lanes[0], lanes[1]
    title = f"A = {run_a.name}: {run_a.label(lane_a)}; B = {run_b.name}: {run_b.label(lane_b)}"
    return fact_diff(run_a, lane_a, run_b, lane_b), title


def _html(report: _Report) -> str:
    parts = [
        *_html_head(report),
        *_html_configurations(report.configs, report.changed),
        *_html_metrics(report.runs, report.metrics),
        *section_html(report.stats),
        *operations_html(report.operations),
        *qa_html(report.qa, figure_to_data_uri),
        prompt_changes_html(prompt_changes(report.runs, report.metrics)),
        *_html_charts(report.runs),
        *_html_failures(report.failures),
        *_html_fact_diff(report.diff, report.diff_title),
        "</body></html>",
    ]
    return "\n".join(parts)


def _html_head(report: _Report) -> list[str]:
    title = escape(report.title)
    return [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{title}</title><style>{_CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        "<!--intro-->",
        f"<p class='muted'>Generated {escape(report.generated)} from runs: "
        f"{escape(', '.join(r.name for r in report.runs))}. The first row is the baseline.</p>",
    ]


def _html_configurations(configs: pd.DataFrame, changed: list[str]) -> list[str]:
    return [
        "<h2>Configurations</h2>",
        f"<p>Changed between configurations: <b>{escape(', '.join(changed) or 'nothing')}</b></p>",
        "<div class='scroll'>",
        _html_table(configs, lambda _i, col: "changed" if col in changed else ""),
        "</div>",
    ]


def _html_metrics(runs: Sequence[Run], metrics: pd.DataFrame) -> list[str]:
    parts = ["<h2>Metrics</h2>", metric_table_html(metrics, metrics_in(metrics), mark_best=True)]
    parts.append("<p class='muted'>★ best value; grey numbers are deltas against the baseline.</p>")
    parts += [f"<p class='muted'>{escape(note)}</p>" for note in _measure_notes(runs)]
    return parts


def _html_charts(runs: Sequence[Run]) -> list[str]:
    parts = []
    for run in runs:
        parts.append(f"<h2>Charts: {escape(run.name)}</h2>")
        for chart_title, row in CHARTS:
            width = "" if len(row) == 1 else f" style='max-width:{99 // len(row)}%'"
            images = "".join(
                f"<img alt='{escape(chart_title)}' src='{figure_to_data_uri(chart(run))}'{width}>"
                for chart in row
            )
            parts.append(f"<h3>{escape(chart_title)}</h3>{images}")
    return parts


def _html_failures(failures: pd.DataFrame) -> list[str]:
    if failures.empty:
        return ["<h2>Worst failures</h2>", "<p>No parse failures.</p>"]
    rows = []
    for _, f in failures.iterrows():
        reply = str(f["reply"])[:3000]
        rows.append(
            f"<tr><td>{escape(str(f['lane']))}</td><td>{escape(str(f['user_id']))}</td>"
            f"<td>{escape(str(f['parse_category']))}</td><td>{escape(str(f['error']))}</td>"
            f"<td><pre>{escape(str(f['conversation']))}</pre></td>"
            f"<td><pre>{escape(reply)}</pre></td></tr>"
        )
    return [
        "<h2>Worst failures</h2>",
        "<table><thead><tr><th>configuration</th><th>owner</th><th>category</th>"
        "<th>error</th><th>conversation (dataset)</th><th>raw reply</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>",
    ]


def _html_fact_diff(diff: pd.DataFrame, diff_title: str) -> list[str]:
    if not diff_title:
        return ["<h2>Fact-level diff</h2>", "<p>Only one configuration: nothing to diff.</p>"]
    counts = _diff_counts(diff)
    return [
        "<h2>Fact-level diff</h2>",
        f"<p>{escape(diff_title)}</p>",
        f"<p>only in A: {counts.get('only_a', 0)}, only in B: "
        f"{counts.get('only_b', 0)}, near-duplicates: {counts.get('near', 0)}</p>",
        _html_table(diff.head(200)),
    ]


def _diff_counts(diff: pd.DataFrame) -> dict[str, int]:
    """How many diff rows each side has (only_a, only_b, near)."""
    if diff.empty:
        return {}
    return {str(k): int(v) for k, v in diff["side"].value_counts().items()}


_MD_DIFF_ROWS = 50


def _markdown(report: _Report) -> str:
    # Everything from data or arguments goes through md_escape (or md_code_block).
    run_names = md_escape(", ".join(r.name for r in report.runs), 500)
    lines = [f"# {md_escape(report.title, 200)}", "", "<!--intro-->"]
    lines += [
        f"Generated {report.generated} from runs: {run_names}; the first row is the baseline.",
        "",
    ]
    lines += _markdown_configurations(report.configs, report.changed)
    lines += _markdown_metrics(report.runs, report.metrics)
    lines += section_markdown(report.stats)
    lines += operations_markdown(report.operations)
    lines += qa_markdown(report.qa)
    lines += prompt_changes_markdown(prompt_changes(report.runs, report.metrics))
    lines += _markdown_failures(report.failures)
    lines += _markdown_fact_diff(report.diff, report.diff_title)
    return "\n".join(lines) + "\n"


def _markdown_configurations(configs: pd.DataFrame, changed: list[str]) -> list[str]:
    lines = ["## Configurations", "", f"Changed: {md_escape(', '.join(changed) or 'nothing')}", ""]
    shown = ["run", "lane", *changed] if changed else ["run", "lane"]
    lines += md_table_head([md_escape(c) for c in shown])
    for _, row in configs.iterrows():
        lines.append(md_table_row([md_escape(str(row[c])) for c in shown]))
    return lines


def _markdown_metrics(runs: Sequence[Run], metrics: pd.DataFrame) -> list[str]:
    lines = ["", "## Metrics", "", *metric_table_markdown(metrics, metrics_in(metrics))]
    lines += ["", "★ marks the best value; deltas are against the first row.", ""]
    notes = _measure_notes(runs)
    if notes:
        lines += [*(f"{md_escape(note)}  " for note in notes), ""]
    return lines


def _markdown_failures(failures: pd.DataFrame) -> list[str]:
    lines = ["## Worst failures", ""]
    if failures.empty:
        lines.append("No parse failures.")
    for _, f in failures.iterrows():
        reply = str(f["reply"])[:600]
        conversation = str(f["conversation"])[-400:]
        lines += [
            f"- **{md_escape(f['lane'])}** / {md_escape(f['user_id'])}: "
            f"{md_escape(f['parse_category'])}: {md_escape(f['error'], 200)}",
            "",
        ]
        if conversation:
            lines += ["  conversation:", "", *md_code_block(conversation, "  "), "", "  reply:", ""]
        lines += [*md_code_block(reply, "  "), ""]
    return lines


def _markdown_fact_diff(diff: pd.DataFrame, diff_title: str) -> list[str]:
    lines = ["", "## Fact-level diff", ""]
    if not diff_title:
        return [*lines, "Only one configuration: nothing to diff."]
    counts = _diff_counts(diff)
    lines.append(md_escape(diff_title))
    lines.append(
        f"\nonly in A: {counts.get('only_a', 0)}, only in B: {counts.get('only_b', 0)}, "
        f"near-duplicates: {counts.get('near', 0)}"
    )
    if not diff.empty:
        lines += ["", *md_table_head(["owner", "side", "fact in A", "fact in B"])]
        for _, row in diff.head(_MD_DIFF_ROWS).iterrows():
            cells = [row["user_id"], row["side"], row["fact_a"], row["fact_b"]]
            lines.append(md_table_row([md_escape(str(c)) for c in cells]))
        if len(diff) > _MD_DIFF_ROWS:
            lines.append(f"\n({len(diff) - _MD_DIFF_ROWS} more rows not shown)")
    return lines
