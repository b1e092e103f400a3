"""``memlab qa``, and memory QA in ``memlab gate``, ``memlab report`` and run files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memlab.cli.main import main
from memlab.datasets import resolve_dataset
from memlab.reporting.report import build_report
from memlab.sweeps.driver import sweep
from memlab.sweeps.grid import Grid
from memlab.sweeps.run import QA_ANSWERS, QA_MANIFEST, Run, load_run

OWNERS = ["amara", "daniel", "hana"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("qa-cli")
    grid = Grid.from_mapping(
        {
            "name": "plain",
            "owners": OWNERS,
            "base": {"backend": "sim:careful"},
            "axes": {"fact_confidence_threshold": [0.5, 0.95]},
        }
    )
    return sweep(resolve_dataset("personas"), grid, runs_dir=root / "runs", progress=False)


@pytest.fixture
def run_dir(swept: Run, tmp_path: Path) -> Path:
    target = tmp_path / "runs" / "plain"
    shutil.copytree(swept.path, target)
    return target


def test_qa_adds_answers_and_prints_them(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]
    assert main([*args, "--judges", "strict,lenient", "--conditions", "memory,none"]) == 0
    out = capsys.readouterr().out
    assert "headline judge strict (judges: strict, lenient)" in out
    assert "why answers from memory are wrong" in out
    run = load_run(run_dir)
    assert set(run.qa_answers["condition"]) == {"memory", "none"}
    assert set(run.qa_answers["user_id"]) == set(OWNERS)
    manifest = json.loads((run_dir / QA_MANIFEST).read_text(encoding="utf-8"))
    assert manifest["complete"] and manifest["spec"]["judges"] == ["strict", "lenient"]
    assert "qa_accuracy" in run.summary.columns
    # The summary on disk is rewritten with the QA metrics.
    assert "qa_accuracy" in (run_dir / "summary.csv").read_text(encoding="utf-8")


def test_gate_counts_qa_under_the_judge_it_is_told(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]) == 0
    run = load_run(run_dir)
    answers = run.qa_answers
    mine = answers[(answers["condition"] == "memory") & (answers["kind"] == "answerable")]
    for judge in ("strict", "lenient"):
        right = mine["verdicts"].map(lambda v, j=judge: v[j]["answer"] is True)
        worst = min(right.groupby(mine["lane_id"]).mean())
        capsys.readouterr()
        flag = ["--min-qa-accuracy", str(worst)]
        assert main(["gate", str(run_dir), "--judge", judge, *flag]) == 0
        above = ["--min-qa-accuracy", str(min(1.0, worst + 0.001))]
        assert main(["gate", str(run_dir), "--judge", judge, *above]) == 1
        assert "FAILED" in capsys.readouterr().out
    assert main(["gate", str(run_dir), "--judge", "nobody", "--min-qa-accuracy", "0.1"]) == 2
    assert "no judge 'nobody'; judges: strict, lenient" in capsys.readouterr().err


def test_bad_qa_settings_exit_2_with_one_line(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["qa", str(run_dir), "--no-progress"]) == 2
    assert "no qa: key; give --answer-backend" in capsys.readouterr().err
    args = ["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]
    assert main([*args, "--judges", "lenient,nobody"]) == 2
    err = capsys.readouterr().err
    assert "nobody" in err and err.count("\n") == 1
    assert main([*args, "--conditions", "memory,telepathy"]) == 2
    assert "conditions" in capsys.readouterr().err
    assert not (run_dir / QA_ANSWERS).exists()  # nothing written by a refused step


def test_report_has_a_memory_qa_section(run_dir: Path, tmp_path: Path) -> None:
    assert main(["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]) == 0
    run = load_run(run_dir)
    paths = build_report([run], tmp_path / "report")
    markdown = Path(paths.markdown).read_text(encoding="utf-8")
    assert "## Memory QA" in markdown
    for title in ("Answerable questions per condition", "Judge band", "Why answers from memory"):
        assert title in markdown
    html = Path(paths.html).read_text(encoding="utf-8")
    assert html.count("<img alt='Why answers from memory are wrong'") == 1


def test_compare_says_which_qa_differences_hold_under_every_judge(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["qa", str(run_dir), "--answer-backend", "sim:careful", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["compare", str(run_dir), "--resamples", "500"]) == 0
    out = capsys.readouterr().out
    assert "memory QA under every judge" in out
    tail = out.split("memory QA under every judge")[1]
    assert "verdict:strict" in tail and "verdict:lenient" in tail
    assert "qa_accuracy" in tail
