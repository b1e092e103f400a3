"""Procedure questions in memory QA: asked of each lane's memory, scored by step-order accuracy.

A sweep of ``procedures`` with a procedural lane and a DeerFlow lane, the simulated model
learning and answering, and ``qa:``. Expected values come from the simulator's provenance:
which steps each ``procedures`` call kept (:meth:`SimulatedBackend.decide_procedures`) and
which steps the answerer named (:class:`~memlab.simulation.procedural.ProcedureAnswer`), and
from the profile's declared rates; never from memlab's scorer.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "kuzu", reason="the procedural memory needs Kuzu: pip install 'memlab[procedural]'"
)

from memlab.cli.main import main
from memlab.core.pipeline.llm import Completion, CompletionRequest
from memlab.core.procedure_prompts import procedures_prompt
from memlab.datasets.loader import load_dataset
from memlab.datasets.models import Owner
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid
from memlab.grids.qa_spec import resolve_prompts
from memlab.postrun.qa_jobs import read_path
from memlab.qa.answering import ReplayPoint, answer_tasks
from memlab.reporting.qa.qa_procedures import procedure_table
from memlab.reporting.qa.qa_section import qa_markdown, qa_section, qa_text
from memlab.runs.run import Run
from memlab.simulation.model import SimulatedBackend
from memlab.simulation.procedural import ProcedureAnswer
from memlab.simulation.qa_replies import ABSTAIN_TEXT, JudgeDecision
from memlab.sweeps.driver import sweep

OWNERS = load_dataset(resolve_dataset("procedures"))
CONDITIONS = ["memory", "none", "full_context", "gold_memory"]
FAILURE, LEARN, KEEP, NAME = 0.2, 0.75, 0.8, 0.85
PROFILE = f"""
name: teacher
failures: {{no_json: {FAILURE}}}  # a reply no parse rung recovers
procedural:
  learn_rate: {LEARN}
  step_keep_rate: {KEEP}
  answer_step_rate: {NAME}
