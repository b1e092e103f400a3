"""What answered and judged a run's memory QA is part of what a comparison checks.

Real QA runs built here over the personas dataset (the simulated model replays, answers and
judges): two runs that differ only in the answerer, in a judge's backend, in the text of a
judge prompt kept under its name, or in the answer key are refused by ``compare``, ``gate``
and ``report`` with one line naming that difference, and compared under a banner stating it
with ``--allow-mixed``. Each expected line is built from the settings the test chose (backend
specs, prompt texts hashed here, the audit written into the dataset), never read back from
the output, and names the candidate run first with its value first (each value where its
run is named). A report of a run of a real model beside a run of the simulated model over
other owners is refused too.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memlab.cli.main import main
from memlab.datasets import resolve_dataset
from memlab.grids.grid import Grid
from memlab.postrun.qa_step import add_qa
from memlab.qa.qa_prompts import answer_prompts
from memlab.reporting.markdown import md_escape
from memlab.reporting.report import build_report
from memlab.runs.run import Run, load_run
from memlab.runs.rundir import QA_MANIFEST
from memlab.scoring.comparing.comparability import (
    JudgeFacts,
    LaneFacts,
    MixedComparisonError,
    QAFacts,
    check_pairs,
    differences,
)
from memlab.scoring.comparing.comparison import compare
from memlab.sweeps.driver import sweep

OWNERS = ["amara", "daniel", "hana"]
CAREFUL, SLOPPY = "sim:careful", "sim:sloppy"
LANE = "[simulated] default"  # the one lane of each run swept here


def _pair(candidate: str, baseline: str) -> str:
    """How a line names the candidate run's lane against the baseline run's."""
    return f"{candidate}: {LANE} vs {baseline}: {LANE}"


# A judge prompt of the user's, and the same prompt edited under the same name.
HOUSE = (
    "Grade the answer against the reference.\n\nQuestion: {question}\nReference: "
    '{gold_answer}\nAnswer: {answer}\n\nReply {"label": "CORRECT"} or {"label": "WRONG"}'
)
HOUSE_EDITED = HOUSE.replace("Grade the answer", "Grade the answer generously")


def _sha(text: str) -> str:
    return _sha_bytes(text.encode("utf-8"))


def _sha_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sweep(dataset: Path | str, runs_dir: Path, name: str, owners: list[str] = OWNERS) -> Run:
    grid = Grid.from_mapping({"name": name, "owners": owners, "base": {"backend": CAREFUL}})
    return sweep(dataset, grid, runs_dir=runs_dir, progress=False)


def _qa(run: Run, where: Path, **spec: Any) -> Path:
    """A copy of ``run`` at ``where`` with memory QA added under ``spec`` (the judges' backend
    fixed, so only what ``spec`` changes differs between two such runs)."""
    shutil.copytree(run.path, where)
    settings = {"answer_backend": CAREFUL, "judge_backend": CAREFUL, "conditions": ["memory"]}
    add_qa(where, {**settings, **spec}, progress=False)
    return where


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("qa-comparability")


@pytest.fixture(scope="module")
def swept(runs: Path) -> Run:
    return _sweep(resolve_dataset("personas"), runs / "swept", "plain")


@pytest.fixture(scope="module")
def careful(swept: Run, runs: Path) -> Path:
    return _qa(swept, runs / "careful")


def _refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a refused command prints (exit 2)."""
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_runs_answered_by_another_backend_are_refused_naming_it(
    swept: Run, careful: Path, runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sloppy = _qa(swept, runs / "sloppy", answer_backend=SLOPPY)
    line = f"{_pair('sloppy', 'careful')}: different answerer: {SLOPPY} vs {CAREFUL}"
    with pytest.raises(MixedComparisonError, match=re.escape(line)) as caught:
        compare(load_run(careful), load_run(sloppy))
    assert caught.value.difference.what == "answerer"
    assert line in _refused(["compare", str(careful), str(sloppy)], capsys)
    gate = ["gate", str(sloppy), "--baseline", str(careful), "--no-significant-regression"]
    assert line in _refused(gate, capsys)
    report = ["report", str(careful), str(sloppy), "-o", str(runs / "sloppy-report")]
    assert line in _refused(report, capsys)
    assert not (runs / "sloppy-report" / "index.html").exists()
    # Allowed, the comparison runs and its first line states what it mixes.
    assert main(["compare", str(careful), str(sloppy), "--allow-mixed", "--resamples", "200"]) == 0
    first = capsys.readouterr().out.replace("\n  ", " ").splitlines()[0]  # unwrapped
    assert first == f"mixed comparison: {line}", first
    assert main([*report, "--allow-mixed"]) == 0
    markdown = (runs / "sloppy-report" / "summary.md").read_text(encoding="utf-8")
    assert md_escape(line) in markdown  # the lane labels' brackets escaped


def test_a_judge_with_another_backend_is_refused_naming_the_judge(
    swept: Run, careful: Path, runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judged = _qa(swept, runs / "judged-sloppy", judge_backend=SLOPPY)
    first_judge = load_run(careful).judges[0]  # the QA step's default judges, in order
    line = f"different judge {first_judge!r}: backend {SLOPPY} vs {CAREFUL}"
    line = f"{_pair('judged-sloppy', 'careful')}: {line}"
    assert line in _refused(["compare", str(careful), str(judged)], capsys)


def test_a_judge_prompt_edited_under_its_name_is_refused(
    swept: Run, runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = []
    for name, text in (("house-a", HOUSE), ("house-b", HOUSE_EDITED)):
        prompts = runs / f"{name}-prompts"
        prompts.mkdir()
        (prompts / "house.txt").write_text(text, encoding="utf-8")
        made.append(
            _qa(swept, runs / name, judges=["house"], judge_prompts=[str(prompts / "house.txt")])
        )
    original, edited = _sha(HOUSE)[:12], _sha(HOUSE_EDITED)[:12]  # house-a's, house-b's
    line = f"{_pair('house-b', 'house-a')}: different judge 'house': prompt sha256 {edited} vs "
    line += original
    assert line in _refused(["compare", *map(str, made)], capsys)
    assert main(["compare", *map(str, made), "--allow-mixed", "--resamples", "200"]) == 0
    assert line in capsys.readouterr().out.replace("\n  ", " ").splitlines()[0]


def _audited_copy(source: Path, target: Path) -> str:
    """``source`` with one question of the first owner marked as changed by an audit of the
    answer key; returns that owner."""
    lines = source.read_text(encoding="utf-8").splitlines()
    owner = json.loads(lines[0])
    question = owner["questions"][0]
    question["audit"] = {"error_type": "WRONG_ANSWER", "original_answer": "not this"}
    target.write_text("\n".join([json.dumps(owner), *lines[1:]]) + "\n", encoding="utf-8")
    return str(owner["user_id"])


def test_another_answer_key_is_named_before_the_dataset_it_changes(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original, audited = runs / "key-original.jsonl", runs / "key-audited.jsonl"
    shutil.copyfile(resolve_dataset("personas"), original)
    assert _audited_copy(original, audited) in OWNERS
    made = []
    for dataset in (original, audited):
        run = _sweep(dataset, runs / f"{dataset.stem}-swept", "key")
        made.append(_qa(run, runs / dataset.stem))
    line = f"{_pair('key-audited', 'key-original')}: different answer key: audited vs original"
    err = _refused(["compare", *map(str, made)], capsys)
    assert line in err and "different dataset" not in err
    assert main(["compare", *map(str, made), "--allow-mixed", "--resamples", "200"]) == 0
    out = capsys.readouterr().out.replace("\n  ", " ")  # banners wrap at 120 columns
    banners = [b for b in out.splitlines() if b.startswith("mixed ")]
    assert line in banners[0]
    digests = [f"sha256 {_sha_bytes(path.read_bytes())[:12]}" for path in (original, audited)]
    dataset = f"different dataset: {digests[1]} vs {digests[0]}"  # key-audited's first
    assert banners[1] == f"mixed comparison: {_pair('key-audited', 'key-original')}: {dataset}"


def test_an_original_key_that_records_the_audit_is_still_the_original_key(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LoCoMo imported with ``--answer-key original --audit``: its questions carry the audit
    (for the ceiling) but keep their answers, so it is the original key, not the audited one."""
    source = runs / "recorded-source.jsonl"
    shutil.copyfile(resolve_dataset("personas"), source)
    lines = source.read_text(encoding="utf-8").splitlines()
    owner = json.loads(lines[0])
    question = owner["questions"][0]
    question["audit"] = {
        "error_type": "WRONG_ANSWER",
        "original_answer": question["answer"],
        "audited_answer": "not this",
    }
    recorded = runs / "key-recorded.jsonl"
    recorded.write_text("\n".join([json.dumps(owner), *lines[1:]]) + "\n", encoding="utf-8")
    audited = runs / "key-changed.jsonl"
    _audited_copy(source, audited)
    made = [
        _qa(_sweep(dataset, runs / f"{dataset.stem}-swept", "key"), runs / dataset.stem)
        for dataset in (recorded, audited)
    ]
    err = _refused(["compare", *map(str, made)], capsys)
    line = f"{_pair('key-changed', 'key-recorded')}: different answer key: audited vs original"
    assert line in err


def test_a_qa_fact_a_run_did_not_record_is_stated_as_unknown(
    careful: Path, runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    older = runs / "careful-older"
    shutil.copytree(careful, older)
    manifest = json.loads((older / QA_MANIFEST).read_text(encoding="utf-8"))
    del manifest["identity"]["answer_prompt"]
    del manifest["spec"]["answer_prompt"]
    (older / QA_MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    assert main(["compare", str(careful), str(older), "--resamples", "200"]) == 0
    out = capsys.readouterr().out.replace("\n  ", " ").splitlines()  # wrapped at 120 columns
    sha = _sha(answer_prompts().get("default").template)[:12]
    pair = _pair("careful-older", "careful")
    assert out[0].startswith(f"unchecked: {pair}: answer prompt: unknown vs default ({sha}) (")


def test_a_report_refuses_a_real_run_beside_a_simulated_run_of_other_owners(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = {"name": "real", "owners": OWNERS[:2], "base": {"backend": "scripted:user-lines"}}
    real = sweep("personas", Grid.from_mapping(grid), runs_dir=runs / "real", progress=False)
    simulated = _sweep("personas", runs / "simulated", "simulated")
    # The simulated run (3 owners) is checked against the first run, the real one (2 owners).
    owners = f"different owners: 3 owners (1 not in the other: {OWNERS[2]}) vs 2 owners"
    owners = f"simulated: {LANE} vs real: {real.label(next(iter(real.lanes)))}: {owners}"
    with pytest.raises(MixedComparisonError, match=re.escape(owners)):
        build_report([real, simulated], runs / "mixed-report")
    args = ["report", str(real.path), str(simulated.path), "-o", str(runs / "mixed-report")]
    assert owners in _refused(args, capsys)
    assert main([*args, "--allow-mixed"]) == 0
    markdown = (runs / "mixed-report" / "summary.md").read_text(encoding="utf-8")
    assert md_escape(owners) in markdown
    # The kinds are reported apart by design (never ranked together): not a banner of its own.
    assert "different backend kind" not in markdown


# --- the facts alone ------------------------------------------------------------------------

JUDGE = JudgeFacts("sim:careful", "model simulated-careful", "b" * 64, "max_tokens 32")
QA = QAFacts(
    answerer="sim:careful",
    answerer_model="model simulated-careful",
    answer_prompt="default",
    answer_prompt_sha256="a" * 64,
    answer_settings="max_tokens 64",
    judges={"lenient": JUDGE},
    conditions=("memory",),
    answer_key="original",
)


def _lane(run: str, qa: QAFacts, dataset: str = "sha256 0123") -> LaneFacts:
    return LaneFacts(run=run, lane="x", dataset=dataset, owners=frozenset({"u1"}), qa=qa)


def test_the_answer_key_is_named_before_the_dataset_and_judges_only_one_run_has_are_not() -> None:
    audited = replace(QA, answer_key="audited", judges={"lenient": JUDGE, "strict": JUDGE})
    found = differences(_lane("a", QA), _lane("b", audited, dataset="sha256 4567"))
    assert [str(d) for d in found] == [  # b's value first, a's second
        "answer key: audited vs original",
        "dataset: sha256 4567 vs sha256 0123",
    ]


def test_a_model_or_a_judge_setting_is_a_difference_under_the_same_spec() -> None:
    other = replace(
        QA,
        answerer_model="model simulated-careful, sha256 123456789abc",
        judges={"lenient": replace(JUDGE, settings="max_tokens 8")},
    )
    found = differences(_lane("a", QA), _lane("b", other))
    assert [str(d) for d in found] == [
        "answerer sim:careful: model model simulated-careful, sha256 123456789abc vs model "
        "simulated-careful",
        "judge 'lenient': settings max_tokens 8 vs max_tokens 32",
    ]
    assert all(d.blocking for d in found)


def test_an_unrecorded_qa_fact_is_stated_not_refused_and_one_qa_step_is_not_compared() -> None:
    older = replace(QA, answer_key="", judges={"lenient": replace(JUDGE, prompt_sha256="")})
    banners = check_pairs([(_lane("a", QA), _lane("b", older))])
    assert banners == [
        "unchecked: b: x vs a: x: answer key: unknown vs original (its QA step did not record "
        "it; run the QA step again to record it)",
        f"unchecked: b: x vs a: x: judge 'lenient': prompt sha256 unknown vs {'b' * 12} (its "
        "QA step did not record it; run the QA step again to record it)",
    ]
    both = check_pairs([(_lane("a", older), _lane("b", replace(older)))])
    assert len(both) == 2 and all("unknown vs unknown" in b for b in both)
    assert check_pairs([(_lane("a", older), _lane("b", older))]) == []  # one QA step
