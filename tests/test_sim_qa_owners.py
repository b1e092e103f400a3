"""The simulated answerer answers each owner's own question, even when two owners' sessions
and questions read alike: the QA step names the owner and session of each answer request
(``CompletionRequest.about``), and only for the simulated model.

The two owners are written by hand: the same session text, the same question, different
answers. Expected answers are the owners' own (the profile answers every question whose
evidence is in the prompt, and abstains on none without it), never read from the code under
test.
"""

from __future__ import annotations

from typing import Any

from memlab.backends.caching.cache import request_key
from memlab.core.pipeline.llm import CompletionRequest
from memlab.datasets.models import Owner
from memlab.grids.qa_spec import QASpec
from memlab.qa.answering import AnswerSettings, ReplayPoint, answer_tasks, ask
from memlab.qa.conditions import ReadPath
from memlab.qa.qa_prompts import answer_prompts
from memlab.simulation.model import SimulatedBackend
from memlab.simulation.profile import load_profile
from memlab.simulation.profile_model import SimQAProfile

QUESTION = "Which city did I move to?"
ANSWERS = {"ann": "Lisbon", "bea": "Porto"}


def _owner(user_id: str, answer: str) -> Owner:
    start = "2025-03-01T10:00:00Z"
    session = {
        "thread_id": f"{user_id}/s0",
        "started_at": start,
        "messages": [
            {"role": "human", "content": "I finally moved last week.", "timestamp": start},
            {"role": "ai", "content": "Congratulations on the move!", "timestamp": start},
        ],
        "labels": {
            "facts": [
                {"id": f"{user_id}.f1", "content": f"Moved to {answer}", "category": "context"}
            ]
        },
    }
    later = dict(session, thread_id=f"{user_id}/s1", started_at="2025-03-09T10:00:00Z")
    later["labels"] = {"facts": []}
    question = {
        "id": "q1",
        "question": QUESTION,
        "answer": answer,
        "category": "single-hop",
        "kind": "answerable",
        "after_session": 1,
        "evidence": {"facts": [f"{user_id}.f1"]},
    }
    # A question asked earlier with the same text: the session index tells the two apart.
    early = dict(question, id="q0", answer="Nowhere yet", after_session=0)
    early["evidence"] = {"turns": [{"session": 0, "message": 0}]}
    return Owner.model_validate(
        {"user_id": user_id, "sessions": [session, later], "questions": [early, question]}
    )


OWNERS = [_owner(user_id, answer) for user_id, answer in ANSWERS.items()]


def _backend() -> SimulatedBackend:
    sure = SimQAProfile(answer_rate=1.0, abstain_rate=1.0)
    return SimulatedBackend(load_profile("careful").model_copy(update={"qa": sure}), dataset=OWNERS)


def _answers(settings: AnswerSettings, backend: SimulatedBackend) -> dict[str, Any]:
    found = {}
    for owner in OWNERS:
        point = ReplayPoint(owner, 1)
        rows = ask(point, owner.questions_after(1), backend=backend, settings=settings,
                   conditions=("gold_memory",))  # fmt: skip
        found[owner.user_id] = rows[0]["answer"]
    return found


def test_each_owner_gets_its_own_answer_when_the_request_names_it() -> None:
    settings = AnswerSettings(answer_prompts().get("default"), tell_subject=True)
    assert _answers(settings, _backend()) == ANSWERS
    # Without the owner the simulated model can only take the first question with that text
    # (ann's, asked after session 0), whose evidence neither prompt holds: both abstain.
    plain = AnswerSettings(answer_prompts().get("default"))
    answered = _answers(plain, _backend())
    assert answered["ann"] == answered["bea"] != ANSWERS["bea"]


def test_the_session_index_picks_the_question_asked_then() -> None:
    settings = AnswerSettings(answer_prompts().get("default"), tell_subject=True)
    backend = _backend()
    owner = OWNERS[1]
    (task,) = answer_tasks(
        ReplayPoint(owner, 0), owner.questions_after(0), ("full_context",), settings, ReadPath()
    )
    decision = backend.decide_qa(str(task.request.messages[-1]["content"]), 0, ("bea", 0))
    assert decision is not None and decision.question_id == "q0"
    assert task.request.about == ("bea", 0)


def test_only_the_simulated_answerer_is_told_and_real_keys_do_not_change() -> None:
    prompt = answer_prompts().get("default")
    assert QASpec(answer_backend="sim:careful").answer_settings(prompt).tell_subject
    assert not QASpec(answer_backend="openai:gpt-4o-mini").answer_settings(prompt).tell_subject
    request = CompletionRequest(messages=[{"role": "user", "content": "Q?"}])
    told = CompletionRequest(messages=request.messages, about=("ann", 1))
    other = CompletionRequest(messages=request.messages, about=("bea", 1))
    # Two owners' identical prompts are two requests for the simulated model...
    assert len({request_key("sim", "m", r) for r in (request, told, other)}) == 3
    # ...and a request that names no owner has the key it always had (the key document
    # without an "about" member).
    assert request_key("openai", "m", request) == request_key(
        "openai", "m", CompletionRequest(messages=[{"role": "user", "content": "Q?"}])
    )
