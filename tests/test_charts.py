"""Every chart returns a populated matplotlib Figure and never touches pyplot's global state."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pytest
from builders import iso, marker_backend, one_turn, sweep_scripted, update, write_owners
from matplotlib.collections import PatchCollection
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from memlab.backends.scripted import ScriptedBackend
from memlab.grids.grid import Grid
from memlab.reporting.figures import charts
from memlab.runs.run import Run
from memlab.sweeps.driver import sweep

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)

CHARTS: list[Callable[[Run], Figure]] = [
    charts.parse_failure_chart,
    charts.violation_heatmap,
    charts.fact_growth_chart,
    charts.duplication_chart,
    charts.operating_curve_chart,
    charts.tokens_chart,
]


def bad_confidence() -> str:
    data = json.loads(update(("Plays chess", 0.9)))
    data["newFacts"][0]["confidence"] = "high"
    return json.dumps(data)


# Markers are conversation phrases that never appear in the stored memory JSON.
REPLIES = {
    "[s:nurse]": update(("Works as a nurse in Leeds", 0.95), ("Has a cat", 0.75)),
    "[s:hike]": update(("Loves hiking", 0.9), ("Loves hiking!", 0.9)),
    "[case:prose]": "Sure, noted.",
    "[case:schema]": bad_confidence(),
}


def write_dataset(path: Path) -> Path:
    day = timedelta(days=1)
    ann = {
        "user_id": "ann",
        "sessions": [
            one_turn(
                "ann-1",
                T0,
                "I work as a nurse in Leeds. [s:nurse]",
                facts=[{"id": "g1", "content": "Works as a nurse in Leeds", "category": "context"}],
            ),
            one_turn(
                "ann-2",
                T0 + day,
                "I love hiking. [s:hike]",
                facts=[{"id": "g2", "content": "Loves hiking", "category": "preference"}],
            ),
            one_turn("ann-3", T0 + 2 * day, "Hello [case:prose]", noise=True),
            one_turn("ann-4", T0 + 3 * day, "Hello [case:schema]", noise=True),
        ],
    }
    write_owners(path, [ann])
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("charts")
    backend = marker_backend(REPLIES)
    grid = Grid.from_mapping(
        {
            "name": "charts",
            "replay_mode": "per_session",
            "axes": {"fact_confidence_threshold": [0.7, 0.8], "max_facts": [10, 20]},
        }
    )
    return sweep(
        write_dataset(tmp / "d.jsonl"),
        grid,
        runs_dir=tmp / "runs",
        backend_factory=lambda spec: backend,
        progress=False,
    )


@pytest.fixture(scope="module")
def empty_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A run whose sessions never end an agent run: no LLM calls, no facts."""
    tmp = tmp_path_factory.mktemp("empty")
    owner = {
        "user_id": "quiet",
        "sessions": [
            {
                "thread_id": "q-1",
                "started_at": iso(T0),
                "messages": [{"role": "human", "content": "hi", "timestamp": iso(T0)}],
                "labels": {"noise": True},
            }
        ],
    }
    path = tmp / "empty.jsonl"
    write_owners(path, [owner])
    backend = ScriptedBackend(["unused"])
    result = sweep_scripted(path, {"name": "empty"}, backend, tmp / "runs")
    assert backend.call_count == 0
    return result


@pytest.fixture(autouse=True)
def _no_pyplot(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    plt.close("all")

    def forbidden(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a chart function called plt.show()")

    monkeypatch.setattr(plt, "show", forbidden)
    yield
    assert plt.get_fignums() == [], "a chart function created a pyplot-managed figure"


def texts_of(fig: Figure) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts)


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.__name__)
def test_chart_returns_populated_figure(chart: Callable[[Run], Figure], run: Run) -> None:
    fig = chart(run)
    assert isinstance(fig, Figure)
    assert fig.axes, "no axes"
    ax = fig.axes[0]
    artists = ax.lines + ax.patches + ax.images + ax.collections
    assert artists, f"{chart.__name__} drew nothing"
    assert ax.get_title()
    fig.savefig(Path("/dev/null"), format="png")  # renders without pyplot


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.__name__)
def test_chart_on_empty_run_says_so(chart: Callable[[Run], Figure], empty_run: Run) -> None:
    fig = chart(empty_run)
    assert isinstance(fig, Figure)
    assert fig.axes
    if chart is not charts.fact_growth_chart:  # growth still plots the zero line
        assert "no " in texts_of(fig)


def test_parse_failure_chart_stacks_categories(run: Run) -> None:
    fig = charts.parse_failure_chart(run)
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"no_json", "schema_violation", "parsed ok"} <= set(legend)
    # 4 lanes, 4 calls each: 2 failures -> 50 % failed per lane, said in each lane's tick
    # label (where no bar or whisker crosses it) with the interval when there is one.
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert len(ticks) == 4
    assert all(re.search(r"\n50\.0%( \[[-\d.%, ]+\])? failed$", t) for t in ticks), ticks
    widths = [p.get_width() for p in ax.patches if isinstance(p, Rectangle)]
    assert sum(widths) == pytest.approx(4.0)
    # Per lane: prose (no_json) and bad confidence (schema_violation) are 1 of 4 replies each,
    # stacked left to right, then the 2 parsed replies.
    segments = {str(c.get_label()): c.patches for c in ax.containers}
    expected = {"no_json": (0.0, 0.25), "schema_violation": (0.25, 0.25), "parsed ok": (0.5, 0.5)}
    for name, (left, width) in expected.items():
        bars = segments[name]
        assert len(bars) == 4, name
        assert [(b.get_x(), b.get_width()) for b in bars] == [pytest.approx((left, width))] * 4


