"""Progress of long steps: sparse plain lines off a terminal, per session in a sweep."""

from __future__ import annotations

import io
import re

import pytest

from memlab.cli.main import main
from memlab.postrun.progress import Progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_at_each_tenth_and_at_the_end() -> None:
    stream, clock = io.StringIO(), FakeClock()
    with Progress("qa calls", "call", 200, stream=stream, clock=clock, every_seconds=60) as bar:
        for _ in range(200):
            bar.update(1)
    lines = stream.getvalue().splitlines()
    # One line per tenth: 20/200 ... 200/200; nothing repeated at the end.
    assert lines == [f"qa calls: {20 * k}/200 calls ({10 * k}%)" for k in range(1, 11)]
    assert "\r" not in stream.getvalue()


def test_plain_line_after_a_pause_even_without_a_new_tenth() -> None:
    stream, clock = io.StringIO(), FakeClock()
    bar = Progress("sweep x", "session", 1000, stream=stream, clock=clock, every_seconds=60)
    bar.update(5)  # 0.5%: no line yet
    assert stream.getvalue() == ""
    clock.now = 61.0
    bar.update(1)
    assert stream.getvalue() == "sweep x: 6/1000 sessions (0%)\n"
    bar.update(1)  # the pause starts again from the last line
    assert stream.getvalue().count("\n") == 1
    bar.close()
    assert stream.getvalue().splitlines()[-1] == "sweep x: 7/1000 sessions (0%)"


def test_growing_total_is_shown_and_disabled_writes_nothing() -> None:
    stream, clock = io.StringIO(), FakeClock()
    bar = Progress("qa calls", "call", 10, stream=stream, clock=clock)
    bar.update(5)  # 50%
    bar.add_total(90)  # now 5/100
    bar.update(5)  # 10%: below the tenths already shown
    bar.close()
    # One line for the jump to 50%, none for 10% of the larger total until the end.
    assert stream.getvalue().splitlines() == [
        "qa calls: 5/10 calls (50%)",
        "qa calls: 10/100 calls (10%)",
    ]
    quiet = io.StringIO()
    with Progress("qa calls", "call", 10, enabled=False, stream=quiet) as off:
        off.update(10)
    assert quiet.getvalue() == ""


def test_cli_run_with_qa_off_a_terminal_prints_sparse_lines(
    tmp_path: object, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Lines at each tenth only (no pause rule): the count does not depend on machine speed.
    monkeypatch.setattr("memlab.postrun.progress.PLAIN_EVERY_SECONDS", float("inf"))
    # capsys's stderr is not a terminal: a log file or a CI job's output.
    code = main(
        ["run", "personas", "--backend", "sim:careful", "--max-owners", "2", "--qa",
         "--runs-dir", str(tmp_path), "--name", "p"]
    )  # fmt: skip
    assert code == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    sweep_lines = re.findall(r"^sweep p: (\d+)/(\d+) sessions", err, re.M)
    qa_lines = re.findall(r"^qa calls: (\d+)/(\d+) calls", err, re.M)
    assert sweep_lines and qa_lines
    # Sessions, not replays: the total is both owners' sessions (one lane).
    from memlab.datasets import load_dataset, resolve_dataset

    owners = load_dataset(resolve_dataset("personas"))[:2]
    sessions = sum(len(o.sessions) for o in owners)
    assert {int(total) for _, total in sweep_lines} == {sessions}
    assert sweep_lines[-1][0] == str(sessions)
    # Counted as sessions are played, not when an owner's whole replay ends (a real model's
    # replay of one owner takes minutes): the first line comes before any owner is done.
    assert int(sweep_lines[0][0]) < min(len(o.sessions) for o in owners)
    assert len(sweep_lines) <= 10  # one per tenth at most
    done, total = (int(x) for x in qa_lines[-1])
    assert done == total > 0
