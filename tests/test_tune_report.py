"""The search's report: every candidate's settings, scores, cost and prompt diff.

The candidate prompt is the built-in default with one line replaced (by the test): the diff
must show exactly that line removed and the new one added.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlab.cli.main import main
from memlab.core.prompts import resolve_prompt
from memlab.scoring.metric_specs import metric_spec
from tests.tune_data import owners_dataset, tune_grid

NEW_LINE = "Keep only facts the user states about themselves, nothing else."


def _one_line_changed(folder: Path) -> tuple[str, str]:
    """``folder/edited.txt``: the default prompt with its first plain line replaced; the
    line removed and the line added."""
    lines = resolve_prompt("default").template.splitlines()
    k = next(i for i, line in enumerate(lines) if line.strip() and "{" not in line)
    old = lines[k]
    lines[k] = NEW_LINE
    (folder / "edited.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return old, NEW_LINE


def test_the_report_shows_each_candidates_prompt_diff_scores_and_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    owners_dataset(tmp_path, copies=2)
    old, new = _one_line_changed(tmp_path)
    grid = tune_grid(tmp_path, {"space": {"prompt": ["default", "edited.txt"]}})
    runs = tmp_path / "runs"
    code = main(["tune", str(grid), "--runs-dir", str(runs), "--max-trials", "2",
                 "--no-progress", "--allow-inconclusive"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    path = runs / "search" / "tune-report.md"
    assert out.rstrip().endswith(f"report: {path}")
    report = path.read_text("utf-8")
    # Candidate 1 tries edited.txt: its diff removes exactly the old line, adds the new one.
    section = report.split("### #1")[1]
    assert "Settings: `prompt` = edited.txt." in section
    diff = section.split("```diff\n")[1].split("```")[0].splitlines()
    assert diff[:2] == ["--- default", "+++ edited.txt"]
    changed = [line for line in diff[2:] if line[:1] in "+-"]
    assert changed == [f"-{old}", f"+{new}"]
    # Candidate 0 is the start: no diff.
    assert "### #0 (start)" in report
    assert "Prompt: the starting prompt." in report.split("### #0")[1].split("### #1")[0]
    # Scores and cost per candidate, as tune.json keeps them.
    saved = json.loads((runs / "search" / "tune.json").read_text("utf-8"))
    recall = metric_spec("recall")
    for row in saved["trials"]:
        part = report.split(f"### #{row['number']}")[1].split("### #")[0]
        train, valid = recall.fmt(row["train"]["recall"]), recall.fmt(row["validation"]["recall"])
        assert f"| recall | {train} | {valid} |" in part
        assert f"Cost: {row['cost']['llm_calls']:.0f} calls" in part
    total = sum(row["cost"]["llm_calls"] for row in saved["trials"])
    assert f"2 candidates: {total:.0f} calls" in report
    # --report prints the same report.
    main(["tune", str(grid), "--runs-dir", str(runs), "--max-trials", "2", "--no-progress",
          "--allow-inconclusive", "--report"])  # fmt: skip
    again = capsys.readouterr().out
    assert again.split("## Search cost")[1] == report.split("## Search cost")[1]
