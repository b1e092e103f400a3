"""A comparison report rendered: the self-contained HTML page and the Markdown summary.

:class:`ReportContent` is everything a report shows, computed once by
:func:`memlab.reporting.report.build_report`; :func:`render_html` and :func:`render_markdown`
turn it into ``index.html`` and ``summary.md``. The HTML has no external assets: the charts
(:data:`CHARTS`) are embedded PNG data URIs (:func:`figure_to_data_uri`) and the style sheet is
inline; every piece of text that comes from a dataset, a model or a config is HTML-escaped (in
the Markdown, passed through :func:`~memlab.reporting.markdown.md_escape`). The first screen
answers what was compared and what differs; the rest is folded in ``<details>``.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

import pandas as pd
from matplotlib.figure import Figure

from memlab.backends.registry import is_simulated
from memlab.reporting.compare.prompt_changes import (
    prompt_changes,
    prompt_changes_html,
    prompt_changes_markdown,
)
from memlab.reporting.compare.verdict import (
    biggest_prompt_change,
    compared_lines,
    verdict,
    verdict_html,
    verdict_markdown,
)
from memlab.reporting.figures import charts
from memlab.reporting.figures.chart_tables import chart_numbers
from memlab.reporting.figures.memory_time import (
    MemoryTimeSection,
    memory_time_html,
    memory_time_markdown,
)
from memlab.reporting.figures.overlay import Overlay
from memlab.reporting.forgetting_section import (
    ForgettingSection,
    forgetting_html,
    forgetting_markdown,
)
from memlab.reporting.groups import lane_groups
from memlab.reporting.markdown import md_code_block, md_escape, md_table_head, md_table_row
from memlab.reporting.operations import OperationsSection
from memlab.reporting.operations import section_html as operations_html
from memlab.reporting.operations import section_markdown as operations_markdown
from memlab.reporting.qa.qa_section import QASection, qa_html, qa_markdown
from memlab.reporting.statistics import StatisticsSection, section_html, section_markdown
from memlab.reporting.tables import metric_table_html, metric_table_markdown, metrics_in
from memlab.runs.run import Run

__all__ = [
    "CHARTS",
    "REPORT_DPI",
    "ReportContent",
    "figure_to_data_uri",
    "render_html",
    "render_markdown",
]

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
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1rem auto;max-width:1300px;
color:#222;padding:0 1rem;line-height:1.35}
h1{font-size:1.5rem;margin:.3rem 0} h2{font-size:1.2rem;margin:.8rem 0 .4rem}
h3{font-size:1rem;margin:.7rem 0 .3rem}
table{border-collapse:collapse;margin:.4rem 0;font-size:.8rem;max-width:100%}
caption{text-align:left;font-weight:600;padding:.2rem 0}
td,th{border:1px solid #ccc;padding:.2rem .4rem;text-align:left;vertical-align:top;
overflow-wrap:break-word}
table.long td,table.long th{overflow-wrap:anywhere;min-width:4rem}
th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums}
.best{font-weight:700;background:#e8f5e9} .delta{color:#666;font-size:.75rem}
.changed{background:#fff8e1} pre{white-space:pre-wrap;overflow-wrap:anywhere;
background:#f7f7f7;padding:.5rem;font-size:.78rem;margin:0}
img{max-width:100%;border:1px solid #eee} .muted{color:#666}
.intro{background:#f5f8fc;border-left:4px solid #30638e;padding:.3rem .8rem .3rem 1.8rem;
margin:.3rem 0;font-size:.8rem;line-height:1.25}
.compared{margin:.3rem 0;padding-left:1.8rem;line-height:1.25} .intro li,.compared li{margin:0}
tr.robust td{background:#e8f5e9} .caption{margin:.3rem 0}
details.section{border-top:1px solid #ddd;padding:.2rem 0}
details.section>summary{cursor:pointer} details.section>summary>h2{display:inline}
.charts{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:.5rem}
.charts figure{margin:0} .charts img{max-width:100%;height:auto}
.charts figcaption{font-size:.8rem;color:#444}
.diff .add{background:#e6ffec;display:block} .diff .del{background:#ffebe9;display:block}
.diff .hunk{color:#6a737d;display:block}
"""