"""


class _Recording:
    """The simulated model, recording every prompt it is sent (learning, answering, judging)."""

    name = "sim"

    def __init__(self, backend: SimulatedBackend) -> None:
        self.backend = backend
        self.requests: list[CompletionRequest] = []

    @property
    def model(self) -> str:
        return self.backend.model

    def identity(self) -> dict[str, Any]:
        return self.backend.identity()

    def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        return self.backend.complete(request)


def _prompt(request: CompletionRequest) -> str:
    return "\n".join(str(m.get("content", "")) for m in request.messages)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, _Recording, str]:
    root = tmp_path_factory.mktemp("procqa")
    profile = root / "teacher.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    recording = _Recording(SimulatedBackend(profile, dataset=OWNERS))
    spec = f"sim:{profile}"
    grid = Grid.from_mapping(
        {
            "name": "procqa",
            "base": {"backend": spec},
            "axes": {"memory": ["procedural", "deerflow"]},
            "qa": {"answer_backend": spec, "judges": ["lenient"], "conditions": CONDITIONS},
        }
    )
    run = sweep(
        "procedures",
        grid,
        runs_dir=root / "runs",
        progress=False,
        max_workers=1,
        backend_factory=lambda _spec: recording,
    )
    return run, recording, spec


def _learned(recording: _Recording) -> dict[str, tuple[int, ...]]:
    """Gold procedure id -> the steps the learning call kept (its reply parsed)."""
    template = procedures_prompt()
    learned: dict[str, tuple[int, ...]] = {}
    for request in recording.requests:
        prompt = _prompt(request)
        if template.parse(prompt) is None:
            continue
        decision = recording.backend.decide_procedures(prompt, request.params.seed)
        assert decision is not None
        if decision.failure is None:
            learned.update({s.procedure: s.kept for s in decision.sources})
    return learned


def _decisions(
    run: Run, recording: _Recording, condition: str = "memory"
) -> dict[tuple[str, str], ProcedureAnswer]:
    """(lane, question id) -> the simulated answerer's decision under ``condition``, for the
    request the QA step sent (rebuilt from the replay's snapshot and the lane's read path)."""
    spec = run.grid.qa
    assert spec is not None
    settings = spec.answer_settings(resolve_prompts(spec).answer)
    found: dict[tuple[str, str], ProcedureAnswer] = {}
    sent = {(_prompt(r), r.params.seed, r.about) for r in recording.requests}
    for lane, config in run.lanes.items():
        for owner in OWNERS:
            record = run.dir.read_owner_record(lane, owner.user_id)
            for index, question in owner.procedure_questions():
                point = ReplayPoint(owner, index, record["snapshots"][index])
                (task,) = answer_tasks(point, [question], (condition,), settings, read_path(config))
                request = task.request
                key = (_prompt(request), request.params.seed, request.about)
                assert key in sent  # the QA step sent exactly this request
                decision = recording.backend.decide_qa(*key)
                assert isinstance(decision, ProcedureAnswer)
                found[lane, question.id] = decision
    return found


def _lanes(run: Run) -> dict[str, str]:
    return {str(config.memory): lane for lane, config in run.lanes.items()}


def test_each_reply_scores_what_the_provenance_implies(swept: tuple[Run, _Recording, str]) -> None:
    run, recording, _ = swept
    learned = _learned(recording)
    decisions = _decisions(run, recording)
    lanes = _lanes(run)
    asked = run.qa_answers[run.qa_answers["kind"] == "procedure"]
    # Procedure questions are asked under every condition, once per lane and question.
    assert asked["condition"].value_counts().to_dict() == dict.fromkeys(CONDITIONS, 32)
    rows = asked[asked["condition"] == "memory"]
    assert len(rows) == 2 * sum(len(o.procedure_questions()) for o in OWNERS) == 32
    for row in rows.to_dict("records"):
        owner = next(o for o in OWNERS if o.user_id == row["user_id"])
        question = next(q for q in owner.questions if q.id == row["question_id"])
        gold = owner.gold_procedures()[str(question.procedure)]
        decision = decisions[row["lane_id"], row["question_id"]]
        if row["lane_id"] == lanes["procedural"]:
            # The prompt shows the steps the learning call kept, carried through the graph,
            # the snapshot, the recall by trigger and the injection.
            assert decision.shown == learned.get(gold.id, ())
        else:
            # DeerFlow's memory stores no procedure: no step reaches the prompt.
            assert decision.shown == ()
        assert set(decision.named) <= set(decision.shown)
        assert list(decision.named) == sorted(decision.named)  # in the gold order
        # Named in the gold order, the longest run in order is every named step.
        expected = len(decision.named) / len(gold.steps)
        assert row["step_accuracy"] == pytest.approx(expected)
        assert row["steps_named"] == list(decision.named)
        assert (row["answer"] == ABSTAIN_TEXT) == (not decision.named)
        assert row["verdicts"] == {} and row["judge_tokens"] == 0  # never judged
    # No judge was asked anything: the dataset has procedure questions only.
    judged = [r for r in recording.requests if isinstance(_judge(recording, r), JudgeDecision)]
    assert judged == []


def _judge(recording: _Recording, request: CompletionRequest) -> object:
    return recording.backend.decide_qa(_prompt(request), request.params.seed, request.about)


def _expected(run: Run, recording: _Recording, lane: str) -> tuple[float, float]:
    """Mean step-order accuracy and share of replies naming a step, from the provenance."""
    decisions = _decisions(run, recording)
    scores, recalled = [], []
    for owner in OWNERS:
        gold = owner.gold_procedures()
        for _, question in owner.procedure_questions():
            decision = decisions[lane, question.id]
            scores.append(len(decision.named) / len(gold[str(question.procedure)].steps))
            recalled.append(bool(decision.named))
    # Every owner has as many questions: the ratio of sums over owners is the plain mean.
    return sum(scores) / len(scores), sum(recalled) / len(recalled)


def test_the_summary_metrics_are_the_mean_and_the_share(
    swept: tuple[Run, _Recording, str],
) -> None:
    run, recording, _ = swept
    lanes = _lanes(run)
    summary = run.summary
    procedural = summary.loc[lanes["procedural"]]
    accuracy, recall = _expected(run, recording, lanes["procedural"])
    assert 0 < accuracy < 1 and 0 < recall < 1  # the rates leave something to measure
    for column, value in (
        ("qa_procedure_step_accuracy", accuracy),
        ("qa_procedure_recall", recall),
    ):
        assert procedural[column] == pytest.approx(value)
        assert procedural[f"{column}_lo"] < value < procedural[f"{column}_hi"]
    deerflow = summary.loc[lanes["deerflow"]]
    assert deerflow["qa_procedure_step_accuracy"] == 0 and deerflow["qa_procedure_recall"] == 0
    # Inside the intervals of the profile's implied values: a step is in the prompt when the
    # reply survived, the procedure was learned and the step kept; then named with NAME.
    implied_accuracy = (1 - FAILURE) * LEARN * KEEP * NAME
    assert procedural["qa_procedure_step_accuracy_lo"] <= implied_accuracy
    assert implied_accuracy <= procedural["qa_procedure_step_accuracy_hi"]
    named = KEEP * NAME
    implied_recall = [
        (1 - FAILURE) * LEARN * (1 - (1 - named) ** len(p.steps))
        for o in OWNERS
        for p in o.gold_procedures().values()
    ]
    mean_recall = sum(implied_recall) / len(implied_recall)
    assert (
        procedural["qa_procedure_recall_lo"] <= mean_recall <= procedural["qa_procedure_recall_hi"]
    )
    # Judged metrics have nothing to count: no answerable question was asked.
    assert math.isnan(procedural["qa_accuracy"])


def _pct(value: float) -> str:
    return f"{value:.1%}"


def test_the_report_and_the_cli_show_them(
    swept: tuple[Run, _Recording, str], capsys: pytest.CaptureFixture[str]
) -> None:
    run, recording, _ = swept
    lanes = _lanes(run)
    accuracy, recall = _expected(run, recording, lanes["procedural"])
    shown = [_pct(accuracy), _pct(recall)]
    text = qa_text(run)
    markdown = "\n".join(qa_markdown(qa_section([run])))
    assert "QA procedure step-order accuracy" in text
    assert "no answerable questions" in text and text.endswith("no answer is judged")
    assert "Procedure questions" in markdown
    for value in shown:
        assert value in text and value in markdown
    # memlab qa asks them again (the simulated model from the registry): the same numbers.
    assert main(["qa", str(run.path), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    line = next(x for x in printed.splitlines() if "memory=procedural" in x and "%" in x)
    assert all(f" {value} [" in line for value in shown)


def test_the_answerer_names_a_shown_step_with_its_declared_rate(tmp_path: Path) -> None:
    profile = tmp_path / "teacher.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    backend = SimulatedBackend(profile, dataset=OWNERS)
    owner = OWNERS[0]
    question = owner.questions[0]
    gold = owner.gold_procedures()[str(question.procedure)]
    shown = "; ".join(f"{i}) {s}" for i, s in enumerate(gold.steps, 1))
    prompt = f"Memory:\n- [available procedure | 1.00] {gold.name}: {shown}\n\n{question.question}"
    draws = 400
    named = 0
    for seed in range(draws):
        decision = backend.decide_qa(prompt, seed, (owner.user_id, 2))
        assert isinstance(decision, ProcedureAnswer)
        assert decision.shown == tuple(range(len(gold.steps)))
        named += len(decision.named)
    n = draws * len(gold.steps)
    half = 3.29 * math.sqrt(NAME * (1 - NAME) / n)  # 99.9%
    assert abs(named / n - NAME) <= half
    # A prompt without the procedure's steps gets the abstention.
    bare = backend.decide_qa(f"Memory: (empty)\n\n{question.question}", 0, (owner.user_id, 2))
    assert isinstance(bare, ProcedureAnswer) and bare.shown == () and bare.text == ABSTAIN_TEXT


def _steps_taught(owner: Owner, index: int) -> str:
    """Every message of ``owner``'s sessions up to ``index``, joined."""
    return "\n".join(m.content for s in owner.sessions[: index + 1] for m in s.messages)


