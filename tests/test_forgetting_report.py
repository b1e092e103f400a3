"""The forgetting operating curve kept in the run directory and shown by ``memlab report``.

A tiny simulated run (three personas, the seed's decay against 1% a day) asks the curve; the
report's section is then checked against numbers worked out here from the kept per-owner rows
(read as plain JSON lines): answers asked, the pooled retained share and the memory's size per
owner averaged over sessions. How many answers each owner is asked is counted from the
dataset's labels (after every session following the one where a question's evidence is all
stated, until one fact is retracted), not by the code under test.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from memlab.cli.main import main
from memlab.datasets import load_dataset, resolve_dataset
from memlab.grids.grid import Grid
from memlab.postrun.forgetting_file import forgetting_rows
from memlab.reporting.figures.forgetting_curve import forgetting_curve
from memlab.runs.run import Run, load_run
from memlab.runs.rundir import FORGETTING_MANIFEST, FORGETTING_ROWS
from memlab.sweeps.driver import sweep

OWNERS = 3


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    grid = Grid.from_mapping(
        {
            "name": "forgetting-report",
            "dataset": "personas",
            "max_owners": OWNERS,
            "base": {"backend": "sim:careful", "memory": "tiered"},
            "axes": {"tiered": [{}, {"decay_per_day": 0.01}]},
            "qa": {"answer_backend": "sim:careful", "judges": ["strict"], "conditions": ["memory"]},
        }
    )
    root = tmp_path_factory.mktemp("runs")
    found = sweep("personas", grid, runs_dir=root, progress=False, max_workers=1)
    forgetting_curve(found, max_workers=1)
    return load_run(found.path)


def _kept_rows(run: Run) -> list[dict[str, Any]]:
    text = (run.path / FORGETTING_ROWS).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _labelled_asks() -> dict[str, int]:
    """Per owner: the answers the labels say are asked again (module docstring)."""
    asks: dict[str, int] = {}
    for owner in load_dataset(resolve_dataset("personas"))[:OWNERS]:
        total = 0
        for question in owner.questions:
            if question.kind != "answerable":
                continue
            stated = False
            for index in range(len(owner.sessions)):
                active = {f.id for f in owner.active_gold_facts(index)}
                held = set(question.evidence.facts) <= active
                if stated and not held:
                    break
                total += int(stated)
                stated = stated or held
        asks[owner.user_id] = total
    return asks


def _expected(rows: list[dict[str, Any]]) -> dict[str, tuple[int, float, float]]:
    """Per lane: answers asked, the retained share pooled over owners, and the memory's
    tokens per owner (mean over sessions, then over owners)."""
    asked: dict[str, int] = defaultdict(int)
    kept: dict[str, int] = defaultdict(int)
    tokens: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        lane, user = str(row["lane_id"]), str(row["user_id"])
        asked[lane] += int(row["asked"])
        kept[lane] += int(row["retained"])
        tokens[lane][user].append(float(row["memory_tokens"]))
    out = {}
    for lane, owners in tokens.items():
        means = [sum(v) / len(v) for v in owners.values()]
        out[lane] = (asked[lane], kept[lane] / asked[lane], sum(means) / len(means))
    return out


def _section_rows(markdown: str) -> list[list[str]]:
    section = markdown.split("## Forgetting operating curve", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def test_the_kept_rows_ask_what_the_labels_say(run: Run) -> None:
    rows = _kept_rows(run)
    want = _labelled_asks()
    assert sum(want.values()) > 0
    for lane in run.lanes:
        per_owner: dict[str, int] = defaultdict(int)
        for row in rows:
            if row["lane_id"] == lane:
                per_owner[str(row["user_id"])] += int(row["asked"])
        assert dict(per_owner) == want
    assert all(0 <= int(r["retained"]) <= int(r["asked"]) for r in rows)
    manifest = json.loads((run.path / FORGETTING_MANIFEST).read_text(encoding="utf-8"))
    assert manifest["reference"] == next(iter(run.lanes))  # the seed default's lane


def test_the_report_shows_the_kept_curve(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert main(["report", str(run.path), "-o", str(out)]) == 0
    markdown = (out / "summary.md").read_text(encoding="utf-8")
    shown = _section_rows(markdown)
    expected = _expected(_kept_rows(run))
    assert len(shown) == len(expected) == 2
    for cells, lane in zip(shown, run.lanes, strict=True):
        asked, share, tokens = expected[lane]
        assert cells[0].replace("\\", "") == run.label(lane)
        assert cells[4] == f"{asked:g}"
        value = re.match(r"([\d.]+)%", cells[5])
        assert value is not None and float(value.group(1)) == pytest.approx(share * 100, abs=0.05)
        assert cells[6].split()[0] == f"{tokens:.0f}"
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "Forgetting operating curve" in html
    assert "retained answers against memory size: the numbers" in html
    assert html.count("data:image/png") >= 1


@pytest.mark.parametrize(
    ("target", "text"),
    [(FORGETTING_ROWS, '{"lane_id": 1}\n'), (FORGETTING_MANIFEST, "{not json")],
)
def test_a_corrupt_curve_is_one_warning(
    run: Run, tmp_path: Path, caplog: pytest.LogCaptureFixture, target: Path, text: str
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run.path, copy)
    (copy / target).write_text(text, encoding="utf-8")
    out = tmp_path / "report"
    with caplog.at_level(logging.WARNING):
        assert main(["report", str(copy), "-o", str(out)]) == 0
    warned = [r for r in caplog.records if "forgetting curve" in r.getMessage()]
    assert len(warned) == 1
    assert str(copy / target) in warned[0].getMessage()
    assert "## Forgetting operating curve" not in (out / "summary.md").read_text(encoding="utf-8")


def test_the_rows_keep_the_lanes_order_and_every_answer() -> None:
    sizes = pd.DataFrame(
        {
            "lane_id": ["b", "b", "a", "a"],
            "sample": [0, 0, 0, 0],
            "user_id": ["u", "u", "u", "u"],
            "session_index": [0, 1, 0, 1],
            "memory_tokens": [5.0, 7.0, 3.0, 4.0],
        }
    )
    counts = pd.DataFrame(
        {"lane_id": ["a"], "sample": [0], "user_id": ["u"], "session_index": [1]}
    ).assign(asked=3, retained=2)
    rows = forgetting_rows(counts, sizes)
    assert list(rows["lane_id"]) == ["b", "b", "a", "a"]  # the lanes' order, not sorted
    assert list(rows["asked"]) == [0, 0, 0, 3] and list(rows["retained"]) == [0, 0, 0, 2]
    assert list(rows["memory_tokens"]) == [5.0, 7.0, 3.0, 4.0]
    lost = counts.assign(session_index=2)  # asked after a session with no memory size
    with pytest.raises(ValueError, match="no memory size"):
        forgetting_rows(lost, sizes)
