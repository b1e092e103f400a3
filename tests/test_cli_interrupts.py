"""Ctrl-C at any point of a command is one ``error:`` line and exit 130, saying what the
interrupted command keeps."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
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
    from memlab.runs import run

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


def test_ctrl_c_during_the_qa_calls_does_not_wait_for_calls_in_flight() -> None:
    """The QA step's calls: on Ctrl-C, queued calls are dropped and a call waiting on a server
    is not waited for (the process exits at once, as after a sweep's Ctrl-C)."""
    import threading

    from memlab.core.pipeline.llm import Completion, CompletionRequest, GenerationParams
    from memlab.datasets.questions import Question
    from memlab.postrun.qa_calls import ask_and_grade
    from memlab.qa.answering import AnswerTask
    from memlab.qa.conditions import Context

    release = threading.Event()
    done: list[str] = []

    class Stuck:
        name, model = "stuck", "stuck"

        def complete(self, request: CompletionRequest) -> Completion:
            release.wait(60)  # a server that does not answer (released by the test)
            done.append("answered")
            return Completion("late")

    question = Question(
        id="q", question="Where?", answer="Here", category="c", kind="answerable", after_session=0
    )
    tasks = [
        AnswerTask(
            "u",
            0,
            question,
            "memory",
            Context(),
            CompletionRequest(
                messages=[{"role": "user", "content": f"ask {i}"}], params=GenerationParams()
            ),
        )
        for i in range(3)
    ]

    def batches() -> Iterator[list[AnswerTask]]:
        yield tasks
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            ask_and_grade(batches(), Stuck(), Stuck(), [], GenerationParams(), max_workers=1)
        assert done == []  # interrupted while the first call still waited on its server
    finally:
        release.set()
