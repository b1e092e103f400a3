"""The calibration set and ``memlab matcher calibrate``: the default matcher's acceptance bar."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from builders import CALIBRATION_KINDS

from memlab.cli.main import main
from memlab.matching.base import LexicalMatcher
from memlab.matching.calibration import (
    CalibrationSetError,
    calibrate,
    calibration_of,
    default_pairs_path,
    load_pairs,
)

KINDS = CALIBRATION_KINDS


def calibrate_cli(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["matcher", "calibrate", "--json", *args]) == 0
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    return data


def test_default_matcher_meets_the_bar_on_the_test_split(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = calibrate_cli(capsys, "--matcher", "default", "--split", "test")
    assert result["split"] == "test" and result["pairs"] == 227
    assert result["agreement"] >= 0.90  # type: ignore[operator]
    assert result["wrong_accepted"] <= 0.05  # type: ignore[operator]
    assert result["recall"] >= 0.85  # type: ignore[operator]  # true pairs accepted
    by_kind = result["by_kind"]
    assert isinstance(by_kind, dict) and set(by_kind) == KINDS


def test_default_matcher_without_embeddings_meets_the_bar_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = calibrate_cli(capsys, "--matcher", "default-lexical")
    assert result["matcher"] == "default-lexical"
    assert result["agreement"] >= 0.90  # type: ignore[operator]
    assert result["wrong_accepted"] <= 0.05  # type: ignore[operator]
    assert result["recall"] >= 0.85  # type: ignore[operator]


def test_lexical_matcher_numbers_are_pinned() -> None:
    result = calibrate(LexicalMatcher(), load_pairs(split="test"))
    total = result.total
    counts = (total.true_accepted, total.true_rejected, total.wrong_accepted, total.wrong_rejected)
    assert counts == (65, 40, 52, 70)
    assert result.agreement == pytest.approx(135 / 227)
    assert result.precision == pytest.approx(65 / 117)
    assert result.recall == pytest.approx(65 / 105)
    assert result.wrong_accepted_rate == pytest.approx(52 / 122)
    flips = result.by_kind["polarity_flip"]
    assert (flips.wrong_accepted, flips.wrong_rejected) == (14, 11)


def test_the_set_is_large_split_by_gold_and_up_to_date() -> None:
    pairs = load_pairs()
    assert len(pairs) >= 400
    assert {p.kind for p in pairs} == KINDS
    per_split = Counter((p.kind, p.split) for p in pairs)
    assert all(per_split[(kind, split)] >= 10 for kind in KINDS for split in ("dev", "test"))
    dev = {p.gold for p in pairs if p.split == "dev"}
    test = {p.gold for p in pairs if p.split == "test"}
    assert not dev & test
    labels = Counter(p.label for p in pairs)
    assert min(labels.values()) >= 0.4 * len(pairs)  # both verdicts well represented
    assert {p.slot for p in pairs if p.kind == "other_value"} >= {
        "city",
        "date",
        "number",
        "brand",
        "diet",
    }
    build = default_pairs_path().parents[1] / "matching_src" / "build.py"
    check = subprocess.run(
        [sys.executable, str(build), "--check"], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stderr


def test_the_table_lists_every_kind_and_the_totals(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matcher", "calibrate", "--matcher", "lexical", "--errors"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["kind", "pairs", "true"]
    assert any(
        line.startswith("all") and line.split()[1:6] == ["227", "65", "40", "52", "70"]
        for line in lines
    )
    assert "matcher lexical on test: agreement 59.5%" in out
    assert "[polarity_flip-" in out and "wrongly accepted" in out


def test_calibration_of_is_what_reports_show() -> None:
    lexical = calibration_of("lexical")
    assert lexical is not None and lexical.total.pairs == 227
    assert calibration_of("judge:openai:gpt-4o") is None
    assert calibration_of("no-such-matcher") is None


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"bad\.jsonl:2: not valid JSON"),
        (
            '{"id": "x", "kind": "k", "gold": "g", "stored": "s", "split": "dev"}',
            r":2: field 'label' must be a bool",
        ),
        (
            '{"id": "x", "kind": "k", "gold": "g", "stored": "s", "label": true, "split": "x"}',
            r":2: field 'split'",
        ),
        ("[1, 2]", r":2: expected a JSON object"),
    ],
)
def test_a_bad_pairs_file_names_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, message: str
) -> None:
    good = '{"id": "a", "kind": "k", "gold": "g", "stored": "s", "label": true, "split": "dev"}'
    path = tmp_path / "bad.jsonl"
    path.write_text(f"{good}\n{line}\n", encoding="utf-8")
    with pytest.raises(CalibrationSetError, match=message):
        load_pairs(path)
    assert main(["matcher", "calibrate", "--pairs", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_cli_errors_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["matcher", "calibrate", "--matcher", "fuzzy"]) == 2
    assert "unknown matcher 'fuzzy'" in capsys.readouterr().err
    assert main(["matcher", "calibrate", "--pairs", str(tmp_path / "absent.jsonl")]) == 2
    assert "cannot read the pairs file" in capsys.readouterr().err
    assert main(["matcher", "list"]) == 0
    assert "judge:BACKEND" in capsys.readouterr().out
