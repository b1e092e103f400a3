"""``memlab datasets`` command group."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path

import pytest

from memlab.cli.tools import datasets as datasets_cli

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "datasets" / "smoke.jsonl"


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="memlab")
    datasets_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_validate_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["datasets", "validate", str(SMOKE), "smoke"]) == 0
    out = capsys.readouterr().out
    assert out.count("OK ") == 2
    assert "2 owner(s)" in out


def test_validate_prints_every_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = SMOKE.read_text(encoding="utf-8").splitlines()[0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(f"{good}\n{{oops\n{good}\n", encoding="utf-8")
    assert run(["datasets", "validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:2: invalid JSON" in out
    assert f"{bad}:3: user_id: duplicate user id 'ana'" in out
    assert "2 error(s)" in out


def test_validate_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["datasets", "validate", str(tmp_path / "nope.jsonl")]) == 1
    assert "not found" in capsys.readouterr().err


def test_stats_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["datasets", "stats", "smoke"]) == 0
    text = capsys.readouterr().out
    lines = {line.split("  ")[0].strip(): line.split()[-1] for line in text.splitlines() if line}
    assert lines["users"] == "2"
    assert lines["sessions"] == "6"
    assert lines["tool calls"] == "1"
    assert lines["retracted gold ids"] == "1"
    assert lines["noise sessions"] == "1"
    assert run(["datasets", "stats", str(SMOKE), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["users"] == 2 and stats["upload_blocks"] == 1


def test_stats_on_invalid_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n", encoding="utf-8")
    assert run(["datasets", "stats", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:1: user_id: missing required field" in out


def test_import_locomo_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli_main = importlib.import_module("memlab.cli.main").main
    missing = str(tmp_path / "x.json")
    assert cli_main(["datasets", "import-locomo", missing, "--out", "o.jsonl"]) == 2
    assert "LoCoMo source not found" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}', encoding="utf-8")
    out = str(tmp_path / "o.jsonl")
    assert cli_main(["datasets", "import-locomo", str(bad), "--out", out]) == 2
    assert "expected a JSON list" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


def test_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run(["datasets", "--help"])
    assert "memlab datasets stats datasets/personas.jsonl" in capsys.readouterr().out


def test_through_main_entry_point(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cli_main = importlib.import_module("memlab.cli.main")
    monkeypatch.setattr(cli_main, "COMMAND_MODULES", ("memlab.cli.tools.datasets",))
    assert cli_main.main(["datasets", "validate", "smoke"]) == 0
    assert "OK " in capsys.readouterr().out
    assert cli_main.main(["datasets"]) == 2


def test_answer_key_choices_are_the_importers() -> None:
    from memlab.datasets.locomo_qa import ANSWER_KEYS

    assert datasets_cli.ANSWER_KEYS == ANSWER_KEYS
