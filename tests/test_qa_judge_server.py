"""The LLM judge on the real path: the real ``openai`` SDK against a loopback server.

The server (:class:`fake_openai.FakeServer` with a reply function) is a scripted model: it
answers each question with its answer from the dataset, and judges as the test says, in the
shapes real judges reply in: a bare JSON object, JSON in prose, a code fence, the bare word,
and a malformed reply that names both labels. Every verdict the QA step records is checked
against the script, and the malformed reply is counted as "no verdict" (a wrong answer) in the
judge table and the session counts, never guessed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeServer

from memlab.backends.remote.openai_compat import OpenAICompatibleBackend
from memlab.backends.remote.retry import RetryPolicy
from memlab.core.pipeline.llm import allow_model_requests
from memlab.datasets import Owner, load_dataset, resolve_dataset
from memlab.grids.grid import Grid
from memlab.grids.qa_spec import QASpec
from memlab.postrun.qa_step import JudgeErrorsError, add_qa
from memlab.qa.qa_prompts import judge_prompts
from memlab.scoring.qa.qa_metrics import accuracy_table
from memlab.sweeps.driver import sweep

OWNERS = ["amara", "daniel"]
STRICT = judge_prompts().get("strict")
# How the scripted judge words its verdict on each question (by index among all questions);
# the verdict each shape must be read as: True (CORRECT), False (WRONG), None (no verdict).
SHAPES: list[tuple[str, bool | None]] = [
    ('{"label": "CORRECT"}', True),
    ('Looking at both answers, they match.\n{"label": "CORRECT"}', True),
    ('```json\n{"label": "WRONG"}\n```', False),
    ("CORRECT", True),
    ("The answer could be CORRECT or WRONG, I cannot tell.", None),  # malformed
    ('{"label": "WRONG"}', False),
]


@pytest.fixture(scope="module")
def owners() -> list[Owner]:
    return [o for o in load_dataset(resolve_dataset("personas")) if o.user_id in OWNERS]


def _content(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def test_verdicts_from_a_real_sdk_judge_are_parsed_and_a_malformed_one_is_counted(
    owners: list[Owner], tmp_path: Path
) -> None:
    questions = [q for o in owners for q in o.questions]
    shape_of = {q.question: SHAPES[i % len(SHAPES)] for i, q in enumerate(questions)}
    by_text = {q.question: q for q in questions}

    def reply(body: dict[str, Any]) -> str:
        prompt = _content(body)
        graded = STRICT.parse(prompt)
        if graded is not None:  # a judge prompt: the scripted verdict's shape
            return shape_of[graded["question"]][0]
        asked = next(text for text in by_text if text in prompt)
        return by_text[asked].answer or "I don't know."

    grid = Grid.from_mapping(
        {"name": "judge", "owners": OWNERS, "base": {"backend": "sim:careful"}}
    )
    run = sweep(resolve_dataset("personas"), grid, runs_dir=tmp_path / "runs", progress=False)
    spec = QASpec(answer_backend="server:scripted", judges=["strict"], conditions=["memory"])
    with FakeServer(reply=reply) as server, allow_model_requests():

        def factory(name: str) -> OpenAICompatibleBackend:
            return OpenAICompatibleBackend(
                "scripted-model",
                base_url=server.base_url,
                api_key="test",
                retry=RetryPolicy(max_attempts=1),
            )

        # Unreadable verdicts fail the step (after writing it) unless they are allowed.
        with pytest.raises(JudgeErrorsError) as raised:
            add_qa(run, spec, backend_factory=factory, max_workers=4, progress=False)
        sent = [json.loads(json.dumps(r["body"])) for r in server.requests]
    done = raised.value.run
    answers = done.qa_answers.set_index("question_id")
    # One answer and one verdict per question went through the SDK and the server.
    assert len(sent) == 2 * len(questions)
    assert all(body["model"] == "scripted-model" for body in sent)
    assert answers["error"].isna().all() and (answers["judge_errors"] == 0).all()
    assert (answers["prompt_tokens"] == 11).all()  # the server's usage, read by the SDK
    malformed = 0
    for question in questions:
        expected = shape_of[question.question][1]
        assert answers.loc[question.id, "verdicts"] == {"strict": {"answer": expected}}
        malformed += expected is None
    assert malformed >= 2
    assert raised.value.counts == {
        "answers": len(questions),
        "answer_errors": 0,
        "judge_errors:strict": malformed,
    }
    assert f"{malformed} of {len(questions)} answers have no verdict from judge strict" in str(
        raised.value
    )
    assert answers["judge_unreadable"].sum() == malformed
    # The malformed replies are "no verdict": counted wrong, and counted apart.
    answerable = [q for q in questions if q.kind == "answerable"]
    none = sum(shape_of[q.question][1] is None for q in answerable)
    right = sum(shape_of[q.question][1] is True for q in answerable)
    assert none >= 1
    (row,) = accuracy_table(done.qa_answers).to_dict("records")
    assert (row["judge_errors"], row["questions"]) == (none, len(answerable))
    assert row["accuracy"] == pytest.approx(right / len(answerable))
    assert done.sessions["qa_judge_errors"].sum() == none
    assert done.summary["qa_accuracy"].iloc[0] == pytest.approx(right / len(answerable))
