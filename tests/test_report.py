"""The comparison report: self-contained HTML, Markdown summary, deltas, best values, fact diff."""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from builders import marker_backend, one_turn, sweep_scripted, update, write_owners

from memlab.cli.main import main
from memlab.reporting.figures import charts
from memlab.reporting.report import ReportPaths, build_report
from memlab.reporting.report_render import CHARTS
from memlab.reporting.tables import compare_table, config_table, fact_diff, worst_failures
from memlab.runs.run import Run

T0 = datetime(2025, 2, 3, 9, 0, tzinfo=UTC)
XSS_SCRIPT = "<script>alert(1)</script>"
XSS_IMG = "<img src=x onerror=alert(2)>"


# Markers [s:1] / [s:2] appear only in the conversation, never in stored memory.
BASE_REPLIES = {
    "[s:1]": update("Works as a nurse in Leeds", "Owns a red bicycle", "Has a cat named Tom"),
    "[s:2]": f"I cannot answer that. {XSS_SCRIPT} {XSS_IMG}",
}
NEW_REPLIES = {
    "[s:1]": update("works as a nurse in leeds!", "Owns a red racing bicycle"),
    "[s:2]": update("Loves hiking", "Loves hiking a lot"),
}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    owner = {
        "user_id": "ann",
        "sessions": [
            one_turn(
                "ann-1",
                T0,
                "I work as a nurse in Leeds. [s:1]",
                facts=[{"id": "g1", "content": "Works as a nurse in Leeds", "category": "context"}],
            ),
            one_turn(
                "ann-2",
                T0 + timedelta(days=1),
                f"I love hiking. [s:2] {XSS_SCRIPT} {XSS_IMG}",
                facts=[{"id": "g2", "content": "Loves hiking", "category": "preference"}],
            ),
        ],
    }
    path = tmp_path_factory.mktemp("data") / "tiny.jsonl"
    write_owners(path, [owner])
    return path


def make_run(dataset: Path, runs_dir: Path, name: str, replies: dict[str, str], **base: Any) -> Run:
    backend = marker_backend(replies)
    return sweep_scripted(
        dataset, {"name": name, "replay_mode": "per_session", "base": base}, backend, runs_dir
    )


@pytest.fixture(scope="module")
def runs(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Run]:
    runs_dir = tmp_path_factory.mktemp("runs")
    base = make_run(dataset, runs_dir, "base", BASE_REPLIES)
    new = make_run(dataset, runs_dir, "new", NEW_REPLIES, fact_confidence_threshold=0.6)
    return base, new


@pytest.fixture(scope="module")
def report(runs: tuple[Run, Run], tmp_path_factory: pytest.TempPathFactory) -> ReportPaths:
    return build_report(list(runs), tmp_path_factory.mktemp("report") / "cmp", title="A vs B")


def test_both_files_written(report: ReportPaths) -> None:
    assert report.html.name == "index.html" and report.markdown.name == "summary.md"
    html = report.html.read_text(encoding="utf-8")
    md = report.markdown.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    for heading in ("Configurations", "Metrics", "Worst failures", "Fact-level diff"):
        assert heading in html
        assert f"## {heading}" in md


def test_html_is_self_contained(runs: tuple[Run, Run], report: ReportPaths) -> None:
    html = report.html.read_text(encoding="utf-8")
    lowered = html.lower()
    assert "<script" not in lowered
    assert "<link" not in lowered
    assert 'src="http' not in lowered and "src='http" not in lowered
    assert "url(" not in lowered  # no external fonts or images in CSS
    sources = re.findall(r"<img [^>]*src='([^']*)'", html)
    # Nine charts, the two runs overlaid in each; a chart with nothing to draw is a line of
    # text instead (drawn when either run has something to draw).
    drawn = [
        any(charts.empty_reason(chart(run)) is None for run in runs)
        for _, row in CHARTS
        for chart in row
    ]
    assert len(drawn) == 9 and 0 < sum(drawn) < 9
    assert len(sources) == sum(drawn)
    assert html.count("Not drawn (nothing to show)") == 1
    assert len(sources) == lowered.count("<img")
    for src in sources:
        prefix = "data:image/png;base64,"
        assert src.startswith(prefix)
        assert base64.b64decode(src[len(prefix) :]).startswith(b"\x89PNG")


def test_dataset_and_model_text_is_escaped(report: ReportPaths) -> None:
    html = report.html.read_text(encoding="utf-8")
    assert XSS_SCRIPT not in html and XSS_IMG not in html
    assert "<img src=x" not in html
    escaped_script = "&lt;script&gt;alert(1)&lt;/script&gt;"
    escaped_img = "&lt;img src=x onerror=alert(2)&gt;"
    # once in the dataset conversation and once in the raw reply of the failed parse
    assert html.count(escaped_script) == 2
    assert html.count(escaped_img) == 2
    conversation = f"User: I love hiking. [s:2] {escaped_script} {escaped_img}"
    assert conversation in html
    assert f"I cannot answer that. {escaped_script} {escaped_img}" in html


