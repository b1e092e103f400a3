"""Metrics are declared once: summary, report tables, gate and CLI flags follow the specs."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from builders import marker_backend, one_turn, sweep_scripted, update, write_owners

from memlab.cli.main import build_parser, main
from memlab.reporting import tables
from memlab.reporting.compare.gate import Thresholds, check_gate
from memlab.runs.records import SessionRow
from memlab.runs.run import Run, load_run
from memlab.scoring import metric_specs
from memlab.scoring.comparing.comparison import compare
from memlab.scoring.count_specs import COUNT_SPECS, count_columns
from memlab.scoring.inference.coverage import MIN_OWNERS
from memlab.scoring.metric_model import MetricSpec
from memlab.scoring.metric_specs import (
    DEFAULT_PRIMARY,
    METRIC_SPECS,
    gate_specs,
    interval_specs,
    report_specs,
    summary_columns,
)
from memlab.scoring.metrics import owner_counts

T0 = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
REPLIES = {"[s:job]": update("Works as a nurse", ("Has a cat", 0.8)), "[s:hike]": "Sure."}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Three owners (one answered with prose), two thresholds."""
    tmp = tmp_path_factory.mktemp("specs")
    owners = []
    for i, marker in enumerate(["[s:job]", "[s:job]", "[s:hike]"]):
        fact = {"id": "g1", "content": "Works as a nurse", "category": "context"}
        owners.append(
            {
                "user_id": f"o{i}",
                "sessions": [one_turn(f"o{i}-1", T0 + timedelta(hours=i), marker, facts=[fact])],
            }
        )
    data = tmp / "d.jsonl"
    write_owners(data, owners)
    backend = marker_backend(REPLIES)
    grid = {
        "name": "specs",
        "replay_mode": "per_session",
        "axes": {"fact_confidence_threshold": [0.7, 0.85]},
    }
    return sweep_scripted(data, grid, backend, tmp / "runs")


def test_specs_module_imports_neither_pandas_nor_matplotlib() -> None:
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('specs', {metric_specs.__file__!r})\n"
        "module = sys.modules['specs'] = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "assert module.METRIC_SPECS\n"
        "heavy = {'pandas', 'matplotlib', 'numpy'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_declarations_are_unique_and_consistent() -> None:
    for attribute in ("column", "title"):
        values = [getattr(spec, attribute) for spec in METRIC_SPECS]
        assert len(values) == len(set(values)), attribute
    for spec in interval_specs():
        # Shares lie in [0, 1]; a restricted mean survival time in [0, its horizon].
        if spec.survival is not None:
            assert spec.ratio is None and spec.valid == (0.0, spec.survival[2]), spec.column
            continue
        expected = (0.0, 1.0) if spec.percent else (0.0, math.inf)
        assert spec.ratio is not None and spec.valid == expected, spec.column
    # The primary family: declared in the specs, one line each.
    assert DEFAULT_PRIMARY == (
        "parse_failure_rate",
        "recall",
        "precision_macro",
        "qa_accuracy",
    )
    for name, spec in gate_specs().items():
        assert name.startswith("max_" if spec.direction == "lower" else "min_")
        assert spec.flag == "--" + name.replace("_", "-")


def test_every_count_a_spec_names_is_computed(run: Run) -> None:
    counts = owner_counts(run.calls, run.sessions)
    # Measured only when asked for: embedding duplicates, memory QA (tests/test_qa_sweep.py).
    optional = {"dup_embedding", *count_columns(by="qa")}
    needed = {c for spec in METRIC_SPECS for c in spec.sources} - optional
    assert needed <= set(counts.columns), needed - set(counts.columns)
    assert len(counts) == 6  # 2 lanes x 3 owners


def test_summary_columns_follow_the_specs(run: Run) -> None:
    optional = ("embedding", "qa_")  # not measured in this run
    expected = [c for c in summary_columns() if not any(o in c for o in optional)]
    assert list(run.summary.columns[-len(expected) :]) == expected
    row = run.summary.set_index("label").loc["thr=0.7"]
    assert row["parse_failure_rate"] == pytest.approx(1 / 3)
    assert row["recall"] == pytest.approx(2 / 3)
    # 3 owners: below the owner count at which the bootstrap's coverage was measured, and
    # recall 2/3 is not near 0 or 1, so no interval is given (NaN), never a [x, x] one.
    assert MIN_OWNERS["bootstrap"] > 3
    assert math.isnan(row["recall_lo"]) and math.isnan(row["recall_hi"])