def test_violation_heatmap_rows_are_pointer_and_keyword(run: Run) -> None:
    fig = charts.violation_heatmap(run)
    ax = fig.axes[0]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows == ["/newFacts/*/confidence  [type]"]
    image = next(a for a in ax.get_children() if isinstance(a, AxesImage))
    assert image.get_array().shape == (1, 4)
    assert image.get_array().sum() == 4


def test_fact_growth_has_one_curve_per_lane_and_cap_lines(run: Run) -> None:
    fig = charts.fact_growth_chart(run)
    ax = fig.axes[0]
    curves = [line for line in ax.lines if line.get_marker() == "o"]
    assert len(curves) == 4
    caps = {
        line.get_ydata()[0]
        for line in ax.lines
        if isinstance(line, Line2D) and line.get_linestyle() == "--"
    }
    assert caps == {10, 20}
    assert "max_facts=10" in texts_of(fig)
    # thr=0.7 lanes: nurse + cat after session 1; both hiking facts after session 2 (the
    # baseline merge only skips exact casefolded repeats, so "Loves hiking!" is kept).
    low = [c for c in curves if "thr=0.7" in str(c.get_label())]
    assert [list(c.get_ydata()) for c in low] == [[2, 4, 4, 4]] * 2
    high = [c for c in curves if "thr=0.8" in str(c.get_label())]
    assert [list(c.get_ydata()) for c in high] == [[1, 3, 3, 3]] * 2


def test_duplication_and_tokens_have_one_group_per_lane(run: Run) -> None:
    dup = charts.duplication_chart(run).axes[0]
    assert len(dup.get_xticklabels()) == 4
    assert len([p for p in dup.patches if isinstance(p, Rectangle)]) == 12  # 3 kinds x 4 lanes
    # "Loves hiking" and "Loves hiking!" are one normalized (and near) duplicate pair, among
    # 4 stored facts at threshold 0.7 (nurse, cat, both hiking facts) and 3 at 0.8 (no cat).
    heights = {str(c.get_label()): [b.get_height() for b in c.patches] for c in dup.containers}
    per_lane = [1 / 4, 1 / 4, 1 / 3, 1 / 3]  # lanes in grid order: t0.7 m10, m20, t0.8 ...
    assert heights == {
        "exact": [0.0] * 4,
        "normalized": pytest.approx(per_lane),
        "near": pytest.approx(per_lane),
    }
    tokens = charts.tokens_chart(run).axes[0]
    bars = [p for p in tokens.patches if isinstance(p, Rectangle)]
    assert len(bars) == 8  # prompt + completion per lane
    prompt, completion = (list(c.patches) for c in tokens.containers)
    calls = run.calls.groupby("lane_id")[["prompt_tokens", "completion_tokens"]].mean()
    calls = calls.reindex(list(run.lanes))
    assert [b.get_height() for b in prompt] == pytest.approx(list(calls["prompt_tokens"]))
    # The scripted backend counts len(reply) // 4 completion tokens; every lane gets the same
    # four replies (nurse, hiking, prose, bad confidence).
    replies = [REPLIES["[s:nurse]"], REPLIES["[s:hike]"], "Sure, noted.", bad_confidence()]
    mean_completion = sum(len(r) // 4 for r in replies) / 4
    assert [b.get_height() for b in completion] == pytest.approx([mean_completion] * 4)
    assert [b.get_y() for b in completion] == pytest.approx([b.get_height() for b in prompt])
    # Lanes at threshold 0.7 hold one more fact in the memory shown in their prompts.
    assert prompt[0].get_height() > prompt[2].get_height()


def test_operating_curve_joins_thresholds_per_max_facts(run: Run) -> None:
    fig = charts.operating_curve_chart(run)
    ax = fig.axes[0]
    joined = [line for line in ax.lines if line.get_linestyle() != "None"]
    assert len(joined) == 2  # one per max_facts value
    labels = sorted(str(line.get_label()) for line in joined)
    assert labels == ["max_facts=10", "max_facts=20"]  # named by the varying axes
    for line in joined:
        assert len(line.get_xdata()) == 2  # thresholds 0.7 and 0.8
        assert all(0 <= v <= 1 for v in line.get_ydata())
    # Each threshold is a marker shape the legend names (no label beside the points).
    points = [line for line in ax.lines if line.get_linestyle() == "None"]
    shapes = {str(line.get_label()): line.get_marker() for line in points}
    assert shapes["threshold 0.7"] != shapes["threshold 0.8"]
    plotted = [line for line in points if len(line.get_xdata())]
    assert sorted(line.get_marker() for line in plotted) == sorted(
        [shapes["threshold 0.7"], shapes["threshold 0.8"]] * 2
    )
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"threshold 0.7", "threshold 0.8", "max_facts=10"} <= set(legend)
    assert not any(isinstance(c, PatchCollection) for c in ax.collections)


