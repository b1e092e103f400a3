"""``memlab.qa.answering.ask`` scores a procedure question as the QA step does: the steps the
reply names in order, never a judge."""

from __future__ import annotations

from memlab.backends.scripted import ScriptedBackend
from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.qa.answering import AnswerSettings, ReplayPoint, ask
from memlab.qa.qa_prompts import answer_prompts, judge_prompts


def test_ask_scores_a_procedure_reply_by_its_steps_in_order() -> None:
    owner = load_dataset(resolve_dataset("procedures"))[0]
    ((index, question),) = owner.procedure_questions()[:1]
    steps = owner.gold_procedures()[str(question.procedure)].steps
    assert len(steps) == 5  # the hand-computed score below assumes five gold steps
    # The second, the first and the fourth step, one per line: the longest run in the gold
    # order is two steps (first then fourth, or second then fourth), so 2 / 5.
    reply = f"{steps[1]}\n{steps[0]}\n{steps[3]}"
    backend = ScriptedBackend([reply])  # one reply: a judge call would raise
    rows = ask(
        ReplayPoint(owner, index),
        [question],
        backend=backend,
        settings=AnswerSettings(answer_prompts().get("default")),
        judges=[judge_prompts().get("lenient")],
    )
    (row,) = rows
    assert row["steps_named"] == [1, 0, 3]
    assert row["step_accuracy"] == 2 / 5
    assert row["verdicts"] == {}
    assert len(backend.requests) == 1
