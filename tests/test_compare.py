"""Paired comparisons end to end: scripted lanes, ``memlab.compare``, ``memlab compare``,
the regression gate and the statistics section of the reports.

Lanes differ by output mode, and the scripted model answers by mode:
- "clear": in ``json_schema`` mode the model reports both facts a session reveals; in
  ``json_object`` mode only the first, and its reply to every owner's last session is prose
  (a parse failure). Better on every owner: recall and parse failures differ significantly.
- "noise": in either mode the model reports the first fact, and the second one on a coin
  flip seeded by (owner, session, mode): no true difference between the modes.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from builders import one_turn, sweep_scripted, update, write_owners

from memlab import compare
from memlab.backends.scripted import ScriptedBackend
from memlab.cli.main import main
from memlab.core.pipeline.llm import CompletionRequest, OutputMode
from memlab.grids.grid import Grid, GridError
from memlab.reporting.compare.gate import check_regressions
from memlab.reporting.report import build_report
from memlab.runs.run import Run
from memlab.scoring.comparing.comparability import MixedComparisonError
from memlab.scoring.comparing.comparison import (
    COMPARE_COLUMNS,
    CompareError,
    Lane,
    describe,
    owner_deltas,
)
from memlab.scoring.metric_specs import interval_specs
from memlab.scoring.metrics import owner_counts

T0 = datetime(2025, 5, 5, 9, 0, tzinfo=UTC)
OWNERS = 16
HOBBIES = [
    ("Collects stamps", "Plays the violin"),
    ("Speaks Danish", "Grows tomatoes"),
    ("Drives a tractor", "Bakes sourdough"),
    ("Keeps bees", "Sails a dinghy"),
]
MARKER = re.compile(r"\[(u\d+):(\d)\]")


def owner(index: int) -> dict[str, Any]:
    """Owner ``u<index>`` with 2 to 4 sessions, each revealing two gold facts."""
    user = f"u{index:02d}"
    sessions = []
    for s in range(2 + index % 3):
        first, second = HOBBIES[s]
        sessions.append(
            one_turn(
                f"{user}-{s}",
                T0 + timedelta(days=s, minutes=index),
                f"Some news about me. [{user}:{s}]",
                facts=[
                    {"id": f"{user}-{s}a", "content": first, "category": "context"},
                    {"id": f"{user}-{s}b", "content": second, "category": "context"},
                ],
            )
        )
    return {"user_id": user, "sessions": sessions}


def coin(*key: object) -> bool:
    return hashlib.sha256(repr(key).encode()).digest()[0] % 2 == 0


def scripted(scenario: str) -> ScriptedBackend:
    sessions = {f"u{i:02d}": 2 + i % 3 for i in range(OWNERS)}

    def reply(request: CompletionRequest) -> str:
        found = MARKER.search(str(request.messages[-1]["content"]))
        if found is None:
            return update()
        user, s = found.group(1), int(found.group(2))
        first, second = HOBBIES[s]
        schema = request.mode is OutputMode.JSON_SCHEMA
        if scenario == "clear":
            if schema:
                return update(first, second)
            if s == sessions[user] - 1:
                return "Noted, thanks!"
            return update(first)
        return update(first, second) if coin(user, s, request.mode.value) else update(first)

    return ScriptedBackend(function=reply)


SweepFactory = Callable[[str, str, list[str]], Run]


@pytest.fixture(scope="module")
def make(tmp_path_factory: pytest.TempPathFactory) -> SweepFactory:
    tmp = tmp_path_factory.mktemp("compare")
    data = tmp / "owners.jsonl"
    data.write_text("".join(json.dumps(owner(i)) + "\n" for i in range(OWNERS)), "utf-8")

    def run(name: str, scenario: str, modes: list[str]) -> Run:
        backend = scripted(scenario)
        grid = {"name": name, "replay_mode": "per_session", "axes": {"output_mode": modes}}
        if len(modes) == 1:
            grid = {"name": name, "replay_mode": "per_session", "base": {"output_mode": modes[0]}}
        return sweep_scripted(data, grid, backend, tmp / "runs")

    return run


@pytest.fixture(scope="module")
def good(make: SweepFactory) -> Run:
    return make("good", "clear", ["json_schema"])


@pytest.fixture(scope="module")
def bad(make: SweepFactory) -> Run:
    return make("bad", "clear", ["json_object"])


@pytest.fixture(scope="module")
def noisy(make: SweepFactory) -> tuple[Run, Run]:
    return make("noise-a", "noise", ["json_object"]), make("noise-b", "noise", ["json_schema"])


@pytest.fixture(scope="module")
def both(make: SweepFactory) -> Run:
    return make("both", "clear", ["json_schema", "json_object"])


def rows(table: pd.DataFrame) -> dict[str, pd.Series]:
    return {str(row["metric"]): row for _, row in table.iterrows()}


def test_clearly_better_on_every_owner_is_significant(good: Run, bad: Run) -> None:
    table = compare(good, bad)
    assert list(table.columns) == list(COMPARE_COLUMNS)
    # Embedding duplicates and memory QA are not measured in these runs.
    unmeasured = {s.column for s in interval_specs() if "embedding" in s.column}
    unmeasured |= {s.column for s in interval_specs() if s.column.startswith("qa_")}
    assert set(table["metric"]) == {s.column for s in interval_specs()} - unmeasured
    by = rows(table)
    recall, failures = by["recall"], by["parse_failure_rate"]
    assert recall["owners"] == OWNERS
    assert recall["baseline"] == 1.0
    assert recall["delta"] < -0.3 and recall["delta_hi"] < 0
    assert recall["owners_worse"] == OWNERS and recall["owners_better"] == 0
    assert recall["p_value"] < 0.001 and recall["significant"]
    assert recall["verdict"] == "worse"
    assert failures["delta"] > 0 and failures["delta_lo"] > 0
    assert failures["verdict"] == "worse"
    # Precision is 100% on both sides: no change, and no test (no p-value, not in the family).
    for name in ("precision", "precision_macro"):
        assert by[name]["delta"] == 0 and math.isnan(by[name]["p_value"]), name
        assert by[name]["verdict"] == "no change" and math.isnan(by[name]["p_holm"])
    assert by["precision"]["role"] == "secondary" and by["precision_macro"]["role"] == "primary"


def test_same_model_up_to_noise_is_not_significant(noisy: tuple[Run, Run]) -> None:
    a, b = noisy
    by = rows(compare(a, b))
    recall = by["recall"]
    assert recall["owners_better"] > 0 and recall["owners_worse"] > 0
    assert recall["delta_lo"] < 0 < recall["delta_hi"]
    assert recall["p_value"] > 0.05
    assert not table_significant(by)


def table_significant(by: dict[str, pd.Series]) -> bool:
    return any(bool(row["significant"]) for row in by.values())


def test_holm_adjusts_over_the_primary_rows_that_changed(good: Run, bad: Run) -> None:
    table = compare(good, bad)
    tested = table["p_holm"].notna().to_numpy()
    # recall and parse failures; precision_macro did not change; the rest are secondary.
    assert sorted(table.loc[tested, "metric"]) == ["parse_failure_rate", "recall"]
    p, adjusted = table["p_value"].to_numpy()[tested], table["p_holm"].to_numpy()[tested]
    assert (adjusted >= p).all()
    assert adjusted[p.argmin()] == pytest.approx(min(1.0, p.min() * 2))
    # The first Holm step draws its interval at 1 - 0.05 / 2, the second at 1 - 0.05.
    assert sorted(table.loc[tested, "level"]) == pytest.approx([0.95, 0.975])
    secondary = table[table["role"] == "secondary"]
    assert (secondary["level"] == 0.95).all() and not secondary["significant"].any()


def test_lanes_within_one_run_against_the_first(both: Run, good: Run, bad: Run) -> None:
    table = compare(both)
    assert table["baseline_lane"].unique().tolist() == ["mode=json_schema"]
    assert table["lane"].unique().tolist() == ["mode=json_object"]
    within = rows(table)["recall"]
    across = rows(compare(good, bad))["recall"]
    assert within["delta"] == pytest.approx(across["delta"])
    named = compare(both, baseline_lane="mode=json_object")
    assert rows(named)["recall"]["delta"] == pytest.approx(-within["delta"])


def test_owner_deltas_match_the_pooled_delta_direction(good: Run, bad: Run) -> None:
    deltas = owner_deltas(
        Lane(good, next(iter(good.lanes))), Lane(bad, next(iter(bad.lanes))), "recall"
    )
    assert len(deltas) == OWNERS
    assert (deltas["delta"] < 0).all()
    assert (deltas["baseline"] == 1.0).all()


def test_describe_reads_like_the_report(good: Run, bad: Run) -> None:
    row = rows(compare(good, bad))["recall"]
    text = describe(row)
    assert re.fullmatch(
        r"-\d+\.\d pts \[-\d+\.\d, -\d+\.\d\] \(9\d\.?\d*% CI\), p < 0\.001, significant",
        text,
    ), text


def test_unknown_lane_metric_and_disjoint_owners(good: Run, both: Run, tmp_path: Path) -> None:
    with pytest.raises(CompareError, match="no lane 'nope'"):
        compare(both, baseline_lane="nope")
    with pytest.raises(CompareError, match="not a rate"):
        compare(good, both, metrics=["final_facts"])
    other = tmp_path / "other.jsonl"
    stranger = owner(1) | {"user_id": "stranger"}
    write_owners(other, [stranger])
    backend = scripted("clear")
    run = sweep_scripted(
        other, {"name": "stranger", "replay_mode": "per_session"}, backend, tmp_path / "runs"
    )
    with pytest.raises(MixedComparisonError, match="different dataset: sha256 "):
        compare(good, run)
    with pytest.raises(CompareError, match="share no owners"):
        compare(good, run, allow_mixed=True)


def test_compare_command_prints_the_table(
    good: Run, bad: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_csv = tmp_path / "cmp.csv"
    code = main(
        ["compare", str(good.path), str(bad.path), "--resamples", "500", "--csv", str(out_csv)]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("baseline: good: default;")
    assert "2 primary tests Holm-corrected at alpha 0.05 (the rest exploratory); 500 " in out
    recall = next(line for line in out.splitlines() if " recall " in f" {line} ")
    assert "worse" in recall and recall.endswith(" 0/16")  # owners better / worse
    saved = pd.read_csv(out_csv)
    assert set(saved["metric"]) >= {"recall", "parse_failure_rate"}


def test_compare_command_errors_are_one_line(good: Run, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(good.path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["compare", str(good.path), str(good.path), "--metrics", "cost_usd"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot compare 'cost_usd': not a rate") and err.count("\n") == 1
    assert main(["compare", str(good.path), str(good.path), "--resamples", "-5"]) == 2
    assert "resamples" in capsys.readouterr().err


def gate(*args: str) -> list[str]:
    return ["gate", *args]


def test_gate_fails_on_significant_regressions_naming_each(
    good: Run, bad: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        gate(
            str(bad.path),
            "--baseline",
            str(good.path),
            "--no-significant-regression",
            "recall,parse_failure_rate,precision",
            # Every owner's precision is perfect on both sides: a regression smaller than
            # this could go unseen on 16 owners, which the gate would otherwise report.
            "--tolerance",
            "precision=0.5",
        )
    )
    out = capsys.readouterr().out
    assert code == 1, out
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert [line.split(":")[0] for line in failed] == ["FAILED default"] * 2
    assert "recall significantly worse than good (default): -" in failed[0]
    assert "parse_failure_rate significantly worse than good (default): +" in failed[1]
    for line in failed:
        assert re.search(r"\[-?\d+\.\d, -?\d+\.\d\] \(9\d\.?\d*% CI\), p < 0\.001", line), line
        assert line.endswith("significant [--no-significant-regression]")
    assert "ok default: precision no change" in out
    assert "gate failed: 2 regression(s)" in out


def test_gate_passes_when_the_difference_is_noise(
    noisy: tuple[Run, Run], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = noisy
    args = gate(str(b.path), "--baseline", str(a.path), "--no-significant-regression", "all")
    # 16 owners cannot show a 5-point regression of recall: the default tolerance fails.
    assert main(args) == 1
    out = capsys.readouterr().out
    assert re.search(
        r"FAILED default: recall: cannot detect a regression of 5\.0 pts with 16 owners "
        r"\(MDE \d+\.\d pts\)",
        out,
    ), out
    assert "regression(s) undetectable" in out
    code = main([*args, "--tolerance", "0.45"])  # a regression every MDE here detects
    out = capsys.readouterr().out
    assert code == 0, out
    assert "gate passed" in out
    assert "ok default: recall" in out and "not significant" in out


def test_gate_passes_an_improvement(
    good: Run, bad: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        gate(
            str(good.path),
            "--baseline",
            str(bad.path),
            "--no-significant-regression",
            "all",
            # Rates at 0 (or 1) on every owner of both runs get an MDE from their exact
            # intervals; on 16 owners it exceeds 5 points, so they need a wider tolerance.
            "--tolerance",
            "0.5",
        )
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "recall +" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--no-significant-regression", "recall"], "needs --baseline"),
        (["--baseline", "{good}"], "--no-significant-regression METRICS"),
        (["--baseline", "{good}", "--no-significant-regression", "recal"], "unknown rate"),
        (["--min-recall", "0.5", "--alpha", "2"], "alpha must be"),
        (["--use-bound", "--baseline", "{good}", "--no-significant-regression", "all"], "thresh"),
    ],
)
def test_gate_usage_errors_exit_2_in_one_line(
    good: Run, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.format(good=good.path) for a in args]
    assert main(gate(str(good.path), *args)) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_use_bound_checks_the_pessimistic_end(
    both: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = both.summary.set_index("label")
    value = summary.loc["mode=json_object", "recall"]
    lower = summary.loc["mode=json_object", "recall_lo"]
    assert lower < value
    limit = f"{(value + lower) / 2:.4f}"  # met by the value, missed by the lower bound
    assert main(gate(str(both.path), "--min-recall", limit)) == 0
    capsys.readouterr()
    assert main(gate(str(both.path), "--min-recall", limit, "--use-bound")) == 1
    out = capsys.readouterr().out
    assert (
        f"FAILED mode=json_object: recall 95% lower bound = {lower:.4g} (value {value:.4g}), "
        f"required >= {float(limit):g} [--min-recall]"
    ) in out
    assert "json_schema" not in out  # 100% recall on every owner: its bound is 1


def test_report_states_intervals_deltas_p_values_and_mde(
    good: Run, bad: Run, tmp_path: Path
) -> None:
    paths = build_report([good, bad], tmp_path / "report")
    md = paths.markdown.read_text(encoding="utf-8")
    section = md.split("## Statistics", 1)[1].split("\n## ", 1)[0]
    assert "bootstrap over owners (2000 resamples" in section
    lines = section.splitlines()
    interval_row = next(line for line in lines if line.startswith("| bad | default | 16 |"))
    recall = rows(compare(good, bad))["recall"]
    bad_summary = bad.summary.iloc[0]
    assert (
        f"{bad_summary['recall']:.1%} [{bad_summary['recall_lo']:.1%}, "
        f"{bad_summary['recall_hi']:.1%}]"
    ) in interval_row
    delta_row = next(line for line in lines if line.startswith("| bad: default | recall |"))
    cells = [c.strip() for c in delta_row.strip("|").split("|")]
    assert cells[2:7] == [
        "primary",
        "100.0%",
        f"{recall['value']:.1%}",
        describe(recall),
        "worse",
    ]
    mde = float(recall["mde"]) * 100
    assert cells[7] == f"{mde:.1f} pts"
    assert cells[8] == "0 / 16"  # owners better / worse
    assert "minimum detectable effect" in section.lower()
    html = paths.html.read_text(encoding="utf-8")
    assert "<h2>Statistics</h2>" in html and escape(describe(recall)) in html


def test_single_owner_report_says_intervals_need_owners(tmp_path: Path) -> None:
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps(owner(0)) + "\n", encoding="utf-8")
    backend = scripted("clear")
    run = sweep_scripted(
        data, {"name": "one", "replay_mode": "per_session"}, backend, tmp_path / "runs"
    )
    assert math.isnan(run.summary.iloc[0]["recall_lo"])
    md = build_report([run], tmp_path / "r").markdown.read_text(encoding="utf-8")
    assert "at least 2 owners" in md


def test_results_do_not_depend_on_the_order_of_rows(good: Run, bad: Run) -> None:
    shuffled = Run(
        path=bad.path,
        grid=bad.grid,
        lanes=bad.lanes,
        _calls=bad.calls.sample(frac=1.0, random_state=1),
        _sessions=bad.sessions.sample(frac=1.0, random_state=2),
    )
    # Owners are resampled by position: their order must not follow the rows' order.
    pd.testing.assert_frame_equal(
        owner_counts(shuffled.calls, shuffled.sessions), owner_counts(bad.calls, bad.sessions)
    )
    pd.testing.assert_frame_equal(compare(good, shuffled), compare(good, bad))
    pd.testing.assert_frame_equal(shuffled.summary, bad.summary)


def test_single_configuration_report_states_the_detectable_effect(bad: Run, tmp_path: Path) -> None:
    md = build_report([bad], tmp_path / "r").markdown.read_text(encoding="utf-8")
    line = next(line for line in md.splitlines() if line.startswith("Minimum detectable"))
    found = re.search(r"recall (\d+\.\d) pts", line)
    assert found is not None, line
    # A second configuration with the same spread, unpaired: about 2.8 * sqrt(2) * SE.
    se = float((bad.summary["recall_hi"] - bad.summary["recall_lo"]).iloc[0]) / (2 * 2.1)
    assert 0.5 * 2.8 * math.sqrt(2) * se < float(found.group(1)) / 100 < 2 * 2.8 * 1.5 * se
    assert "these 16 owners" in line


def test_a_grids_primary_set_is_the_family_and_the_gate_follows_it(good: Run, bad: Run) -> None:
    grid = bad.grid.model_copy(update={"primary": ["recall"]})
    chosen = Run(path=bad.path, grid=grid, lanes=bad.lanes)
    assert chosen.primary == ("recall",)
    table = compare(chosen, good).set_index("metric")  # run A's primary set
    assert table.loc["recall", "role"] == "primary"
    assert table.loc["parse_failure_rate", "role"] == "secondary"
    assert table["p_holm"].notna().sum() == 1
    regressions, checked = check_regressions(chosen, good)
    assert [r.metric for r in regressions] == ["recall"]
    assert checked["metric"].tolist() == ["recall"]
    with pytest.raises(GridError, match="primary"):
        Grid.from_mapping({"name": "x", "primary": ["final_facts"]})
    with pytest.raises(CompareError, match="not a rate with an interval"):
        compare(good, bad, primary=["nope"])


def test_each_owners_rate_is_its_own_counts_ratio() -> None:
    """Per-owner rates, computed by hand from each owner's counts: a plain ratio, an owner
    with nothing to cover (no value), a NaN count, and a macro rate over one owner."""
    from memlab.scoring.comparing.comparison import _owner_rates, _pick_metrics

    counts = pd.DataFrame(
        {
            "gold_covered": [3.0, 0.0, 1.0, float("nan")],
            "gold_active": [4.0, 0.0, 5.0, 2.0],
            "stored_precise": [1.0, 2.0, 0.0, 1.0],
            "facts": [2.0, 2.0, 0.0, 4.0],
        },
        index=["a", "b", "c", "d"],
    )
    recall, macro = _pick_metrics(["recall", "precision_macro"])
    got = _owner_rates(recall, counts)
    assert got[0] == 0.75 and got[2] == 0.2
    assert np.isnan(got[1]) and np.isnan(got[3])
    assert list(_owner_rates(macro, counts)[[0, 1, 3]]) == [0.5, 1.0, 0.25]
    assert len(_owner_rates(recall, counts.iloc[:0])) == 0
