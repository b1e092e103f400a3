"""Ctrl-C at any point of a command is one ``error:`` line and exit 130, saying what the
interrupted command keeps."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import NoReturn

import pytest

from memlab.cli.main import EXIT_INTERRUPTED, INTERRUPTED_REPLAYS, main

cli_main = importlib.import_module("memlab.cli.main")  # the module (memlab.cli.main is main)


def _interrupt(*_args: object, **_kwargs: object) -> NoReturn:
    raise KeyboardInterrupt


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_ctrl_c_while_the_command_is_imported_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_main, "build_parser", _interrupt)
    assert main(["run", "smoke"]) == EXIT_INTERRUPTED
    line = _one_error_line(capsys.readouterr().err)
    assert "before the command started" in line


def test_ctrl_c_during_qa_says_what_qa_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memlab.sweeps import run

    monkeypatch.setattr(run, "load_run", _interrupt)
    assert main(["qa", str(tmp_path), "--answer-backend", "sim:qa"]) == EXIT_INTERRUPTED
    line = _one_error_line(capsys.readouterr().err)
    assert "replays" not in line
    assert "QA step" in line and "--cache-dir" in line


def test_ctrl_c_during_other_commands_keeps_the_default_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memlab.datasets import loader

    monkeypatch.setattr(loader, "validate_dataset", _interrupt)
    assert main(["datasets", "validate", "smoke"]) == EXIT_INTERRUPTED
    assert _one_error_line(capsys.readouterr().err) == f"error: {INTERRUPTED_REPLAYS}"