@dataclass(frozen=True)
class ReportContent:
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
    memory_time: MemoryTimeSection | None = None
    forgetting: ForgettingSection | None = None
    notes: Sequence[str] = ()
    """How each run measured its optional metrics (read once: a refused file warns once)."""


REPORT_DPI = 90
"""Resolution of the report's charts."""


def figure_to_data_uri(fig: Figure) -> str:
    """Render a Figure as a ``data:image/png;base64,...`` URI."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=REPORT_DPI)
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
    return (
        f"<table class='long'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def render_html(report: ReportContent) -> str:
    changes = prompt_changes(report.runs, report.metrics)
    robust = report.qa.robust if report.qa is not None else None
    parts = [
        *_html_head(report),
        *verdict_html(verdict(report.stats, robust), biggest_prompt_change(changes)),
        *_section("Metrics", _html_metrics(report), opened=True),
        *_html_charts(report.runs),
        *_section("Statistics", section_html(report.stats)),
        *_section("Memory operations", operations_html(report.operations)),
        *_section("Memory QA", qa_html(report.qa, figure_to_data_uri)),
        *_section("Memory over time", memory_time_html(report.memory_time, figure_to_data_uri)),
        *_section(
            "Forgetting operating curve", forgetting_html(report.forgetting, figure_to_data_uri)
        ),
        *_section("Prompt changes", prompt_changes_html(changes), anchor="prompt-changes"),
        *_section("Worst failures", _html_failures(report.failures)),
        *_section("Fact-level diff", _html_fact_diff(report.diff, report.diff_title)),
        *_section("Configurations", _html_configurations(report.configs, report.changed)),
        "</body></html>",
    ]
    return "\n".join(parts)


def _section(
    title: str, parts: Sequence[str], *, opened: bool = False, anchor: str = ""
) -> list[str]:
    """A folded section (``opened``: unfolded); nothing when ``parts`` is empty."""
    if not parts:
        return []
    attributes = (" open" if opened else "") + (f" id='{anchor}'" if anchor else "")
    return [
        f"<details class='section'{attributes}><summary><h2>{escape(title)}</h2></summary>",
        *parts,
        "</details>",
    ]


def _html_head(report: ReportContent) -> list[str]:
    title = escape(report.title)
    return [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{title}</title><style>{_CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        "<!--intro-->",
        "<ul class='compared'>"
        + "".join(
            f"<li>{escape(line)}</li>" for line in compared_lines(report.runs, report.changed)
        )
        + f"</ul><p class='muted'>Generated {escape(report.generated)}.</p>",
    ]


def _html_configurations(configs: pd.DataFrame, changed: list[str]) -> list[str]:
    """The settings that differ, and every setting of every lane folded below them."""
    shown = configs[["run", "lane", *changed]] if changed else configs[["run", "lane"]]
    return [
        f"<p>Changed between configurations: <b>{escape(', '.join(changed) or 'nothing')}</b></p>",
        _html_table(shown),
        "<details><summary>Every setting of every configuration</summary>",
        *(_html_table(_settings_down(part)) for part in _by_backend_kind(configs)),
        "</details>",
    ]


def _by_backend_kind(configs: pd.DataFrame) -> list[pd.DataFrame]:
    """The configuration table's real lanes, then its simulated ones (either may be absent)."""
    simulated = configs["backend"].map(lambda spec: is_simulated(str(spec)))
    return [part for part in (configs[~simulated], configs[simulated]) if not part.empty]


def _settings_down(configs: pd.DataFrame) -> pd.DataFrame:
    """The configuration table turned: one row per setting, one column per configuration
    (two dozen settings would not fit across the page)."""
    turned = configs.drop(columns=["run", "lane"]).T.astype(str)
    names = zip(configs["run"], configs["lane"], strict=True)
    turned.columns = pd.Index(f"{run}: {lane}" for run, lane in names)
    turned.insert(0, "setting", turned.index)
    return turned