def test_config_table_names_what_changed(runs: tuple[Run, Run], report: ReportPaths) -> None:
    table, changed = config_table(list(runs))
    assert changed == ["fact_confidence_threshold"]
    assert table["run"].tolist() == ["base", "new"]
    html = report.html.read_text(encoding="utf-8")
    assert "Changed between configurations: <b>fact_confidence_threshold</b>" in html
    assert "Changed: fact_confidence_threshold" in report.markdown.read_text(encoding="utf-8")


def test_metrics_deltas_and_best_values(runs: tuple[Run, Run]) -> None:
    table = compare_table(list(runs)).set_index("run")
    expected = {
        # metric: (base, new)
        "parse_failure_rate": (0.5, 0.0),
        "recall": (0.5, 1.0),
        "precision": (1 / 3, 3 / 4),
        "duplicate_rate": (0.0, 1 / 4),  # "Loves hiking a lot" nearly repeats "Loves hiking"
        "final_facts": (3, 4),
        "llm_calls": (2, 2),
    }
    for metric, (base, new) in expected.items():
        assert table.loc["base", metric] == pytest.approx(base), metric
        assert table.loc["new", metric] == pytest.approx(new), metric
        assert table.loc["base", f"{metric}_delta"] == 0
        assert table.loc["new", f"{metric}_delta"] == pytest.approx(new - base), metric
    best = {m: (table.loc["base", f"{m}_best"], table.loc["new", f"{m}_best"]) for m in expected}
    assert best == {
        "parse_failure_rate": (False, True),  # lower is better
        "recall": (False, True),
        "precision": (False, True),
        "duplicate_rate": (True, False),  # lower is better
        "final_facts": (False, False),  # a count, not ranked
        "llm_calls": (False, False),  # all rows tie: nothing is best
    }