def test_report_gate_and_cli_are_built_from_the_specs() -> None:
    assert report_specs() == tables.report_specs()
    gate = next(
        action
        for action in build_parser()._subparsers._group_actions  # type: ignore[union-attr]
        for name, parser in action.choices.items()
        if name == "gate"
    ).choices["gate"]
    flags = {opt: a for a in gate._actions for opt in a.option_strings}
    for name, spec in gate_specs().items():
        assert spec.flag in flags and flags[spec.flag].dest == name
        assert spec.title in (flags[spec.flag].help or "")


CACHE_RATE = MetricSpec(
    "cache_hit_rate",
    "cache hit rate",
    "higher",
    "percent",
    ratio=("cache_hits", "llm_calls"),
    interval=True,
    valid=(0.0, 1.0),
    gate="cache_hit_rate",
    report=True,
)


@pytest.fixture
def cache_rate() -> Iterator[MetricSpec]:
    """CACHE_RATE registered as a plugin would register it, for one test."""
    metric_specs.METRICS.register(CACHE_RATE.column, CACHE_RATE)
    yield CACHE_RATE
    metric_specs.METRICS.unregister(CACHE_RATE.column)


def test_adding_a_metric_is_one_registration(
    run: Run, cache_rate: MetricSpec, capsys: pytest.CaptureFixture[str]
) -> None:
    fresh = load_run(run.path)  # summaries are cached per Run object
    summary = fresh.summary
    assert {"cache_hit_rate", "cache_hit_rate_lo", "cache_hit_rate_hi"} <= set(summary.columns)
    assert (summary["cache_hit_rate"] == 0).all()  # no response cache in this sweep
    assert "cache hit rate" in [m.title for m in tables.metrics_in(tables.compare_table([fresh]))]
    assert "cache_hit_rate" in set(compare(fresh)["metric"])
    failures = check_gate(fresh, Thresholds(min_cache_hit_rate=0.5))
    assert [f.threshold for f in failures] == ["min_cache_hit_rate"] * 2
    assert main(["gate", str(run.path), "--min-cache-hit-rate", "0.5"]) == 1
    assert "cache_hit_rate = 0, required >= 0.5 [--min-cache-hit-rate]" in capsys.readouterr().out


def test_a_metric_over_an_undeclared_count_is_refused_where_it_is_registered() -> None:
    spec = MetricSpec("miss_rate", "miss rate", "lower", ratio=("cache_misses", "llm_calls"))
    with pytest.raises(ValueError, match=r"counts \['cache_misses'\] are not declared"):
        metric_specs.METRICS.register(spec.column, spec)
    with pytest.raises(ValueError, match="under 'misses' but its column is 'cache_hit_rate'"):
        metric_specs.METRICS.register("misses", CACHE_RATE)  # its counts are declared
    assert "miss_rate" not in metric_specs.METRICS and "misses" not in metric_specs.METRICS


def test_session_rows_type_the_declared_counts() -> None:
    typed = set(SessionRow.model_fields)
    declared = {c.column for c in COUNT_SPECS if c.in_rows}
    assert declared <= typed
    assert typed - declared == {"lane_id", "user_id", "session_index", "thread_id", "noise",
                                "tags", "recall", "precision"}  # fmt: skip


def test_spec_formatting() -> None:
    recall = metric_specs.metric_spec("recall")
    assert recall.fmt(0.4123) == "41.2%" and recall.fmt(math.nan) == "-"
    assert recall.fmt_delta(0.062) == "+6.2 pts"
    assert recall.fmt_bounds(0.021, 0.104, points=True) == "[2.1, 10.4]"
    assert recall.fmt_bounds(0.35, 0.47) == "[35.0%, 47.0%]"
    with pytest.raises(KeyError, match="unknown metric 'recal'"):
        metric_specs.metric_spec("recal")
    with pytest.raises(ValueError, match="needs a ratio"):
        MetricSpec("x", "x", "lower", interval=True)


def test_sweep_csv_has_the_interval_columns(run: Run) -> None:
    header = Path(run.path / "summary.csv").read_text(encoding="utf-8").splitlines()[0]
    assert "recall_lo" in header.split(",") and "recall_hi" in header.split(",")


def test_values_are_formatted_in_each_unit() -> None:
    count = MetricSpec("n", "n", None)
    assert count.fmt(None) == "-" and count.fmt(7) == "7" and count.fmt(7.0) == "7"
    assert count.fmt(2.345678) == "2.346" and count.fmt_delta(3.0) == "+3"
    assert count.fmt(12345.0) == "12345"  # a whole float is a count, not 1.234e+04
    assert count.fmt_delta(-0.123456) == "-0.1235" and count.fmt_delta(math.nan) == "-"
    assert count.fmt_bounds(1.0, 12345.0) == "[1, 1.234e+04]"
    assert count.fmt_bounds(math.nan, 1.0) == "[-]" and count.fmt_bounds(1.0, math.nan) == "[-]"
    recall = metric_specs.metric_spec("recall")
    assert recall.fmt_delta(-0.0049) == "-0.5 pts" and recall.fmt_delta(math.nan) == "-"
    assert recall.fmt(1) == "100.0%"
    assert recall.fmt_bounds(math.nan, 0.1, points=True) == "[-]"
    assert recall.fmt_bounds(0.5, 0.6, points=True) == "[50.0, 60.0]"


