"""The main job: both parts run, the simulated study shows the cap and the threshold at work,
and a second run reuses every finished replay."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import small_demo, update

from memlab.backends.decoding.grammar import bounded_reply_tokens
from memlab.backends.scripted import ScriptedBackend
from memlab.cli.experiment.demo import BOUNDS, SIM_GRID, DemoResult
from memlab.core.jsondoc.contract import SchemaBounds


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[DemoResult, ScriptedBackend, Path]:
    # A scripted stand-in for the real local model (unit tests make no model requests).
    backend = ScriptedBackend([update("Works as a paediatric nurse")], repeat_last=True)
    tmp = tmp_path_factory.mktemp("demo")
    return small_demo(tmp, backend), backend, tmp


def test_part_one_replays_the_real_lanes_with_bounds(
    demo: tuple[DemoResult, ScriptedBackend, Path],
) -> None:
    result, backend, _ = demo
    labels = [label for run in result.real for label in run.summary["label"]]
    assert labels == ["prompt=default", "prompt=concise"] * 2
    modes = [lane.output_mode.value for run in result.real for lane in run.lanes.values()]
    assert modes == ["free", "free", "json_schema", "json_schema"]
    sent = [r.schema for r in backend.requests if r.schema is not None]
    assert sent and all(
        s["properties"]["newFacts"]["maxItems"] == BOUNDS["max_new_facts"] for s in sent
    )


def test_part_two_shows_the_cap_and_the_threshold_at_work(
    demo: tuple[DemoResult, ScriptedBackend, Path],
) -> None:
    summary = demo[0].simulated.summary.set_index(["fact_confidence_threshold", "max_facts"])
    thresholds = SIM_GRID["axes"]["fact_confidence_threshold"]
    caps = SIM_GRID["axes"]["max_facts"]
    assert len(summary) == len(thresholds) * len(caps) >= 9
    assert (summary["owners"] == 14).all()
    assert (summary["final_facts"] > 0).all()
    sessions = demo[0].simulated.sessions
    lanes = demo[0].simulated.lanes
    for lane_id, rows in sessions.groupby("lane_id"):
        assert rows["facts"].max() <= lanes[lane_id].max_facts
    # The smallest cap bites in every threshold; the largest never does at the top threshold.
    assert (summary.xs(min(caps), level="max_facts")["evicted"] > 0).all()
    assert summary.loc[(max(thresholds), max(caps)), "evicted"] == 0
    # A higher threshold filters more proposals and stores fewer facts under the same cap.
    uncapped = summary.xs(max(caps), level="max_facts").sort_index()
    assert uncapped["skipped_below_threshold"].is_monotonic_increasing
    assert uncapped["final_facts"].is_monotonic_decreasing
    assert uncapped["precision"].is_monotonic_increasing


def test_the_report_opens_with_both_parts(demo: tuple[DemoResult, ScriptedBackend, Path]) -> None:
    html = demo[0].paths.html.read_text(encoding="utf-8")
    intro = html.split("<ul class='intro'>", 1)[1].split("</ul>", 1)[0]
    assert "Part 1" in intro and "Part 2" in intro and "simulated" in intro
    # The demo's three runs are drawn in one chart set, the runs overlaid.
    assert html.count("<h2>Charts: ") == 1
    heading = html.split("<h2>Charts: ", 1)[1].split("</h2>", 1)[0]
    assert heading.endswith(" overlaid") and heading.count(", ") == 2, heading


def test_a_second_run_reuses_every_replay(demo: tuple[DemoResult, ScriptedBackend, Path]) -> None:
    _, backend, tmp = demo
    calls = backend.call_count
    again = small_demo(tmp, backend)
    assert backend.call_count == calls
    assert again.paths.html.exists()


def test_the_report_counts_this_runs_replies(
    demo: tuple[DemoResult, ScriptedBackend, Path],
) -> None:
    """The intro's numbers come from the run: every scripted reply parses, none is cut."""
    result = demo[0]
    html = result.paths.html.read_text(encoding="utf-8")
    intro = html.split("<ul class='intro'>", 1)[1].split("</ul>", 1)[0]
    bound = bounded_reply_tokens(SchemaBounds(**BOUNDS), "compact")
    for run in result.real:
        for lane_id, lane in run.lanes.items():
            replies = int(((run.calls["lane_id"] == lane_id) & run.calls["reply"].notna()).sum())
            assert replies > 0
            phrase = f"{run.label(lane_id)} ({run.name}, max_tokens {lane.max_tokens}): "
            assert f"{phrase}{replies} of {replies} replies parsed, 0 truncated" in intro
            if lane.schema_bounds is not None:
                assert lane.max_tokens == bound
