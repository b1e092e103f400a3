"""``memlab gate``: exit 0 when every threshold holds, 1 naming each miss, 2 on bad input."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import iso, marker_backend, one_turn, sweep_scripted, update, write_owners

from memlab.cli.main import main
from memlab.reporting.compare.gate import GateFailure, ThresholdError, Thresholds, check_gate
from memlab.runs.run import Run
from memlab.scoring.metric_specs import gate_specs

T0 = datetime(2025, 4, 7, 9, 0, tzinfo=UTC)


REPLIES = {
    "[s:1]": update("Works as a nurse in Leeds", "Passport number X-1234"),
    "[s:2]": "Happy to help!",  # no JSON: a parse failure
}


def run_sweep(tmp: Path, owners: list[dict[str, Any]], grid: dict[str, Any]) -> Run:
    path = tmp / "data.jsonl"
    write_owners(path, owners)

    backend = marker_backend(REPLIES)
    return sweep_scripted(path, grid, backend, tmp / "runs")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Two lanes. thr=0.7: both facts stored; thr=0.95: nothing stored.

    Per lane: parse-failure rate 0.5; recall 0.5 (thr=0.7) and 0.0 (thr=0.95); precision
    0.5 (thr=0.7, NaN at thr=0.95); forbidden content stored 1 (thr=0.7) and 0.
    """
    owner = {
        "user_id": "ann",
        "sessions": [
            one_turn(
                "ann-1",
                T0,
                "I work as a nurse in Leeds, passport X-1234. [s:1]",
                facts=[{"id": "g1", "content": "Works as a nurse in Leeds", "category": "context"}],
                must_not_store=["X-1234"],
            ),
            one_turn(
                "ann-2",
                T0 + timedelta(days=1),
                "I love hiking. [s:2]",
                facts=[{"id": "g2", "content": "Loves hiking", "category": "preference"}],
            ),
        ],
    }
    grid = {
        "name": "gated",
        "replay_mode": "per_session",
        "axes": {"fact_confidence_threshold": [0.7, 0.95]},
    }
    return run_sweep(tmp_path_factory.mktemp("gate"), [owner], grid)


@pytest.fixture(scope="module")
def empty_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """No agent run ever ends: no LLM replies, no labeled facts (every rate is NaN)."""
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
    return run_sweep(tmp_path_factory.mktemp("empty"), [owner], {"name": "empty"})


def gate(run: Run, *flags: str) -> list[str]:
    return ["gate", str(run.path), *flags]


def test_metrics_are_what_the_thresholds_are_checked_against(run: Run) -> None:
    summary = run.summary.set_index("label")
    assert summary.loc["thr=0.7", "parse_failure_rate"] == 0.5
    assert summary.loc["thr=0.7", "recall"] == 0.5
    assert summary.loc["thr=0.95", "recall"] == 0.0
    assert summary.loc["thr=0.7", "precision"] == 0.5
    assert math.isnan(summary.loc["thr=0.95", "precision"])
    assert summary.loc["thr=0.7", "forbidden_stored"] == 1
    assert summary.loc["thr=0.95", "forbidden_stored"] == 0


