"""Simulated lanes are labelled in every table, chart and report; empty charts say what is true."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import write_owners
from matplotlib.figure import Figure

from memlab.backends.scripted import ScriptedBackend
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid
from memlab.reporting.figures import charts
from memlab.reporting.report import build_report
from memlab.runs.run import Run
from memlab.sweeps.driver import sweep


def _texts(fig: Figure) -> str:
    parts = [t.get_text() for ax in fig.axes for t in ax.texts]
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            parts += [t.get_text() for t in legend.get_texts()]
        parts += [t.get_text() for t in ax.get_yticklabels() + ax.get_xticklabels()]
    return " | ".join(parts)


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    grid = Grid.from_mapping(
        {
            "name": "sim-study",
            "max_owners": 3,
            "base": {"backend": "sim:chatty"},
            "axes": {"fact_confidence_threshold": [0.5, 0.9], "max_facts": [10, 20]},
        }
    )
    return sweep("personas", grid, runs_dir=tmp_path_factory.mktemp("runs"), progress=False)


def test_every_chart_labels_simulated_lanes(sim_run: Run) -> None:
    for chart in (
        charts.parse_failure_chart,
        charts.fact_growth_chart,
        charts.duplication_chart,
        charts.operating_curve_chart,
        charts.tokens_chart,
        charts.injection_coverage_chart,
    ):
        text = _texts(chart(sim_run))
        assert "[simulated]" in text, chart.__name__
    assert sim_run.summary["label"].str.startswith("[simulated] ").all()


def test_the_report_opens_with_the_intro_and_names_simulated_lanes(
    sim_run: Run, tmp_path: Path
) -> None:
    paths = build_report([sim_run], tmp_path, title="t", intro="Part one <shows> things.")
    html = paths.html.read_text(encoding="utf-8")
    body = html.split("<h1>t</h1>", 1)[1]
    opening = "<ul class='intro'><li>Part one &lt;shows&gt; things.</li><li>4 config"
    assert body.lstrip().startswith(opening)
    assert "marked [simulated] replay the simulated model" in body
    assert "Every setting of every configuration" in html
    md = paths.markdown.read_text(encoding="utf-8")
    # Markdown escapes the intro (md_escape): no raw HTML, no link syntax.
    assert md.splitlines()[2] == "- Part one \\<shows> things."
    assert md.splitlines()[3].startswith("- 4 configuration(s)")
    assert "\\[simulated\\] thr=0.5 max=10" in md


def test_a_report_without_simulated_lanes_has_no_note(tmp_path: Path) -> None:
    grid = Grid.from_mapping({"name": "plain", "max_owners": 1})
    backend = ScriptedBackend(["{}"], repeat_last=True)
    run = sweep(
        "smoke", grid, runs_dir=tmp_path, backend_factory=lambda _s: backend, progress=False
    )
    html = build_report([run], tmp_path / "r").html.read_text(encoding="utf-8")
    assert "intro" not in html.split("<style>")[0] + html.split("</style>")[1]
    assert "simulated" not in html


def test_empty_charts_say_whether_facts_were_stored_or_labeled(tmp_path: Path) -> None:
    mute = tmp_path / "mute.yaml"
    mute.write_text("name: mute\npropose_rate: 0\n", encoding="utf-8")
    grid = Grid.from_mapping({"name": "mute", "max_owners": 2, "base": {"backend": f"sim:{mute}"}})
    run = sweep("personas", grid, runs_dir=tmp_path, progress=False)
    assert run.summary["final_facts"].iloc[0] == 0
    expected = "no configuration stored a fact"
    assert expected in _texts(charts.operating_curve_chart(run))
    assert expected in _texts(charts.duplication_chart(run))
    assert expected in _texts(charts.fact_growth_chart(run))

    unlabeled = tmp_path / "unlabeled.jsonl"
    owner = json.loads(resolve_dataset("smoke").read_text(encoding="utf-8").splitlines()[0])
    for session in owner["sessions"]:
        session["labels"] = {"noise": True, "tags": ["noise"]}
    write_owners(unlabeled, [owner])
    backend = ScriptedBackend(["{}"], repeat_last=True)
    run = sweep(
        unlabeled,
        Grid.from_mapping({"name": "unlabeled"}),
        runs_dir=tmp_path,
        backend_factory=lambda _s: backend,
        progress=False,
    )
    assert "the dataset has no labeled facts" in _texts(charts.operating_curve_chart(run))