@pytest.fixture(scope="module")
def owners_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Six owners, one session each: four answered with facts, two with prose."""
    tmp = tmp_path_factory.mktemp("owners")
    fact = {"id": "g1", "content": "Works as a nurse in Leeds", "category": "context"}
    owners = [
        {
            "user_id": f"o{i}",
            "sessions": [
                one_turn(
                    f"o{i}-1",
                    T0 + timedelta(hours=i),
                    "I work as a nurse in Leeds. " + ("[s:nurse]" if i < 4 else "[case:prose]"),
                    facts=[fact],
                )
            ],
        }
        for i in range(6)
    ]
    path = tmp / "owners.jsonl"
    write_owners(path, owners)
    backend = marker_backend(REPLIES)
    grid = {
        "name": "owners",
        "replay_mode": "per_session",
        "axes": {"fact_confidence_threshold": [0.7, 0.8]},
    }
    return sweep_scripted(path, grid, backend, tmp / "runs")


def flat(pairs: list[tuple[float, float]]) -> list[float]:
    return [value for pair in pairs for value in pair]


def error_spans(ax: Any, axis: int) -> list[tuple[float, float]]:
    """(low, high) of every error bar drawn on ``ax`` along ``axis`` (0 = x, 1 = y)."""
    spans = []
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer):
            for collection in container.lines[2]:
                for segment in collection.get_segments():
                    spans.append((float(segment[0][axis]), float(segment[1][axis])))
    return spans


def test_parse_failure_bars_carry_the_interval(owners_run: Run) -> None:
    summary = owners_run.summary
    expected = sorted(
        (lo, hi)
        for lo, hi in zip(
            summary["parse_failure_rate_lo"], summary["parse_failure_rate_hi"], strict=True
        )
    )
    assert all(lo < 1 / 3 < hi for lo, hi in expected)
    spans = sorted(error_spans(charts.parse_failure_chart(owners_run).axes[0], axis=0))
    assert flat(spans) == pytest.approx(flat(expected))


def test_duplication_chart_has_error_bars_on_the_near_rate(owners_run: Run) -> None:
    ax = charts.duplication_chart(owners_run).axes[0]
    spans = error_spans(ax, axis=1)
    summary = owners_run.summary
    # One bar per lane (near duplicates); 0 duplicates everywhere: the interval is [0, 0].
    assert spans == [
        (lo, hi)
        for lo, hi in zip(summary["duplicate_rate_lo"], summary["duplicate_rate_hi"], strict=True)
    ]


def test_operating_curve_shows_precision_and_recall_intervals(owners_run: Run) -> None:
    ax = charts.operating_curve_chart(owners_run).axes[0]
    summary = owners_run.summary
    recall = sorted(zip(summary["recall_lo"], summary["recall_hi"], strict=True))
    precision = sorted(zip(summary["precision_lo"], summary["precision_hi"], strict=True))
    assert recall[0][0] < recall[0][1]  # owners differ: a real interval
    vertical = sorted(s for s in error_spans(ax, axis=1) if s[0] != s[1])
    horizontal = sorted(s for s in error_spans(ax, axis=0) if s[0] != s[1])
    # A bar wherever the interval has width; none where too few owners give no interval (NaN).
    drawn = lambda spans: [s for s in spans if s[0] == s[0] and s[0] != s[1]]  # noqa: E731
    assert flat(vertical) == pytest.approx(flat(drawn(recall)))
    assert flat(horizontal) == pytest.approx(flat(drawn(precision)))


def test_a_chart_without_labelled_series_draws_no_legend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every answer right: the causes chart stacks no labelled bar, so it draws no legend and
    matplotlib has nothing to warn about (a report printed "No artists with labels found")."""
    from types import SimpleNamespace

    import pandas as pd

    from memlab.reporting.qa import qa_charts
    from memlab.scoring.qa.qa_causes import CAUSES

    table = pd.DataFrame([{"lane_id": "a", **dict.fromkeys(CAUSES, 0), "wrong": 0, "answered": 3}])
    monkeypatch.setattr(qa_charts, "cause_table", lambda answers, judge: table)
    run = SimpleNamespace(
        lanes={"a": None}, qa_answers=pd.DataFrame({"x": [1]}), judge="strict", label=str
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = qa_charts.qa_causes_chart(run)  # type: ignore[arg-type]
    assert fig.axes[0].get_legend() is None
    assert " 0 of 3" in texts_of(fig)


def test_the_legend_helper_draws_a_legend_for_labelled_series() -> None:
    fig = Figure()
    ax = fig.subplots()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ax.plot([0, 1], [0, 1])
        charts.legend(ax)
        assert ax.get_legend() is None
        ax.plot([0, 1], [1, 0], label="down")
        charts.legend(ax, fontsize=7)
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == ["down"]
