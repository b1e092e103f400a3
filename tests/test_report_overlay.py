"""A report on several runs draws one chart of each kind with the runs overlaid: one series per
(run, configuration), labelled ``run: configuration``, its numbers each run's own."""

from __future__ import annotations

import csv
import json
import re
import shutil
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from memlab.backends.scripted import ScriptedBackend
from memlab.grids.grid import Grid
from memlab.postrun.qa_step import add_qa
from memlab.reporting import report, report_render
from memlab.reporting.figures import charts
from memlab.reporting.figures.chart_tables import chart_numbers
from memlab.reporting.figures.overlay import Overlay, OverlayError
from memlab.runs.run import Run, load_run
from memlab.scoring.qa.qa_metrics import accuracy_table
from memlab.sweeps.driver import sweep


@pytest.fixture(autouse=True)
def _no_pyplot(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    plt.close("all")

    def forbidden(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a chart function called plt.show()")

    monkeypatch.setattr(plt, "show", forbidden)
    yield
    assert plt.get_fignums() == [], "a chart function created a pyplot-managed figure"


_SETTINGS: dict[str, dict[str, Any]] = {
    # Different caps in one run, thresholds in the other, and another injection budget each:
    # every chart has something to draw, and the coverage chart draws lines along the budget.
    "capped": {"base": {"max_injection_tokens": 300}, "axes": {"max_facts": [10, 40]}},
    "strict": {
        "base": {"max_injection_tokens": 900},
        "axes": {"fact_confidence_threshold": [0.3, 0.8]},
    },
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Run]:
    runs_dir = tmp_path_factory.mktemp("runs")
    made = []
    for name, settings in _SETTINGS.items():
        grid = Grid.from_mapping(
            {
                "name": name,
                "max_owners": 2,
                "base": {"backend": "sim:careful", **settings["base"]},
                "axes": settings["axes"],
            }
        )
        made.append(sweep("personas", grid, runs_dir=runs_dir, progress=False))
    return made


@pytest.fixture(scope="module")
def drawn(runs: list[Run], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The report on both runs, with every Figure its chart section drew (by axes title)."""
    figures: list[Figure] = []

    def keep(fig: Figure) -> str:
        figures.append(fig)
        return "data:image/png;base64,"

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_render, "figure_to_data_uri", keep)
        paths = report.build_report(runs, tmp_path_factory.mktemp("report"))
    titled: dict[str, list[Figure]] = defaultdict(list)
    for fig in figures:
        titled[fig.axes[0].get_title().split("\n")[0] if fig.axes else ""].append(fig)
    return {"html": paths.html.read_text(encoding="utf-8"), "figures": titled}


def _summary_csv(run: Run) -> list[dict[str, str]]:
    """The run's own summary as the sweep wrote it (``summary.csv``), one dict per lane."""
    with (run.path / "summary.csv").open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _expected_labels(runs: list[Run]) -> list[str]:
    """``run: configuration`` of every lane, from each run's own summary file."""
    return [f"{run.name}: {row['label']}" for run in runs for row in _summary_csv(run)]


def _legend(ax: Axes) -> list[str]:
    legend = ax.get_legend()
    assert legend is not None
    return [text.get_text() for text in legend.get_texts()]


def _bars(ax: Axes) -> list[BarContainer]:
    return [c for c in ax.containers if isinstance(c, BarContainer)]


def _one(drawn: dict[str, Any], title: str) -> Axes:
    figures = drawn["figures"][title]
    assert len(figures) == 1, f"{title}: {len(figures)} charts"
    return figures[0].axes[0]


def test_one_chart_section_names_the_runs_overlaid(runs: list[Run], drawn: dict[str, Any]) -> None:
    html = drawn["html"]
    assert html.count("<h2>Charts: ") == 1
    assert "<h2>Charts: capped, strict overlaid</h2>" in html
    for title, _ in report_render.CHARTS:
        assert html.count(f"<img alt='{title}'") <= len(dict(report_render.CHARTS)[title])


def test_fact_growth_has_one_line_per_run_and_configuration(
    runs: list[Run], drawn: dict[str, Any]
) -> None:
    ax = _one(drawn, "Fact growth")
    labels = _expected_labels(runs)
    assert _legend(ax) == labels
    lines = {line.get_label(): line for line in ax.get_lines() if line.get_label() in labels}
    assert len(lines) == 4
    for run in runs:
        # Mean stored facts per owner after each session, by hand from sessions.jsonl.
        facts: dict[tuple[str, int], list[int]] = defaultdict(list)
        for row in _jsonl(run.path / "sessions.jsonl"):
            facts[(row["lane_id"], row["session_index"])].append(row["facts"])
        for row in _summary_csv(run):
            line = lines[f"{run.name}: {row['label']}"]
            sessions = sorted(s for lane, s in facts if lane == row["lane_id"])
            expected = [np.mean(facts[(row["lane_id"], s)]) for s in sessions]
            assert list(line.get_xdata()) == sessions
            assert np.allclose(np.asarray(line.get_ydata(), dtype=float), expected)


def test_bars_have_one_bar_per_run_and_configuration(
    runs: list[Run], drawn: dict[str, Any]
) -> None:
    labels = _expected_labels(runs)
    parse = _one(drawn, "Parse outcome per configuration")
    ticks = [t.get_text().split("\n")[0] for t in parse.get_yticklabels()]
    assert ticks == labels
    assert [len(bars) for bars in _bars(parse)] == [4]  # parsed ok: no failure in this run
    assert _legend(parse)[-1] == "parsed ok"

    duplication = _one(drawn, "Duplication among stored facts")
    assert [t.get_text() for t in duplication.get_xticklabels()] == labels
    assert [len(bars) for bars in _bars(duplication)] == [4, 4, 4]

    tokens = _one(drawn, "Token use per update")
    assert [t.get_text() for t in tokens.get_xticklabels()] == labels
    prompt_bars = _bars(tokens)[0]
    expected = []
    for run in runs:  # mean prompt tokens per update, by hand from calls.jsonl
        calls = _jsonl(run.path / "calls.jsonl")
        for row in _summary_csv(run):
            mine = [c["prompt_tokens"] for c in calls if c["lane_id"] == row["lane_id"]]
            expected.append(sum(mine) / len(mine))
    assert np.allclose([bar.get_height() for bar in prompt_bars], expected)


def test_operating_curve_keys_each_line_by_its_run(runs: list[Run], drawn: dict[str, Any]) -> None:
    ax = _one(drawn, "Operating curve: confidence threshold x max_facts")
    legend = _legend(ax)
    # capped varies max_facts: one line per cap; strict varies the threshold only: one line
    # joining its two thresholds, never a point of the other run.
    series = ["capped: [simulated] max_facts=10", "capped: [simulated] max_facts=40"]
    series.append("strict: [simulated] all")
    assert legend[:3] == series
    assert legend[3:] == ["threshold 0.3", "threshold 0.7", "threshold 0.8"]
    lines = {line.get_label(): line for line in ax.get_lines()}
    capped, strict = (_summary_csv(run) for run in runs)
    for name, rows in (("capped", capped), ("strict", strict)):
        for row in rows:
            if name == "capped":
                line = lines[f"capped: [simulated] max_facts={row['max_facts']}"]
                assert list(line.get_xdata()) == [float(row["precision"])]
            else:
                line = lines["strict: [simulated] all"]
                rows_by_thr = sorted(rows, key=lambda r: float(r["fact_confidence_threshold"]))
                assert np.allclose(
                    np.asarray(line.get_ydata(), dtype=float),
                    [float(r["recall"]) for r in rows_by_thr],
                )


def test_injection_coverage_draws_each_run_along_its_budget(
    runs: list[Run], drawn: dict[str, Any]
) -> None:
    ax = _one(drawn, "What reaches the agent: injected gold coverage")
    series = [
        "capped: [simulated] max_facts=10",
        "capped: [simulated] max_facts=40",
        "strict: [simulated] fact_confidence_threshold=0.3",
        "strict: [simulated] fact_confidence_threshold=0.8",
    ]
    assert _legend(ax) == series
    lines = {line.get_label(): line for line in ax.get_lines()}
    budgets = {"capped": 300.0, "strict": 900.0}
    for run in runs:
        for row in _summary_csv(run):
            axis = "max_facts" if run.name == "capped" else "fact_confidence_threshold"
            line = lines[f"{run.name}: [simulated] {axis}={row[axis]}"]
            assert list(line.get_xdata()) == [budgets[run.name]]
            assert np.allclose(line.get_ydata(), [float(row["injected_gold_coverage"])])


def test_chart_tables_are_each_runs_own_numbers_named_by_run(
    runs: list[Run], drawn: dict[str, Any]
) -> None:
    overlay = Overlay.of(runs)
    for _, row in report_render.CHARTS:
        for chart in row:
            shown = chart_numbers(chart, overlay)
            parts = []
            for run in runs:  # each run read afresh, its chart numbers on their own
                own = chart_numbers(chart, load_run(run.path))
                if "configuration" in own.columns:
                    own = own.assign(configuration=f"{run.name}: " + own["configuration"])
                parts.append(own)
            expected = pd.concat(parts, ignore_index=True)
            assert shown.astype(str).equals(expected.astype(str)), chart.__name__
    # The report prints them: every row names its run.
    for label in _expected_labels(runs):
        assert f'<td class="">{label}</td>' in drawn["html"]


def test_a_single_run_report_keeps_its_own_chart_section(runs: list[Run], tmp_path: Path) -> None:
    run = runs[0]
    html = report.build_report([run], tmp_path).html.read_text(encoding="utf-8")
    assert html.count("<h2>Charts: ") == 1
    assert "<h2>Charts: capped</h2>" in html
    section = html.split("<h2>Charts: capped</h2>", 1)[1].split("</details>\n", 1)[0]
    numbers = chart_numbers(charts.fact_growth_chart, load_run(run.path))
    # The run's own labels, no run name before them.
    assert set(numbers["configuration"]) == {"[simulated] max=10", "[simulated] max=40"}
    for label in numbers["configuration"]:
        assert f'<td class="">{label}</td>' in section
    assert "capped: " not in section


def test_real_lanes_come_first_and_runs_of_one_name_stay_apart(
    runs: list[Run], tmp_path: Path
) -> None:
    backend = ScriptedBackend(["{}"], repeat_last=True)
    real = sweep(
        "smoke",
        Grid.from_mapping({"name": "plain", "max_owners": 1}),
        runs_dir=tmp_path,
        backend_factory=lambda _s: backend,
        progress=False,
    )
    again = load_run(runs[0].path)
    overlay = Overlay.of([runs[0], real, again])
    labels = [overlay.label(lane) for lane in overlay.lanes]
    assert [name for name, _ in overlay.members] == ["capped", "plain", "capped (2)"]
    assert labels[0] == f"plain: {real.label(next(iter(real.lanes)))}"
    assert "[simulated]" not in labels[0]
    assert all(": [simulated] " in label for label in labels[1:])
    assert len(labels) == len(set(labels)) == 5
    ticks = charts.parse_failure_chart(overlay).axes[0].get_yticklabels()
    assert [re.sub(r"\n.*", "", t.get_text(), flags=re.S) for t in ticks] == labels
    with pytest.raises(OverlayError, match="overlays runs"):
        _ = overlay.dir


def test_memory_qa_charts_overlay_runs_graded_alike(
    runs: list[Run], tmp_path_factory: pytest.TempPathFactory
) -> None:
    where = tmp_path_factory.mktemp("qa")
    spec = {"answer_backend": "sim:careful", "conditions": ["memory", "none"]}
    asked = []
    for run in runs:
        shutil.copytree(run.path, where / run.name)
        asked.append(add_qa(where / run.name, spec, progress=False))
    figures: list[Figure] = []

    def keep(fig: Figure) -> str:
        figures.append(fig)
        return "data:image/png;base64,"

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_render, "figure_to_data_uri", keep)
        html = report.build_report(asked, where / "report").html.read_text(encoding="utf-8")
    assert html.count("<h3>Accuracy per condition: ") == 1
    assert "<h3>Accuracy per condition: capped, strict overlaid</h3>" in html
    title = "Memory QA: answerable questions per condition"
    (fig,) = [f for f in figures if f.axes and f.axes[0].get_title() == title]
    ax = fig.axes[0]
    labels = _expected_labels(runs)
    assert [t.get_text() for t in ax.get_yticklabels()] == labels
    assert _legend(ax) == ["memory", "none"]
    memory = _bars(ax)[0]
    expected = []
    for run in asked:  # each run's own accuracy under its own judge, read afresh
        own = load_run(run.path)
        table = accuracy_table(own.qa_answers, judges=[own.judge], options=own.stats)
        rows = table[table["condition"] == "memory"].set_index("lane_id")
        expected += [float(rows.loc[lane, "accuracy"]) for lane in own.lanes]
    assert np.allclose([bar.get_width() for bar in memory], expected)