def test_markdown_metric_row_shows_deltas_and_marks(report: ReportPaths) -> None:
    md = report.markdown.read_text(encoding="utf-8")
    header = next(line for line in md.splitlines() if line.startswith("| run | configuration"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    rows = {
        cells[0]: dict(zip(columns, cells, strict=True))
        for line in md.splitlines()
        if line.startswith(("| base |", "| new |"))
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
        if len(cells) == len(columns)
    }
    assert rows["base"]["parse failure rate"] == "50.0%"  # the baseline shows no delta
    assert rows["new"]["parse failure rate"] == "**0.0% (-50.0 pts)** ★"
    assert rows["new"]["recall"] == "**100.0% (+50.0 pts)** ★"
    assert rows["base"]["duplicate rate"] == "**0.0%** ★"
    assert rows["new"]["duplicate rate"] == "25.0% (+25.0 pts)"
    assert rows["base"]["final facts"] == "3"
    assert rows["new"]["final facts"] == "4 (+1)"  # counts get deltas but no best marker


def test_html_metric_cells_mark_best(report: ReportPaths) -> None:
    html = report.html.read_text(encoding="utf-8")
    metrics = html.split("<h2>Metrics</h2>", 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", metrics)
    base_row = next(r for r in rows if r.startswith("<td>base</td>"))
    new_row = next(r for r in rows if r.startswith("<td>new</td>"))
    assert "<td class='num best'>100.0% <span class=\"delta\">+50.0 pts</span> ★</td>" in new_row
    assert "<td class='num'>50.0%</td>" in base_row  # recall of the baseline: not best
    assert "<td class='num best'>0.0% ★</td>" in base_row  # duplicate rate


def test_fact_diff_only_a_only_b_and_near(runs: tuple[Run, Run]) -> None:
    base, new = runs
    diff = fact_diff(base, next(iter(base.lanes)), new, next(iter(new.lanes)))
    got = sorted(diff[["side", "fact_a", "fact_b"]].itertuples(index=False, name=None))
    assert got == [
        ("near", "Owns a red bicycle", "Owns a red racing bicycle"),
        ("only_a", "Has a cat named Tom", ""),
        ("only_b", "", "Loves hiking"),
        ("only_b", "", "Loves hiking a lot"),
    ]
    # "Works as a nurse in Leeds" and "works as a nurse in leeds!" are the same fact once
    # normalized, so the diff does not list them.
    assert not diff["fact_a"].str.contains("nurse").any()
    assert set(diff["user_id"]) == {"ann"}


def test_fact_diff_in_both_reports(report: ReportPaths) -> None:
    html = report.html.read_text(encoding="utf-8")
    assert "only in A: 1, only in B: 2, near-duplicates: 1" in html
    md = report.markdown.read_text(encoding="utf-8")
    assert "only in A: 1, only in B: 2, near-duplicates: 1" in md
    assert "| ann | near | Owns a red bicycle | Owns a red racing bicycle |" in md
    assert "| ann | only_a | Has a cat named Tom |  |" in md


def test_worst_failures_carry_raw_reply_and_conversation(runs: tuple[Run, Run]) -> None:
    failures = worst_failures(list(runs))
    assert len(failures) == 1
    row = failures.iloc[0]
    assert (row["run"], row["user_id"], row["session_index"]) == ("base", "ann", 1)
    assert row["parse_category"] == "no_json"
    assert row["reply"] == BASE_REPLIES["[s:2]"]
    assert row["conversation"].startswith("User: I love hiking. [s:2]")
    assert row["conversation"].endswith("Assistant: OK.")


def test_markdown_keeps_raw_text_out_of_tables(report: ReportPaths) -> None:
    md = report.markdown.read_text(encoding="utf-8")
    # Raw replies stay inside fenced blocks; nothing outside a fence carries live HTML.
    outside = re.sub(r"```.*?```", "", md, flags=re.S)
    assert "<script" not in outside and "<img" not in outside
    assert "I cannot answer that." in md


def test_single_run_report_has_nothing_to_diff(runs: tuple[Run, Run], tmp_path: Path) -> None:
    paths = build_report([runs[1]], tmp_path / "one")
    html = paths.html.read_text(encoding="utf-8")
    assert "Only one configuration: nothing to diff." in html
    assert "★" not in html.split("<h2>Metrics</h2>", 1)[1].split("</table>", 1)[0]
    assert "No parse failures." in html


def test_report_needs_a_run(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one run"):
        build_report([], tmp_path)


def test_report_command(
    runs: tuple[Run, Run], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "reports" / "cmp"
    code = main(["report", str(runs[0].path), str(runs[1].path), "-o", str(out), "--title", "T"])
    assert code == 0
    assert (out / "index.html").exists() and (out / "summary.md").exists()
    assert "<title>T</title>" in (out / "index.html").read_text(encoding="utf-8")
    assert str(out / "index.html") in capsys.readouterr().out


def test_report_command_names_a_bad_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["report", str(tmp_path / "missing"), "-o", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "missing" in err and "not a memlab run directory" in err


def test_loaded_run_reports_like_the_returned_run(runs: tuple[Run, Run], tmp_path: Path) -> None:
    from memlab.runs.run import load_run

    loaded = [load_run(r.path) for r in runs]
    pd.testing.assert_frame_equal(
        compare_table(loaded).reset_index(drop=True),
        compare_table(list(runs)).reset_index(drop=True),
        check_dtype=False,
    )


def _compared(lane: str, metric: str, verdict: str, *, role: str = "primary") -> dict[str, Any]:
    """One compare_lanes row; a significant verdict gets an interval above 0."""
    shown = verdict.removesuffix(" (exploratory)") in ("better", "worse")
    return {
        "run": "r", "lane": lane, "metric": metric, "role": role, "baseline": 0.5,
        "value": 0.7, "delta": 0.2, "delta_lo": 0.1 if shown else -0.1, "delta_hi": 0.3,
        "level": 0.95, "p_value": 0.001 if shown else 0.4, "p_holm": 0.002 if shown else 0.4,
        "significant": shown and role == "primary", "verdict": verdict, "mde": 0.1,
        "owners_better": 9, "owners_worse": 1,
    }  # fmt: skip


def test_the_verdict_keeps_significant_rows_and_marks_robust_ones() -> None:
    from memlab.reporting.compare.verdict import verdict
    from memlab.reporting.statistics import GroupComparison, StatisticsSection
    from memlab.scoring.inference.stats import StatOptions

    rows = [
        _compared("a", "recall", "better"),
        _compared("a", "duplicate_rate", "worse (exploratory)", role="secondary"),
        _compared("b", "recall", "no significant difference"),
        _compared("b", "precision", "no clear difference (exploratory)", role="secondary"),
        _compared("c", "qa_accuracy", "better"),  # one judge does not find it
    ]
    section = StatisticsSection(
        StatOptions(), "intro", pd.DataFrame(), [GroupComparison("", "r: base", pd.DataFrame(rows))]
    )
    judges = pd.DataFrame(
        [{"run": "r", "configuration": "c", "metric": "qa_accuracy",
          "under every judge": "depends on the judge"}]
    )  # fmt: skip
    (found,) = verdict(section, judges)
    shown = found.rows.set_index(["configuration", "metric"])["robust"].to_dict()
    assert shown == {
        ("r: a", "recall"): "robust",
        ("r: c", "QA accuracy"): "exploratory",
        ("r: a", "duplicate rate"): "exploratory",
    }
    assert list(found.rows["robust"]) == ["robust", "exploratory", "exploratory"]  # robust first
    assert found.tested == 5