def test_gate_names_flags_and_help_follow_the_direction() -> None:
    recall = metric_specs.metric_spec("recall")
    assert (recall.bound, recall.threshold, recall.flag) == ("min", "min_recall", "--min-recall")
    assert recall.gate_help() == "lowest allowed recall (0-1)"
    failures = metric_specs.metric_spec("parse_failure_rate")
    assert failures.threshold == "max_parse_failure"
    assert failures.gate_help() == "highest allowed parse failure rate (0-1)"
    removals = metric_specs.metric_spec("op_wrong_removals")
    assert removals.gate_help() == (
        "highest allowed wrong removals (>= 0); not recorded in this run (rerun the sweep to "
        "score operations)"
    )
    stale = metric_specs.metric_spec("stale_rmst").gate_help()
    assert stale.startswith("highest allowed sessions a retracted fact survives")
    assert "(restricted mean, 3 sessions) (0-3); not recorded" in stale
    plain = MetricSpec("n", "n", None)
    assert (plain.threshold, plain.flag, plain.ranked, plain.percent) == (None, None, False, False)
    assert recall.ranked and recall.percent and recall.higher_is_better
    assert not failures.higher_is_better


def test_declaration_mistakes_fail_where_declared() -> None:
    with pytest.raises(ValueError, match="metric p: a primary metric needs an interval"):
        MetricSpec("p", "p", "higher", ratio=("facts", "facts"), primary=True)
    with pytest.raises(ValueError, match="metric m: a macro average needs a ratio"):
        MetricSpec("m", "m", "higher", average="macro")
    with pytest.raises(ValueError, match="metric t: give ratio or total, not both"):
        MetricSpec("t", "t", "higher", ratio=("facts", "facts"), total="facts")
    with pytest.raises(ValueError, match="metric g: a gated metric needs a direction"):
        MetricSpec("g", "g", None, gate="g")
    with pytest.raises(ValueError, match="metric i: an interval needs a ratio or a survival"):
        MetricSpec("i", "i", "higher", interval=True)
    # Each rule alone: a macro rate with its ratio, a gated count with a direction are fine.
    MetricSpec("m", "m", "higher", ratio=("facts", "facts"), average="macro")
    MetricSpec("g", "g", "lower", gate="g")
    MetricSpec("p", "p", "higher", ratio=("facts", "facts"), interval=True, primary=True)


def test_count_columns_filter_by_how_and_by_whom() -> None:
    assert count_columns(over="derived", by="owner") == (
        "owners",
        "sessions",
        "calls_saved_by_debounce",
    )
    assert count_columns(by="embeddings") == ("dup_embedding",)
    assert count_columns(over="last_session")[:2] == ("facts", "gold_active")
    assert len(count_columns()) == len(COUNT_SPECS)


def test_the_primary_set_is_checked_and_deduplicated() -> None:
    assert metric_specs.primary_metrics() == DEFAULT_PRIMARY
    assert metric_specs.primary_metrics(["recall", "precision", "recall"]) == (
        "recall",
        "precision",
    )
    assert metric_specs.primary_metrics([]) == ()
    rates = "rates: parse_failure_rate, backend_error_rate, recall"
    with pytest.raises(KeyError, match=f"'final_facts' is not a rate with an interval; {rates}"):
        metric_specs.primary_metrics(["recall", "final_facts"])


def test_unknown_metrics_list_the_known_ones() -> None:
    with pytest.raises(KeyError) as raised:
        metric_specs.metric_spec("nope")
    message = str(raised.value.args[0])
    assert message.startswith("unknown metric 'nope'; known metrics: owners, sessions, ")
    assert message.endswith("qa_read_latency_per_question")


def test_summary_columns_put_each_interval_after_its_metric() -> None:
    columns = summary_columns()
    at = columns.index("recall")
    assert columns[at - 3 : at + 3] == (
        "backend_error_rate",
        "backend_error_rate_lo",
        "backend_error_rate_hi",
        "recall",
        "recall_lo",
        "recall_hi",
    )
    assert columns[:4] == ("owners", "sessions", "agent_runs", "parse_failures")
    assert len(columns) == len(METRIC_SPECS) + 2 * len(interval_specs())