def test_exit_0_when_every_threshold_holds(run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        gate(run, "--max-parse-failure", "0.5", "--max-duplicate-rate", "0", "--min-recall", "0")
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "gate passed" in out
    assert "FAILED" not in out


def test_exit_1_names_each_missed_threshold(run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        gate(
            run,
            "--max-parse-failure",
            "0.05",
            "--min-recall",
            "0.4",
            "--max-duplicate-rate",
            "0.1",
            "--max-forbidden-stored",
            "0",
        )
    )
    out = capsys.readouterr().out
    assert code == 1
    failed = sorted(line for line in out.splitlines() if line.startswith("FAILED"))
    assert failed == [
        "FAILED thr=0.7: forbidden_stored = 1, required <= 0 [--max-forbidden-stored]",
        "FAILED thr=0.7: parse_failure_rate = 0.5, required <= 0.05 [--max-parse-failure]",
        "FAILED thr=0.95: parse_failure_rate = 0.5, required <= 0.05 [--max-parse-failure]",
        "FAILED thr=0.95: recall = 0, required >= 0.4 [--min-recall]",
    ]
    assert "gate failed: 4 threshold(s) missed" in out
    assert "duplicate" not in out  # the duplicate-rate threshold held


def test_nan_metric_misses_its_threshold(run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    # thr=0.95 stores no facts: precision is NaN and must not pass by accident.
    code = main(gate(run, "--min-precision", "0"))
    out = capsys.readouterr().out
    assert code == 1
    assert "FAILED thr=0.95: precision = NaN (not computable), required >= 0 [--min-precision]" in (
        out
    )
    assert "thr=0.7: precision" not in out


def test_empty_run_never_passes(empty_run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(gate(empty_run, "--max-parse-failure", "1", "--min-recall", "0"))
    out = capsys.readouterr().out
    assert code == 1
    assert "parse_failure_rate = NaN" in out and "recall = NaN" in out


def test_empty_run_passes_thresholds_on_counts(
    empty_run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    # counts are zero, not NaN, so count thresholds can hold
    assert main(gate(empty_run, "--max-retracted-held", "0", "--max-forbidden-stored", "0")) == 0
    assert "gate passed" in capsys.readouterr().out


def test_no_threshold_is_a_usage_error(run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(gate(run)) == 2
    assert "no threshold given" in capsys.readouterr().err


def test_missing_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gate", str(tmp_path / "nope"), "--min-recall", "0.5"]) == 2
    assert "not a memlab run directory" in capsys.readouterr().err


def test_check_gate_api(run: Run) -> None:
    assert check_gate(run, Thresholds()) == []
    failures = check_gate(run, Thresholds(min_recall=0.5, max_retracted_held=0))
    assert failures == [GateFailure("thr=0.95", "recall", 0.0, 0.5, "min", "min_recall")]
    assert str(failures[0]) == "thr=0.95: recall = 0, required >= 0.5 [--min-recall]"


def test_unmeasured_embedding_duplicates_miss_with_a_hint(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(gate(run, "--max-duplicate-rate-embedding", "0.2"))
    out = capsys.readouterr().out
    assert code == 1
    assert (
        "FAILED thr=0.7: duplicate_rate_embedding = not measured (sweep with "
        "--embedding-duplicates), required <= 0.2 [--max-duplicate-rate-embedding]"
    ) in out


@pytest.mark.parametrize(
    ("flag", "value", "problem"),
    [
        ("--max-parse-failure", "nan", "not a finite number"),
        ("--max-parse-failure", "inf", "not a finite number"),
        ("--max-parse-failure", "-1", "out of range"),
        ("--max-parse-failure", "5", "out of range"),
        ("--min-recall", "1.5", "out of range"),
        ("--max-retracted-held", "-1", "out of range"),
        ("--max-forbidden-stored", "inf", "not a finite number"),
    ],
)
def test_invalid_limits_exit_2_in_one_line(
    run: Run, flag: str, value: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A 50% failure rate must never pass because the limit was NaN or out of range.
    assert main(gate(run, flag, value)) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {flag} {value}: {problem}; give a number ")
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert "gate passed" not in captured.out


def test_thresholds_api_validates_names_and_values() -> None:
    with pytest.raises(ThresholdError, match="not a finite number"):
        Thresholds(max_parse_failure=math.nan)
    with pytest.raises(ThresholdError, match="unknown threshold 'max_parse_failures'"):
        Thresholds(max_parse_failures=0.1)
    limits = Thresholds(max_parse_failure=0.1, min_recall=None)
    assert limits.limits == {"max_parse_failure": 0.1}
    assert limits.max_parse_failure == 0.1 and limits.min_recall is None
    assert limits == Thresholds(max_parse_failure=0.1)


def test_every_gate_flag_is_listed_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    out = capsys.readouterr().out
    for spec in gate_specs().values():
        assert spec.flag in out
