"""What the calibration sets' build scripts share: splits, ids, repeated pairs, ``--check``."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memlab.matching.calibration import bundled_pair_files
from memlab.matching.calibration_build import (
    CalibrationSourceError,
    alternate_splits,
    number_pairs,
    render_pairs,
    run_build,
)

SOURCES = {
    "pairs.jsonl": "matching_src",
    "longform.jsonl": "matching_longform_src",
    "preferences.jsonl": "matching_prefs_src",
}


def test_keys_alternate_between_dev_and_test_in_sha256_order() -> None:
    keys = ["alpha", "beta", "gamma", "delta", "epsilon"]
    by_hash = sorted(keys, key=lambda k: hashlib.sha256(k.encode()).hexdigest())
    expected = {key: ("dev", "test")[i % 2] for i, key in enumerate(by_hash)}
    assert alternate_splits(reversed(keys)) == expected
    with pytest.raises(CalibrationSourceError, match="duplicate key: 'beta'") as caught:
        alternate_splits([*keys, "beta"])
    assert (caught.value.what, caught.value.value) == ("key", "beta")


def test_ids_count_per_kind_and_lead_each_row() -> None:
    rows = [
        {"kind": "a", "gold": "g1", "stored": "s1", "label": True, "split": "dev"},
        {"kind": "b", "gold": "g1", "stored": "s2", "label": False, "split": "dev"},
        {"kind": "a", "gold": "g2", "stored": "s1", "label": True, "split": "test"},
    ]
    out = number_pairs(rows, style="x", prefix="p-")
    assert [r["id"] for r in out] == ["p-a-001", "p-b-001", "p-a-002"]
    assert list(out[1]) == ["id", "style", "kind", "gold", "stored", "label", "split"]
    assert render_pairs(out[:1]) == (
        '{"id": "p-a-001", "style": "x", "kind": "a", "gold": "g1", "stored": "s1",'
        ' "label": true, "split": "dev"}\n'
    )
    with pytest.raises(CalibrationSourceError, match="duplicate pair") as caught:
        number_pairs([*rows, {**rows[2], "kind": "c"}], style="x")
    assert caught.value.value == ("g2", "s1")


def test_a_repeated_pair_exits_2_and_leaves_the_file(tmp_path: Path) -> None:
    out = tmp_path / "matching" / "pairs.jsonl"
    out.parent.mkdir()
    out.write_text("kept\n", encoding="utf-8")
    row = {"kind": "a", "gold": "g", "stored": "s", "label": True, "split": "dev"}
    script = tmp_path / "datasets" / "src" / "build.py"

    def build() -> list[dict[str, object]]:
        return number_pairs([row, row], style="x")

    code, message = run_build([], build=build, out=out, script=script)
    assert code == 2
    assert message.startswith(f"{script}: duplicate pair: ('g', 's'); ")
    assert out.read_text(encoding="utf-8") == "kept\n"


@pytest.mark.parametrize("name", list(SOURCES))
def test_check_fails_on_an_altered_file_and_writes_nothing(tmp_path: Path, name: str) -> None:
    # A copy of the checkout's layout: the script checks ../matching/NAME beside its folder.
    committed = next(p for p in bundled_pair_files() if p.name == name)
    source = SOURCES[name]
    copy = tmp_path / "datasets"
    shutil.copytree(committed.parents[1] / source, copy / source)
    text = committed.read_text(encoding="utf-8")
    altered = text.replace('"label": true', '"label": false', 1)
    assert altered != text
    data = copy / "matching" / name
    data.parent.mkdir()
    data.write_text(altered, encoding="utf-8")
    command = [sys.executable, str(copy / source / "build.py"), "--check"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert result.stderr == f"{data.resolve()} is out of date; run datasets/{source}/build.py\n"
    assert data.read_text(encoding="utf-8") == altered  # --check writes nothing