@pytest.mark.parametrize("condition", ["none", "full_context", "gold_memory"])
def test_the_baselines_show_what_they_hold(
    swept: tuple[Run, _Recording, str], condition: str
) -> None:
    """none shows no step; full_context every step of the procedure (its conversation, all
    of it within the budget, says each step verbatim); gold_memory the labelled procedure to
    a read path that recalls procedures by trigger (the procedural lane), none to DeerFlow's."""
    run, recording, _ = swept
    lanes = _lanes(run)
    decisions = _decisions(run, recording, condition)
    rows = run.qa_answers[
        (run.qa_answers["kind"] == "procedure") & (run.qa_answers["condition"] == condition)
    ]
    for row in rows.to_dict("records"):
        owner = next(o for o in OWNERS if o.user_id == row["user_id"])
        index, question = next(
            (i, q) for i, q in owner.procedure_questions() if q.id == row["question_id"]
        )
        gold = owner.gold_procedures()[str(question.procedure)]
        everything = tuple(range(len(gold.steps)))
        assert all(step in _steps_taught(owner, index) for step in gold.steps)
        decision = decisions[row["lane_id"], row["question_id"]]
        holds = condition == "full_context" or (
            condition == "gold_memory" and row["lane_id"] == lanes["procedural"]
        )
        assert decision.shown == (everything if holds else ())
        assert row["step_accuracy"] == pytest.approx(len(decision.named) / len(gold.steps))
        assert row["steps_named"] == list(decision.named)


