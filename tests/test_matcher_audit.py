"""``memlab matcher audit`` -> label -> ``memlab matcher calibrate --pairs SHEET`` on a
simulated run, labels taken from the simulator's provenance (which gold fact each stored
wording came from), not from any matcher."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from pathlib import Path

import pytest

from memlab.backends.scripted import ScriptedBackend
from memlab.cli.main import main
from memlab.core.pipeline.llm import CompletionRequest
from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid
from memlab.matching.audit_form import labelling_form
from memlab.matching.calibration import KindCounts
from memlab.matching.judge import LLMJudgeMatcher
from memlab.matching.matcher_audit import (
    AuditError,
    AuditSheet,
    judge_sheet,
    parse_label,
    read_sheet,
)
from memlab.matching.matchers import default_matcher
from memlab.postrun.audit import draw_sheet, sheet_path
from memlab.reporting.report import build_report
from memlab.runs.run import Run, load_run
from memlab.simulation.fact_texts import restated, worded
from memlab.sweeps import sweep

SAMPLE = 40


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    grid = Grid.from_mapping(
        {"name": "audit", "max_owners": 4, "base": {"backend": "sim:sloppy", "max_facts": 200}}
    )
    return sweep("personas", grid, runs_dir=tmp_path_factory.mktemp("runs"), progress=False)


def provenance() -> dict[tuple[str, str], str]:
    """(owner, wording) -> the gold fact id the simulator words it from."""
    index: dict[tuple[str, str], str] = {}
    for owner in load_dataset(resolve_dataset("personas")):
        for session in owner.sessions:
            for gold in session.labels.facts:
                for style in ("verbatim", "terse"):
                    text = worded(gold.content, style)
                    for wording in (text, restated(text)):
                        index.setdefault((owner.user_id, wording.strip().casefold()), gold.id)
    return index


def gold_ids() -> dict[tuple[str, str], set[str]]:
    ids: dict[tuple[str, str], set[str]] = {}
    for owner in load_dataset(resolve_dataset("personas")):
        for session in owner.sessions:
            for gold in session.labels.facts:
                ids.setdefault((owner.user_id, gold.content), set()).add(gold.id)
    return ids


def test_audit_label_calibrate_round_trip(
    run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["matcher", "audit", str(run.path), "--sample", str(SAMPLE)]) == 0
    path = sheet_path(run)
    assert f"{path}: " in capsys.readouterr().out
    sheet = read_sheet(path)
    strata = {row.stratum for row in sheet.rows}
    sizes = {row.stratum: row.stratum_size for row in sheet.rows}
    assert strata == {"accepted", "rejected"}
    assert len(sheet.rows) == min(SAMPLE, sum(sizes.values()))
    drawn = {s: sum(1 for row in sheet.rows if row.stratum == s) for s in strata}
    # Half from each stratum unless one is too small (then it gives all it has).
    assert all(drawn[s] == min(SAMPLE // 2, sizes[s]) or drawn[s] > SAMPLE // 2 for s in strata)
    assert len({(row.stored, row.gold) for row in sheet.rows}) == len(sheet.rows)
    matcher = default_matcher()
    assert all(row.verdict == matcher.covers(row.stored, row.gold) for row in sheet.rows)
    assert all(row.verdict == (row.stratum == "accepted") for row in sheet.rows)
    assert all(row.label is None for row in sheet.rows)

    # Label every row through the notebook form, with the provenance truth.
    source, ids = provenance(), gold_ids()
    truth = [
        source.get((row.owner, row.stored.strip().casefold())) in ids[(row.owner, row.gold)]
        for row in sheet.rows
    ]
    assert 0 < sum(truth) < len(truth)
    form = labelling_form(path)
    for _ in sheet.rows:
        form.answer(truth[form.index])
    labelled = read_sheet(path)
    assert [row.label for row in labelled.rows] == truth

    assert main(["matcher", "calibrate", "--pairs", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    expected = KindCounts()
    for row, label in zip(sheet.rows, truth, strict=True):
        expected.add(label, row.verdict)
    n = len(truth)
    agree = (expected.true_accepted + expected.wrong_rejected) / n
    p_yes = (expected.true_accepted + expected.wrong_accepted) / n
    p_true = (expected.true_accepted + expected.true_rejected) / n
    chance = p_yes * p_true + (1 - p_yes) * (1 - p_true)
    assert report["pairs"] == n
    assert report["agreement"] == pytest.approx(agree, abs=1e-4)
    assert report["kappa"] == pytest.approx((agree - chance) / (1 - chance), abs=1e-4)
    assert report["recall"] == pytest.approx(
        expected.true_accepted / (expected.true_accepted + expected.true_rejected), abs=1e-4
    )
    # Run-level estimates weight each stratum by its size in the run.
    share = {
        s: sum(t for row, t in zip(sheet.rows, truth, strict=True) if row.stratum == s) / drawn[s]
        for s in strata
    }
    hits, misses = sizes["accepted"] * share["accepted"], sizes["rejected"] * share["rejected"]
    estimate = report["run_estimate"]
    assert estimate["run_precision"] == pytest.approx(share["accepted"], abs=1e-4)
    assert estimate["run_recall"] == pytest.approx(hits / (hits + misses), abs=1e-4)
    assert estimate["run_agreement"] == pytest.approx(
        (sizes["accepted"] * share["accepted"] + sizes["rejected"] * (1 - share["rejected"]))
        / (sizes["accepted"] + sizes["rejected"]),
        abs=1e-4,
    )
    notes = build_report([run], tmp_path / "report").markdown.read_text(encoding="utf-8")
    assert f"measured on {run.name}'s own pairs ({n} labelled" in notes
    assert f"agreement {agree:.1%}" in notes


def test_an_existing_sheet_is_not_overwritten(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "sheet.csv"
    path.write_text("labels I care about\n", encoding="utf-8")
    assert main(["matcher", "audit", str(run.path), "-o", str(path)]) == 2
    assert path.read_text(encoding="utf-8") == "labels I care about\n"
    assert main(["matcher", "audit", str(run.path), "-o", str(path), "--force"]) == 0
    assert read_sheet(path).rows


def test_drawing_is_seeded(run: Run) -> None:
    first = draw_sheet(run, sample=10, seed=3)
    again = draw_sheet(run, sample=10, seed=3)
    other = draw_sheet(run, sample=10, seed=4)
    assert first.render() == again.render()
    assert first.render() != other.render()
    with pytest.raises(AuditError, match="at least 2"):
        draw_sheet(run, sample=1)


def judge_backend() -> ScriptedBackend:
    """Yes when the stored fact repeats the gold fact's first word; the strict prompt also
    wants the same number of words."""

    def answer(request: CompletionRequest) -> str:
        prompt = str(request.messages[-1]["content"])
        gold = prompt.split("GOLD: ")[1].split("\n")[0]
        stored = prompt.split("STORED: ")[1].split("\n")[0]
        yes = gold.split()[0].casefold() in stored.casefold()
        if "every claim" in prompt:
            yes = yes and len(gold.split()) == len(stored.split())
        return "yes" if yes else "no"

    return ScriptedBackend(function=answer)


def test_a_judge_labels_the_sheet(run: Run, tmp_path: Path) -> None:
    sheet = draw_sheet(run, sample=20)
    judged = judge_sheet(sheet, LLMJudgeMatcher(judge_backend()))
    for row in judged.rows:
        lenient = row.gold.split()[0].casefold() in row.stored.casefold()
        assert row.judge_lenient is lenient
        assert row.judge_strict is (lenient and len(row.gold.split()) == len(row.stored.split()))
    assert [r.label for r in judged.rows] == [None] * len(judged.rows)  # labels untouched
    path = judged.write(tmp_path / "judged.csv")
    assert read_sheet(path).rows == judged.rows


def test_calibrate_judge_flag_writes_judge_columns(
    run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = draw_sheet(run, sample=10).write(tmp_path / "sheet.csv")
    assert main(["matcher", "calibrate", "--pairs", str(path), "--judge", "scripted"]) == 0
    out = capsys.readouterr().out
    assert "judge_lenient: kappa with the matcher" in out
    rows = read_sheet(path).rows
    # The scripted backend's default reply is no verdict: the judge says no to every pair.
    assert {row.judge_lenient for row in rows} == {False}
    assert main(["matcher", "calibrate", "--judge", "scripted"]) == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("label", "maybe"), r"sheet\.csv:3: column 'label/verdict': 'maybe' is not a label"),
        (("stratum", "other"), r"sheet\.csv:3: column 'stratum': must be one of"),
        (("session", "two"), r"sheet\.csv:3: column 'session': not a number"),
    ],
)
def test_a_bad_sheet_names_file_line_and_column(
    run: Run,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: tuple[str, str],
    message: str,
) -> None:
    sheet = draw_sheet(run, sample=4)
    path = sheet.write(tmp_path / "sheet.csv")
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    import csv
    import io

    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    rows[2][header.index(change[0])] = change[1]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    with pytest.raises(AuditError, match=message):
        read_sheet(path)
    assert main(["matcher", "calibrate", "--pairs", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_labels_are_read_leniently_and_strictly() -> None:
    assert [parse_label(t) for t in ("yes", "Y", "true", "1", " no ", "N", "0", "")] == [
        True,
        True,
        True,
        True,
        False,
        False,
        False,
        None,
    ]
    with pytest.raises(ValueError, match="not a label"):
        parse_label("perhaps")


def _labelled_copy(run: Run, tmp_path: Path) -> tuple[Run, Path]:
    """A copy of the run, and a sheet of it labelled 'yes' everywhere, written outside it."""
    copy = tmp_path / "run"
    shutil.copytree(run.path, copy)
    sheet = draw_sheet(run, sample=10)
    labelled = AuditSheet([dataclasses.replace(r, label=True) for r in sheet.rows], sheet.path)
    outside = labelled.write(tmp_path / "outside.csv")
    return load_run(copy), outside


@pytest.mark.parametrize("kind", ["link", "fifo", "device"])
def test_the_report_reads_the_sheet_like_every_run_file(
    run: Run, tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A sheet that is a link (to a labelled sheet outside the run), a FIFO or a device is
    refused with one warning and a note; its labels are never used."""
    copy, outside = _labelled_copy(run, tmp_path)
    path = sheet_path(copy)
    path.unlink(missing_ok=True)  # the round trip above labels the shared run's own sheet
    if kind == "link":
        path.symlink_to(outside)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    with caplog.at_level(logging.WARNING):
        notes = build_report([copy], tmp_path / "report").markdown.read_text(encoding="utf-8")
    assert "measured on" not in notes  # the labels outside were not read
    assert f"labelling sheet of {copy.name} unreadable" in notes
    warned = [r.getMessage() for r in caplog.records if "labelling sheet" in r.getMessage()]
    assert len(warned) == 1 and "\n" not in warned[0]
    assert ("symbolic link" if kind != "fifo" else "FIFO") in warned[0]
    # The same sheet as a plain file of the run is read.
    path.unlink()
    shutil.copy(outside, path)
    notes = build_report([copy], tmp_path / "again").markdown.read_text(encoding="utf-8")
    assert f"measured on {copy.name}'s own pairs (10 labelled" in notes
