"""The ``memlab`` command line: help texts, ``validate``, ``run`` and ``sweep``."""

from __future__ import annotations

import argparse
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from memlab.backends.registry import MINIMAL_CONTRACT_REPLY
from memlab.cli.main import build_parser, main
from memlab.runs.run import load_run

T0 = datetime(2025, 5, 5, 9, 0, tzinfo=UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def command_paths() -> list[list[str]]:
    """Every command and sub-command path of the parser, e.g. ``["datasets", "stats"]``."""
    paths: list[list[str]] = []

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    paths.append([*prefix, name])
                    walk(sub, [*prefix, name])

    walk(build_parser(), [])
    return paths


COMMANDS = command_paths()


def test_every_expected_command_is_registered() -> None:
    top = {path[0] for path in COMMANDS}
    assert {"run", "sweep", "report", "gate", "validate", "datasets", "cache"} <= top


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
def test_help_exits_0_and_shows_an_example(
    path: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*path, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "example" in out.lower()
    assert f"memlab {' '.join(path)}" in out  # the example shows the command itself


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
def test_every_flag_has_help_text(path: list[str]) -> None:
    parser = build_parser()
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        assert action.help, f"memlab {' '.join(path)}: {action.option_strings or action.dest}"


# --- validate ---------------------------------------------------------------------------------

INVALID = json.loads(MINIMAL_CONTRACT_REPLY)
INVALID["user"]["topOfMind"]["shouldUpdate"] = "yes"
INVALID["newFacts"] = [{"content": "Likes tea", "category": "hobby", "confidence": 1.5}]
INVALID_TEXT = json.dumps(INVALID)
EXPECTED_VIOLATIONS = [
    ("/newFacts/0/category", "enum"),
    ("/newFacts/0/confidence", "maximum"),
    ("/user/topOfMind/shouldUpdate", "type"),
]


def violation_lines(out: str) -> list[tuple[str, str]]:
    lines = [line.split() for line in out.splitlines() if line.startswith("  /")]
    return sorted((parts[0], parts[1].strip("[]")) for parts in lines)


def test_validate_valid_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reply = tmp_path / "reply.json"
    reply.write_text(MINIMAL_CONTRACT_REPLY, encoding="utf-8")
    assert main(["validate", str(reply)]) == 0
    assert capsys.readouterr().out.strip() == "valid (rung: strict)"


def test_validate_invalid_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reply = tmp_path / "reply.json"
    reply.write_text(INVALID_TEXT, encoding="utf-8")
    assert main(["validate", str(reply)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("invalid: schema_violation")
    assert violation_lines(out) == EXPECTED_VIOLATIONS


def test_validate_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(INVALID_TEXT))
    assert main(["validate"]) == 1
    assert violation_lines(capsys.readouterr().out) == EXPECTED_VIOLATIONS

    fenced = f"Here you go:\n```json\n{MINIMAL_CONTRACT_REPLY}\n```"
    monkeypatch.setattr("sys.stdin", io.StringIO(fenced))
    assert main(["validate", "-"]) == 0
    assert capsys.readouterr().out.strip() == "valid (rung: lenient)"

    monkeypatch.setattr("sys.stdin", io.StringIO(fenced))
    assert main(["validate", "--strict"]) == 1
    assert capsys.readouterr().out.startswith("invalid: fenced")


def test_validate_non_json_and_missing_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["validate"]) == 1
    assert capsys.readouterr().out.startswith("invalid: empty")

    assert main(["validate", str(tmp_path / "absent.txt")]) == 2
    assert "cannot read reply file" in capsys.readouterr().err


# --- run and sweep ----------------------------------------------------------------------------


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    sessions = []
    for i in range(3):
        start = T0 + timedelta(days=i)
        sessions.append(
            {
                "thread_id": f"t{i}",
                "started_at": iso(start),
                "messages": [
                    {"role": "human", "content": f"Message {i}", "timestamp": iso(start)},
                    {
                        "role": "ai",
                        "content": "OK.",
                        "timestamp": iso(start + timedelta(seconds=2)),
                    },
                ],
                "labels": {"noise": True},
            }
        )
    path = tmp_path / "tiny.jsonl"
    lines = [json.dumps({"user_id": u, "sessions": sessions}) for u in ("ann", "bob")]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_args(dataset: Path, tmp_path: Path, name: str, *extra: str) -> list[str]:
    return [
        "run",
        str(dataset),
        "--backend",
        "scripted",
        "--runs-dir",
        str(tmp_path / "runs"),
        "--name",
        name,
        "--no-progress",
        "--workers",
        "2",
        *extra,
    ]


def test_run_scripted(dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(run_args(dataset, tmp_path, "one", "--threshold", "0.8", "--max-facts", "20"))
    assert code == 0
    out = capsys.readouterr().out
    assert f"run written to {tmp_path / 'runs' / 'one'}" in out
    run = load_run(tmp_path / "runs" / "one")
    (lane,) = run.lanes.values()
    assert (lane.backend, lane.fact_confidence_threshold, lane.max_facts) == ("scripted", 0.8, 20)
    summary = run.summary.iloc[0]
    # one update per session (3 days apart, far beyond the 30 s debounce), two owners
    assert summary["llm_calls"] == 6
    assert summary["parse_failure_rate"] == 0.0
    assert summary["final_facts"] == 0
    for name in ("grid.yaml", "environment.json", "calls.jsonl", "sessions.jsonl", "summary.csv"):
        assert (run.path / name).is_file(), name


def test_run_limits_and_cache_replay(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    limits = ["--max-owners", "1", "--max-sessions", "2", "--replay-mode", "per_session"]
    assert main(run_args(dataset, tmp_path, "a", *limits, "--cache-dir", str(cache))) == 0
    first = load_run(tmp_path / "runs" / "a").summary.iloc[0]
    assert (first["owners"], first["llm_calls"], first["cache_hits"]) == (1, 2, 0)
    assert any(cache.rglob("*.json"))
    # a read-only replay is served entirely from the cache
    args = run_args(dataset, tmp_path, "b", *limits, "--cache-dir", str(cache))
    assert main([*args, "--cache-mode", "read_only"]) == 0
    second = load_run(tmp_path / "runs" / "b").summary.iloc[0]
    assert (second["llm_calls"], second["cache_hits"]) == (2, 2), "replay is not deterministic"
    capsys.readouterr()


def test_sweep_grid_file(dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grid: dict[str, Any] = {
        "name": "g",
        "dataset": str(dataset),
        "replay_mode": "per_session",
        "base": {"backend": "scripted"},
        "axes": {"fact_confidence_threshold": [0.7, 0.9], "max_facts": [10]},
    }
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(grid), encoding="utf-8")
    args = ["sweep", str(path), "--runs-dir", str(tmp_path / "runs"), "--no-progress"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "thr=0.7" in out and "thr=0.9" in out
    run = load_run(tmp_path / "runs" / "g")
    assert [lane.fact_confidence_threshold for lane in run.lanes.values()] == [0.7, 0.9]
    assert run.summary["llm_calls"].tolist() == [6, 6]

    # --backend overrides every lane's backend
    assert main([*args, "--name", "other", "--backend", "scripted:other-model"]) == 0
    other = load_run(tmp_path / "runs" / "other")
    assert {lane.backend for lane in other.lanes.values()} == {"scripted:other-model"}
    assert set(other.calls["model"]) == {"other-model"}
    capsys.readouterr()


def test_sweep_rejects_a_bad_grid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("name: g\naxes:\n  colour: [red]\n", encoding="utf-8")
    assert main(["sweep", str(path), "--runs-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3: axes.colour: unknown axis" in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--threshold", "1.5"], "fact_confidence_threshold"),
        (["--max-facts", "5"], "max_facts"),
        (["--backend", "nosuch:model"], "Unknown backend 'nosuch:model'"),
    ],
)
def test_run_reports_bad_arguments(
    extra: list[str],
    message: str,
    dataset: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*run_args(dataset, tmp_path, "bad"), *extra]) == 2
    assert message in capsys.readouterr().err


def test_run_reports_unknown_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "absent.jsonl"
    assert main(run_args(missing, tmp_path, "bad")) == 2
    assert "absent.jsonl" in capsys.readouterr().err
