"""The consolidation curve and forgetting of a personas sweep (DeerFlow against the tiered
memory) with the simulated model and memory QA.

Which questions are asked again, and after which sessions, is counted here from the QA
step's answer table and the dataset's labels (a question is asked again after every later
session while its evidence facts stay active); forgetting events and the gold facts they
lost are counted here from the owner records with a matcher of exact text; neither by the
code under test.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from chart_layout import layout_problems

from memlab.backends.caching.cache import CacheMode
from memlab.cli.main import main
from memlab.core.pipeline.llm import Backend, Completion, CompletionRequest
from memlab.datasets import Owner, load_dataset, resolve_dataset
from memlab.grids.grid import Grid
from memlab.grids.qa_spec import QASpec, resolve_prompts
from memlab.postrun.consolidation import (
    add_curve,
    curve,
    curve_answers,
    forgetting_table,
)
from memlab.postrun.qa_step import add_qa, qa_backend
from memlab.reporting.figures.charts import empty_reason
from memlab.reporting.figures.memory_time import (
    consolidation_chart,
    curve_numbers,
    forgetting_chart,
    forgetting_numbers,
    memory_time_section,
)
from memlab.reporting.report import build_report
from memlab.runs.run import Run, load_run
from memlab.runs.rundir import CURVE_ANSWERS, RunDir
from memlab.scoring.consolidation import memory_tokens
from memlab.scoring.forgetting import FORGETTING_COUNTS
from memlab.sweeps.driver import sweep

SPEC = "sim:careful"


@pytest.fixture(scope="module")
def personas() -> list[Owner]:
    return load_dataset(resolve_dataset("personas"))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("curve")
    grid = Grid.from_mapping(
        {
            "name": "curve",
            "base": {"backend": SPEC},
            "axes": {"memory": ["deerflow", "tiered"]},
            "qa": {"answer_backend": SPEC, "judges": ["lenient", "strict"],
                   "conditions": ["memory"]},
        }
    )  # fmt: skip
    return sweep(
        resolve_dataset("personas"), grid, runs_dir=root / "runs", progress=False, max_workers=2
    )


@pytest.fixture(scope="module")
def asked(run: Run) -> Run:
    add_curve(run, max_workers=2)
    return run


def _expected(run: Run, personas: list[Owner]) -> set[tuple[str, str, str, int]]:
    """(lane, owner, question, session) of every re-ask the curve must make: the reference
    right away, then each later session while the evidence stays active."""
    owners = {o.user_id: o for o in personas}
    answers = run.qa_answers
    right = answers[
        (answers["kind"] == "answerable")
        & answers["verdicts"].map(lambda v: (v.get("lenient") or {}).get("answer") is True)
    ]
    found = set()
    for row in right.itertuples(index=False):
        owner = owners[str(row.user_id)]
        question = next(q for q in owner.questions if q.id == row.question_id)
        for index in range(int(row.session_index) + 1, len(owner.sessions)):
            active = {f.id for f in owner.active_gold_facts(index)}
            if not set(question.evidence.facts) <= active:
                break
            found.add((str(row.lane_id), str(row.user_id), str(row.question_id), index))
            first = (str(row.lane_id), str(row.user_id), str(row.question_id))
            found.add((*first, int(row.session_index)))  # the reference, when asked again
    return found


def test_the_curve_asks_exactly_the_correct_answers_again(
    asked: Run, personas: list[Owner]
) -> None:
    reasks, manifest = curve_answers(asked)
    made = {
        (str(r.lane_id), str(r.user_id), str(r.question_id), int(r.session_index))
        for r in reasks.itertuples(index=False)
    }
    expected = _expected(asked, personas)
    assert made == expected and len(reasks) == len(expected) > 0
    assert (reasks["condition"] == "memory").all() and reasks["error"].isna().all()
    assert manifest["every"] == 1 and manifest["judge"] == "lenient" and manifest["complete"]


def test_one_point_per_session_per_lane(asked: Run, personas: list[Owner]) -> None:
    table = curve(asked)
    sessions = len(personas[0].sessions)
    assert len(table) == sessions * len(asked.lanes)
    for lane in asked.lanes:
        assert list(table[table["lane_id"] == lane]["session_index"]) == list(range(sessions))
    # Memory size: the mean over owners of the snapshots' sizes, counted here again.
    lane = next(iter(asked.lanes))
    last = [
        memory_tokens(RunDir(asked.path).read_owner_record(lane, o.user_id)["snapshots"][-1])
        for o in personas
    ]
    row = table[(table["lane_id"] == lane) & (table["session_index"] == sessions - 1)]
    assert float(row["memory_tokens"].iloc[0]) == pytest.approx(sum(last) / len(last))
    summary = asked.summary.loc[lane, "memory_tokens"]
    assert float(summary) == pytest.approx(sum(last) / len(last))


def test_every_n_sessions_and_a_rerun_answered_from_the_cache(run: Run, tmp_path: Path) -> None:
    """The simulated model is never cached: the QA step is run again on a copy of the run
    under a cacheable name for it, then the curve twice, the second time read-only."""
    copy = tmp_path / "run"
    shutil.copytree(run.path, copy)
    calls: list[str] = []
    spec = QASpec(answer_backend="counting:sim", judges=["lenient"], conditions=["memory"])
    judges = resolve_prompts(spec).judges

    def factory(_: str) -> Backend:
        return _Counting(qa_backend(SPEC, resolve_dataset("personas"), judges), calls)

    cache = tmp_path / "cache"
    qa = add_qa(copy, spec, backend_factory=factory, cache_dir=cache, progress=False)
    before = len(calls)
    every2 = add_curve(qa, every=2, backend_factory=factory, cache_dir=cache)
    made = len(calls) - before
    again = add_curve(
        load_run(copy),
        every=2,
        backend_factory=factory,
        cache_dir=cache,
        cache_mode=CacheMode.READ_ONLY,
    )
    assert made > 0 and len(calls) == before + made  # every answer and verdict cached
    assert again["error"].isna().all() and again["cached"].all()
    shown = ["lane_id", "user_id", "question_id", "session_index", "answer", "verdicts"]
    assert again[shown].equals(every2[shown])
    assert len(every2) > 0 and (((every2["session_index"] - every2["asked_at"]) % 2) == 0).all()


def _exact(stored: str, gold: str) -> bool:
    return stored.casefold() == gold.casefold()


class _Exact:
    name = "exact"

    def covers(self, stored: str, gold: str) -> bool:
        return _exact(stored, gold)


def _counted(owner: Owner, record: dict[str, Any]) -> Counter[str]:
    """Events, memories and gold facts lost by kind, from the record (see the docstring)."""
    found: Counter[str] = Counter()
    events = record["forgetting"]
    for position, event in enumerate(events):
        kind, index = event["kind"], event["session_index"]
        removed = {item["content"].casefold() for item in event["removed"]}
        left = {f["content"].casefold() for f in record["snapshots"][index]["facts"]}
        left |= {
            item["content"].casefold()
            for later in events[position + 1 :]
            if later["session_index"] == index
            for item in later["removed"]
        }
        if event["kept"]:
            left.add(event["kept"]["content"].casefold())
        active = {f.content.casefold() for f in owner.active_gold_facts(index)}
        found[f"forget_{kind}"] += 1
        found[f"forget_{kind}_memories"] += len(event["removed"])
        found[f"lost_{kind}"] += len((removed & active) - left)
    return found


def test_forgetting_counts_equal_a_count_from_the_records(
    asked: Run, personas: list[Owner]
) -> None:
    table = forgetting_table(asked, matcher=_Exact()).set_index(["lane_id", "user_id"])
    deerflow, tiered = list(asked.lanes)
    assert table.loc[deerflow, list(FORGETTING_COUNTS)].isna().all(axis=None)  # n/a, never 0
    events = 0
    for owner in personas:
        record = RunDir(asked.path).read_owner_record(tiered, owner.user_id)
        assert "forgetting" not in RunDir(asked.path).read_owner_record(deerflow, owner.user_id)
        expected = _counted(owner, record)
        events += len(record["forgetting"])
        row = table.loc[(tiered, owner.user_id)]
        for column in FORGETTING_COUNTS:
            assert row[column] == expected[column], (owner.user_id, column)
    assert events > 0  # weeks between sessions: importance decays below the threshold
    numbers = forgetting_numbers(asked).set_index("configuration")
    assert set(numbers.loc[asked.label(deerflow)].drop("owners")) == {"n/a"}


def test_charts_keep_their_layout_and_tables_show_their_numbers(asked: Run) -> None:
    for chart in (consolidation_chart, forgetting_chart):
        fig = chart(asked)
        assert empty_reason(fig) is None and layout_problems(fig) == []
    table = curve(asked)
    numbers = curve_numbers(asked)
    assert len(numbers) == len(table)
    for row, p in zip(numbers.itertuples(index=False), table["collapse_p"], strict=True):
        shown = str(row.retained)
        if shown == "-":
            assert row.collapse == "no"
            continue
        assert row.reference != "-"  # the curve asked its reference
        if str(row[6]).endswith("[-]"):  # too few owners for an interval: nothing flagged
            assert row.collapse != "COLLAPSE"
            continue
        hi_s = float(str(row[6]).split("[")[1].rstrip("]").split(", ")[1])
        assert (row.collapse == "COLLAPSE") == (p < 0.05 and hi_s < 1.0)


def test_the_report_folds_the_section(asked: Run, tmp_path: Path) -> None:
    section = memory_time_section([asked])
    assert section is not None and not section.curve.empty
    paths = build_report([asked], tmp_path / "report")
    html = paths.html.read_text(encoding="utf-8")
    assert "<details class='section'><summary><h2>Memory over time</h2></summary>" in html
    assert "Consolidation curve and memory size: the numbers" in html
    assert "Forgetting by kind: the numbers" in html
    assert "## Memory over time" in paths.markdown.read_text(encoding="utf-8")


def test_a_run_without_a_curve_shows_its_forgetting(run: Run, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    shutil.copytree(run.path, bare)
    (bare / CURVE_ANSWERS).unlink(missing_ok=True)
    (bare / "qa" / "curve.json").unlink(missing_ok=True)
    section = memory_time_section([load_run(bare)])
    assert section is not None  # the tiered lane forgets
    assert section.notes == ["bare: no curve asked (memlab qa RUN --curve-every 1)"]
    assert set(section.curve["retained"]) == {"-"} and not section.forgetting.empty
    assert memory_time_section([]) is None


def test_the_qa_command_asks_the_curve(
    run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run.path, copy)
    args = ["qa", str(copy), "--no-progress", "--workers", "2"]
    assert main([*args, "--curve-every", "2"]) == 0
    out = capsys.readouterr().out
    assert "consolidation curve" in out and "[simulated] memory=tiered" in out
    _, manifest = curve_answers(load_run(copy))
    assert manifest["every"] == 2
    assert main([*args, "--curve-every", "0"]) == 2
    assert "the sessions between askings must be at least 1" in capsys.readouterr().err


class _Counting:
    """A backend that records each request it answers (cache hits never reach it)."""

    def __init__(self, inner: Backend, calls: list[str]) -> None:
        self.inner, self.calls = inner, calls
        self.name, self.model = "counting-sim", inner.model

    def complete(self, request: CompletionRequest) -> Completion:
        self.calls.append(request.messages[-1]["content"][:40])
        return self.inner.complete(request)