def _html_metrics(report: ReportContent) -> list[str]:
    runs, metrics = report.runs, report.metrics
    parts = [metric_table_html(metrics, metrics_in(metrics), mark_best=True)]
    note = "★ best value of its table; grey numbers are deltas against the table's first row."
    if len(lane_groups(runs)) > 1:
        note += " Real and simulated configurations are in separate tables, never ranked together."
    parts.append(f"<p class='muted'>{note}</p>")
    parts += [f"<p class='muted'>{escape(note)}</p>" for note in report.notes]
    return parts


def _html_charts(runs: Sequence[Run]) -> list[str]:
    """The charts, two per row: of the one run, or of several runs overlaid (one chart of
    each kind, a series per run and configuration); a chart with nothing to draw is one line
    of text."""
    if len(runs) == 1:
        return _chart_section(f"Charts: {runs[0].name}", runs[0])
    overlay = Overlay.of(runs)
    names = ", ".join(name for name, _ in overlay.members)
    return _chart_section(f"Charts: {names} overlaid", overlay)


def _chart_section(title: str, run: Run) -> list[str]:
    """The section of ``run``'s charts, each with its numbers folded under it."""
    figures, empty = [], []
    for chart_title, row in CHARTS:
        for chart in row:
            fig = chart(run)
            reason = charts.empty_reason(fig)
            if reason is not None:
                empty.append(f"{chart_title}: {reason}")
                continue
            numbers = chart_numbers(chart, run)
            table = (
                f"<details><summary>{escape(chart_title)}: the numbers</summary>"
                f"{_html_table(numbers.astype(str))}</details>"
                if not numbers.empty
                else f"<figcaption>{escape(chart_title)}</figcaption>"
            )
            figures.append(
                f"<figure><img alt='{escape(chart_title)}' src='{figure_to_data_uri(fig)}'>"
                f"{table}</figure>"
            )
    body = [f"<div class='charts'>{''.join(figures)}</div>"] if figures else []
    if empty:
        body.append(
            "<p class='muted'>Not drawn (nothing to show): " + escape("; ".join(empty)) + ".</p>"
        )
    return _section(title, body, opened=True)


def _html_failures(failures: pd.DataFrame) -> list[str]:
    if failures.empty:
        return ["<p>No parse failures.</p>"]
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
        "<table class='long'><thead><tr><th>configuration</th><th>owner</th><th>category</th>"
        "<th>error</th><th>conversation (dataset)</th><th>raw reply</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>",
    ]


def _html_fact_diff(diff: pd.DataFrame, diff_title: str) -> list[str]:
    if not diff_title:
        return ["<p>Only one configuration: nothing to diff.</p>"]
    counts = _diff_counts(diff)
    return [
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


def render_markdown(report: ReportContent) -> str:
    # Everything from data or arguments goes through md_escape (or md_code_block).
    run_names = md_escape(", ".join(r.name for r in report.runs), 500)
    lines = [f"# {md_escape(report.title, 200)}", "", "<!--intro-->"]
    lines += [
        f"Generated {report.generated} from runs: {run_names}; the first row of each table is "
        "its baseline.",
        "",
    ]
    changes = prompt_changes(report.runs, report.metrics)
    robust = report.qa.robust if report.qa is not None else None
    compared = compared_lines(report.runs, report.changed)
    lines += [*(f"- {md_escape(line, 2000)}" for line in compared), ""]
    lines += verdict_markdown(verdict(report.stats, robust), biggest_prompt_change(changes))
    lines += _markdown_configurations(report.configs, report.changed)
    lines += _markdown_metrics(report)
    lines += section_markdown(report.stats)
    lines += operations_markdown(report.operations)
    lines += qa_markdown(report.qa)
    lines += memory_time_markdown(report.memory_time)
    lines += forgetting_markdown(report.forgetting)
    lines += prompt_changes_markdown(changes)
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


def _markdown_metrics(report: ReportContent) -> list[str]:
    metrics = report.metrics
    lines = ["", "## Metrics", "", *metric_table_markdown(metrics, metrics_in(metrics))]
    lines += ["", "★ marks the best value of its table; deltas are against its first row.", ""]
    notes = report.notes
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
