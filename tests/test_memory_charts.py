"""Charts of stale survival, eviction regret and injected coverage: the numbers they draw."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from builders import marker_backend, one_turn, sweep_scripted, update, write_owners
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from memlab.backends.scripted import ScriptedBackend
from memlab.grids.grid import Grid
from memlab.reporting.figures import charts
from memlab.reporting.figures.chart_tables import chart_numbers
from memlab.runs.run import Run
from memlab.sweeps.driver import sweep

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
NURSE = {"id": "nurse", "content": "Works as a nurse in Leeds", "category": "context"}
CAT = {"id": "cat", "content": "Has a cat named Tom", "category": "context"}
TEACHER = {"id": "teacher", "content": "Works as a teacher", "category": "correction"}
REPLIES = {
    "[m0]": update(("Works as a nurse in Leeds", 0.95), ("Has a cat named Tom", 0.75)),
    "[m1]": update("Works as a teacher"),  # the nurse fact is never removed
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp: Path = tmp_path_factory.mktemp("memory-charts")
    day = timedelta(days=1)
    owner = {
        "user_id": "ann",
        "sessions": [
            one_turn("a-0", T0, "[m0]", facts=[NURSE, CAT]),
            one_turn("a-1", T0 + day, "[m1]", facts=[TEACHER], retracts=["nurse"]),
            one_turn("a-2", T0 + 2 * day, "Any tips for my cat Tom?"),
        ],
    }
    data = tmp / "d.jsonl"
    write_owners(data, [owner])
    backend = marker_backend(REPLIES)
    grid = {
        "name": "memory-charts",
        "replay_mode": "per_session",
        "axes": {"fact_confidence_threshold": [0.7, 0.8], "max_injection_tokens": [100, 2000]},
    }
    return sweep_scripted(data, grid, backend, tmp / "runs")


def texts(fig: Figure) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts)


def test_eviction_regret_bars(run: Run) -> None:
    fig = charts.eviction_regret_chart(run)
    widths = [p.get_width() for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    # thr 0.8 rejects the cat (0.75): 1 of the 2 active gold facts at the end (teacher, cat).
    expected = [0.5 if c.fact_confidence_threshold == 0.8 else 0.0 for c in run.lanes.values()]
    assert widths == pytest.approx(expected)
    # Each lane's tick label gives the value and counts the rejection (one, in session 0).
    ticks = [t.get_text().split("\n")[1] for t in fig.axes[0].get_yticklabels()]
    assert sum(t.startswith("50.0%") and t.endswith("; cap 0, thr 1") for t in ticks) == 2
    assert sum(t.startswith("0.0%") and t.endswith("; cap 0, thr 0") for t in ticks) == 2


def test_eviction_regret_numbers_are_the_charts(run: Run) -> None:
    ticks = [t.get_text() for t in charts.eviction_regret_chart(run).axes[0].get_yticklabels()]
    numbers = chart_numbers(charts.eviction_regret_chart, run)
    assert len(numbers) == len(ticks) == len(run.lanes)
    for tick, (_, row) in zip(ticks, numbers.iterrows(), strict=True):
        label, shown = tick.split("\n")
        assert label == row["configuration"]
        assert shown == f"{row['eviction regret']}; cap {row['cap']}, thr {row['thr']}"


def test_stale_survival_curves(run: Run) -> None:
    fig = charts.stale_survival_chart(run)
    ax = fig.axes[0]
    # Per lane: the nurse fact, still held at the 2 session ends left (censored): never
    # removed, so the Kaplan-Meier curve stays at 1 and the restricted mean is the horizon.
    assert len(ax.lines) == 4
    for line in ax.lines:
        assert list(np.asarray(line.get_ydata())) == [1.0, 1.0, 1.0, 1.0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert all(text.endswith("(RMST 3 [-])") for text in legend) and len(legend) == 4


def test_injection_coverage_lines(run: Run) -> None:
    fig = charts.injection_coverage_chart(run)
    lines = {line.get_label(): line for line in fig.axes[0].lines}
    # Budgets do not bind for three short facts; the 0.8 threshold keeps the cat out:
    # after session 0 one of (nurse, cat), after session 1 one of (teacher, cat).
    assert set(lines) == {"fact_confidence_threshold=0.7", "fact_confidence_threshold=0.8"}
    for label, coverage in (("0.7", 1.0), ("0.8", 0.5)):
        line = lines[f"fact_confidence_threshold={label}"]
        assert list(np.asarray(line.get_xdata())) == [100, 2000]
        assert list(np.asarray(line.get_ydata())) == pytest.approx([coverage, coverage])


def test_memory_charts_on_an_empty_run(tmp_path: Path) -> None:
    owner = {"user_id": "q", "sessions": [one_turn("q-1", T0, "hi", noise=True)]}
    write_owners(tmp_path / "q.jsonl", [owner])
    backend = ScriptedBackend([update()])
    empty = sweep(
        tmp_path / "q.jsonl",
        Grid.from_mapping({"name": "q", "replay_mode": "per_session"}),
        runs_dir=tmp_path / "runs",
        backend_factory=lambda spec: backend,
        progress=False,
    )
    for chart in (
        charts.stale_survival_chart,
        charts.eviction_regret_chart,
        charts.injection_coverage_chart,
    ):
        assert "no " in texts(chart(empty)), chart.__name__
