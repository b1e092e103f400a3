"""What the command line prints: aligned prompt lists, help without doubled percent signs,
malformed JSON placed by line and column, the matcher ``--matcher default`` became, expected
parse failures counted per lane instead of logged one by one, and the calls a run made."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlab.backends.scripted import SCRIPTS, ScriptedBackend
from memlab.cli.main import main
from memlab.core.prompts import PromptRegistry
from memlab.grids.grid import Grid
from memlab.matching import default_matcher
from memlab.reporting.tables import worst_failures
from memlab.sweeps.driver import sweep


def test_prompts_list_separates_every_column(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prompts", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    assert header == ["name", "sha256", "chars", "source", "description"]
    start = lines[0].index("description")
    registry = PromptRegistry()
    for line in lines[1:]:
        name = line.split()[0]
        assert line[start - 2 : start] == "  ", line  # the source ends before the description
        assert line[start:] == registry.get(name).description


@pytest.mark.parametrize("command", ["compare", "gate", "report", "run", "sweep", "rescore"])
def test_help_prints_single_percent_signs(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert "%%" not in capsys.readouterr().out


def test_validate_places_malformed_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reply = tmp_path / "reply.txt"
    reply.write_text('Here it is:\n{\n  "facts": [1,, 2]\n}\n', encoding="utf-8")
    assert main(["validate", str(reply)]) == 1
    out = capsys.readouterr().out
    assert out == (
        "invalid: invalid_json: reply contains malformed JSON at line 3, column 15: "
        "Expecting value\n"
    )


def test_default_matcher_without_embeddings_says_what_it_became(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.setattr(default_matcher, "optional_embedder", lambda: None)
    with caplog.at_level(logging.WARNING, logger="memlab.cli.tools.matching"):
        assert main(["matcher", "calibrate", "--matcher", "default", "--json"]) == 0
    warned = [r.getMessage() for r in caplog.records if r.name == "memlab.cli.tools.matching"]
    assert len(warned) == 1
    assert warned[0].startswith("--matcher default: the embeddings extra is not installed, so ")
    assert "the matcher is default-lexical" in warned[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="memlab.cli.tools.matching"):
        assert main(["matcher", "calibrate", "--matcher", "lexical", "--json"]) == 0
    assert not [r for r in caplog.records if r.name == "memlab.cli.tools.matching"]


def _prose_run(tmp_path: Path, name: str = "prose") -> object:
    backend = ScriptedBackend(["Noted, thanks!", '{"truncated": ['], repeat_last=True)
    return sweep(
        "personas",
        Grid.from_mapping({"name": name, "max_owners": 2, "max_sessions": 3}),
        runs_dir=tmp_path,
        backend_factory=lambda _s: backend,
        progress=False,
    )


@pytest.fixture
def prose_script() -> Iterator[str]:
    """``scripted:prose-test``: every reply is prose (a parse failure)."""
    SCRIPTS.register("prose-test", lambda _request: "Noted, thanks!")
    yield "scripted:prose-test"
    SCRIPTS.unregister("prose-test")


def test_parse_failures_are_counted_not_logged_one_by_one(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    prose_script: str,
) -> None:
    with caplog.at_level(logging.INFO, logger="memlab"):
        _prose_run(tmp_path)
    failures = [r for r in caplog.records if "failed at parse" in r.getMessage()]
    assert failures and {r.levelno for r in failures} == {logging.INFO}  # -v shows them
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    caplog.clear()
    args = ["run", "personas", "--max-owners", "2", "--max-sessions", "2"]
    args += ["--runs-dir", str(tmp_path), "--no-progress", "--backend", prose_script]
    with caplog.at_level(logging.WARNING):
        assert main([*args, "--name", "cli", "--cache-dir", str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    assert not [r for r in caplog.records if "failed at parse" in r.getMessage()]
    counted = [line for line in out.splitlines() if "model calls" in line or "not parse" in line]
    assert len(counted) == 2, out
    calls = re.fullmatch(r"(\d+) model calls, 0 from cache", counted[0])
    assert calls is not None and int(calls.group(1)) > 0, counted
    n = calls.group(1)
    assert counted[1].endswith(
        f": {n} of {n} replies did not parse (counted in the tables; -v logs each)"
    )
    assert main([*args, "--name", "again", "--cache-dir", str(tmp_path / "cache")]) == 0
    again = [line for line in capsys.readouterr().out.splitlines() if "model calls" in line]
    assert again == [f"0 model calls, {n} from cache"]


def test_worst_failures_show_each_reply_once_without_a_doubled_category(tmp_path: Path) -> None:
    run = _prose_run(tmp_path, "worst")
    table = worst_failures([run])  # type: ignore[list-item]
    assert not table.empty
    assert not table.duplicated(["lane", "reply"]).any()
    for _, row in table.iterrows():
        assert not str(row["error"]).startswith(f"{row['parse_category']}:"), row["error"]
    assert set(table["reply"]) == {"Noted, thanks!", '{"truncated": ['}