def _interval(text: str) -> tuple[float, float, float]:
    value, lo, hi = re.match(r"([\d.]+)% \[([\d.]+), ([\d.]+)\]", text).groups()  # type: ignore[union-attr]
    return float(value) / 100, float(lo) / 100, float(hi) / 100


def test_the_ceiling_is_inside_the_interval_of_the_declared_rate(
    swept: tuple[Run, _Recording, str],
) -> None:
    """Every step shown is named with NAME, in order: the implied step-order accuracy of the
    full conversation and of the gold procedures (recalled by trigger) is NAME; of no memory
    (and of DeerFlow's read path given gold procedures) 0."""
    run, _, _ = swept
    lanes = _lanes(run)
    table = procedure_table(run).set_index("lane_id")
    title = "QA procedure step-order accuracy"
    implied = {
        (lanes["procedural"], "full_context"): NAME,
        (lanes["deerflow"], "full_context"): NAME,
        (lanes["procedural"], "gold_memory"): NAME,
        (lanes["deerflow"], "gold_memory"): 0.0,
        (lanes["procedural"], "none"): 0.0,
        (lanes["deerflow"], "none"): 0.0,
    }
    for (lane, condition), want in implied.items():
        value, lo, hi = _interval(table.loc[lane, f"{title}, {condition}"])
        if want == 0.0:
            assert value == lo == 0.0  # no step named anywhere
        else:
            assert lo <= want <= hi
    # The ceiling lies above what the procedural memory keeps: it lost steps on the way.
    _, _, memory_hi = _interval(table.loc[lanes["procedural"], title])
    assert memory_hi < _interval(table.loc[lanes["procedural"], f"{title}, gold_memory"])[1]
