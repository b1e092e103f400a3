"""What a QA step writes and refuses, on one owner of the personas replayed by the simulated
model and asked by a plain function of the prompt (an instrument of this test: it answers
every question with one text and judges CORRECT when the reference appears in the answer).

Expected counts come from the dataset file (its questions and conditions), never from the
QA step's output; the manifest's checksum is computed again from the bytes on disk.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest

from memlab.core.pipeline.llm import BackendError, Completion, CompletionRequest
from memlab.datasets import resolve_dataset
from memlab.errors import MemlabError
from memlab.grids.grid import Grid
from memlab.grids.qa_spec import QAError, QASpec
from memlab.matching.base import LexicalMatcher
from memlab.matching.default_matcher import DefaultMatcher
from memlab.matching.matchers import resolve_matcher
from memlab.postrun import qa_step
from memlab.postrun.qa_step import (
    IncompleteQAError,
    JudgeErrorsError,
    add_qa,
    qa_backend,
    rewrite_fates,
    run_matcher,
)
from memlab.qa.qa_prompts import answer_prompts, judge_prompts
from memlab.runs.run import Run, load_run
from memlab.runs.rundir import QA_FORMAT, RunDir
from memlab.scoring.qa.qa_causes import FATES
from memlab.sweeps.driver import sweep

STRICT = judge_prompts().get("strict")
OWNER = "amara"


class _Agent:
    """Answers ``answer``; a refused connection to questions containing ``fail``; an
    unreadable verdict on questions containing ``unreadable``."""

    name = "agent"
    model = "agent-model"

    def __init__(self, answer: str, *, fail: str = "", unreadable: str = "") -> None:
        self.answer, self.fail, self.unreadable = answer, fail, unreadable

    def complete(self, request: CompletionRequest) -> Completion:
        prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
        graded = STRICT.parse(prompt)
        if graded is not None:
            if self.unreadable and self.unreadable in graded["question"]:
                return Completion("It could be CORRECT or WRONG.")
            right = graded["gold_answer"] in graded["answer"]
            return Completion(json.dumps({"label": "CORRECT" if right else "WRONG"}))
        if self.fail and self.fail in prompt:
            raise BackendError("connection refused")
        return Completion(self.answer)


def _owner() -> dict[str, Any]:
    lines = Path(resolve_dataset("personas")).read_text(encoding="utf-8").splitlines()
    found: dict[str, Any] = next(
        line for line in map(json.loads, lines) if line["user_id"] == OWNER
    )
    return found


@pytest.fixture
def run(tmp_path: Path) -> Run:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(_owner()) + "\n", encoding="utf-8")
    grid = Grid.from_mapping({"name": "one", "base": {"backend": "sim:careful"}})
    return sweep(path, grid, runs_dir=tmp_path / "runs", progress=False)


def _first_question() -> dict[str, Any]:
    return next(q for q in _owner()["questions"] if q["kind"] == "answerable")


def _spec(**changes: Any) -> QASpec:
    fields: dict[str, Any] = {
        "answer_backend": "agent",
        "judges": ["strict"],
        "conditions": ["memory", "none"],
    }
    return QASpec(**{**fields, **changes})


def _add(run: Run, agent: _Agent, **options: Any) -> Run:
    spec = options.pop("spec", _spec())
    return add_qa(run, spec, backend_factory=lambda _: agent, progress=False, **options)


def test_the_manifest_names_the_step_and_checks_the_table(run: Run) -> None:
    first = _first_question()
    done = _add(run, _Agent(f"It is {first['answer']}."))
    manifest = json.loads((run.path / "qa" / "manifest.json").read_text(encoding="utf-8"))
    questions = len(_owner()["questions"])
    assert manifest["qa_format"] == QA_FORMAT
    assert manifest["complete"] is True
    assert manifest["lanes"] == list(run.lanes)
    assert manifest["owners"] == [OWNER]
    assert manifest["questions_left_out"] == 0
    assert manifest["matcher"] == "default"  # the run's, as environment.json records it
    assert manifest["spec"]["conditions"] == ["memory", "none"]
    assert manifest["started_at"] <= manifest["finished_at"]
    assert manifest["started_at"].endswith(("Z", "+00:00"))
    identity = manifest["identity"]
    assert identity["answer_backend"] == identity["judge_backend"]
    assert "agent" in json.dumps(identity["answer_backend"])
    assert {"memlab", "answer_params", "judge_params"} <= set(identity)
    table = (run.path / "qa" / "answers.jsonl").read_bytes()
    facts = manifest["files"]["answers.jsonl"]
    assert hashlib.sha256(table).hexdigest() in json.dumps(facts)
    assert len(table.splitlines()) == questions * 2 == len(done.qa_answers)
    # The summary written beside it carries the QA rates.
    assert "qa_accuracy" in (run.path / "summary.csv").read_text(encoding="utf-8")


def test_rewritten_fates_record_their_matcher_and_the_new_checksum(run: Run) -> None:
    done = _add(run, _Agent("no idea"))
    before = json.loads((run.path / "qa" / "manifest.json").read_text(encoding="utf-8"))
    rows = [dict(r, fate="evicted") for r in done.qa_answers.to_dict("records")][:3]
    rewrite_fates(done, rows, "lexical")
    after = json.loads((run.path / "qa" / "manifest.json").read_text(encoding="utf-8"))
    table = (run.path / "qa" / "answers.jsonl").read_bytes()
    assert len(table.splitlines()) == 3
    assert after["matcher"] == "lexical"
    assert hashlib.sha256(table).hexdigest() in json.dumps(after["files"]["answers.jsonl"])
    assert after["identity"] == before["identity"] and after["owners"] == before["owners"]


def test_a_judge_may_leave_exactly_the_allowed_share_without_a_verdict(run: Run) -> None:
    first = _first_question()
    agent = _Agent(f"It is {first['answer']}.", unreadable=first["question"])
    # The question is asked under two conditions: two answers without a verdict.
    share = 2 / (len(_owner()["questions"]) * 2)
    done = _add(run, agent, max_judge_errors=share)
    assert len(done.qa_answers) == len(_owner()["questions"]) * 2
    with pytest.raises(JudgeErrorsError) as raised:
        _add(run, agent, max_judge_errors=share * 0.99)
    assert raised.value.counts["judge_errors:strict"] == 2
    assert raised.value.allowed == share * 0.99
    answers = len(done.qa_answers)
    assert str(raised.value) == (
        f"{run.path}: 2 of {answers} answers have no verdict from judge strict (its call failed "
        "or its reply named no single verdict): each counts as a wrong answer (allowed: "
        f"{share * 0.99:.0%} of answers); the answers are written. Use a judge that follows "
        "the judge prompt (check one with memlab judge audit), or accept them: "
        "--max-judge-errors SHARE, max_judge_errors=SHARE"
    )
    assert raised.value.run.path == run.path


def test_failed_calls_are_written_and_counted(run: Run) -> None:
    first = _first_question()
    agent = _Agent(f"It is {first['answer']}.", fail=first["question"])
    with pytest.raises(IncompleteQAError) as raised:
        _add(run, agent)
    # One question under two conditions: two failed answer calls.
    assert raised.value.failed == 2
    assert str(raised.value) == (
        f"2 QA call(s) in {run.path} failed (first: connection refused); fix the backend or "
        "record the responses, then run the QA step again to retry them (or allow an "
        "incomplete QA step: --allow-incomplete, allow_incomplete=True)"
    )
    assert raised.value.run.qa_manifest["complete"] is False
    done = _add(run, agent, allow_incomplete=True)
    assert int(done.qa_answers["error"].notna().sum()) == 2
    assert done.qa_manifest["complete"] is False


def test_settings_are_checked_before_any_call(run: Run) -> None:
    with pytest.raises(QAError, match="max_workers must be at least 1, got 0"):
        _add(run, _Agent("x"), max_workers=0)
    with pytest.raises(QAError) as raised:
        add_qa(run, None, backend_factory=lambda _: _Agent("x"), progress=False)
    assert str(raised.value) == (
        f"{run.path}: no QA settings: the run's grid has no qa: key; give them, e.g. "
        "memlab qa RUN --answer-backend local:smollm2"
    )
    # Settings given as a mapping are read like the grid's.
    mapping = {"answer_backend": "agent", "judges": ["strict"], "conditions": ["memory"]}
    done = _add(run, _Agent("x"), spec=mapping)
    assert set(done.qa_answers["condition"]) == {"memory"}
    assert done.judges == ["strict"]


def _with_matcher(run: Run, matcher: Any) -> Run:
    path = run.path / "environment.json"
    environment = json.loads(path.read_text(encoding="utf-8"))
    environment["matcher"] = matcher
    path.write_text(json.dumps(environment), encoding="utf-8")
    return load_run(run.path)


def test_the_runs_matcher_is_built_again_or_the_default_with_a_warning(
    run: Run, caplog: pytest.LogCaptureFixture
) -> None:
    assert isinstance(run_matcher(_with_matcher(run, {"name": "lexical"})), LexicalMatcher)
    with caplog.at_level(logging.WARNING, logger="memlab.postrun.qa_step"):
        judged = run_matcher(_with_matcher(run, {"name": "judge:openai:gpt-4o"}))
        unknown = run_matcher(_with_matcher(run, {"name": "no-such-matcher"}))
    assert isinstance(judged, DefaultMatcher) and isinstance(unknown, DefaultMatcher)
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings[0] == (
        f"{run.path}: matcher 'judge:openai:gpt-4o' asks an LLM; using the default matcher "
        "(give the judge matcher explicitly to use it)"
    )
    with pytest.raises(MemlabError) as unavailable:
        resolve_matcher("no-such-matcher")
    assert warnings[1] == (
        f"{run.path}: matcher 'no-such-matcher' unavailable ({unavailable.value}); "
        "using the default"
    )
    assert len(warnings) == 2
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="memlab.postrun.qa_step"):
        assert isinstance(run_matcher(_with_matcher(run, "default")), DefaultMatcher)
        assert isinstance(run_matcher(_with_matcher(run, {"name": None})), DefaultMatcher)
    assert caplog.records == []
    # The QA step scores fates with it and names it.
    done = _add(_with_matcher(run, {"name": "lexical"}), _Agent("x"))
    assert done.qa_manifest["matcher"] == "lexical"
    assert dataclasses.replace(done).qa_manifest["matcher"] == "lexical"


def test_every_sample_is_asked_and_only_answers_from_memory_get_a_fate(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(_owner()) + "\n", encoding="utf-8")
    grid = Grid.from_mapping({"name": "two", "samples": 2, "base": {"backend": "sim:careful"}})
    run = sweep(path, grid, runs_dir=tmp_path / "runs", progress=False)
    conditions = ["memory", "full_context"]
    done = _add(run, _Agent("no idea"), spec=_spec(conditions=conditions))
    answers = done.qa_answers
    questions = len(_owner()["questions"])
    assert len(answers) == questions * len(conditions) * 2
    assert answers.groupby(["sample", "condition"]).size().to_dict() == {
        (s, c): questions for s in (0, 1) for c in conditions
    }
    memory = answers[answers["condition"] == "memory"]
    assert (
        set(memory["fate"]) <= set(FATES)
        and memory["evidence_fates"].map(lambda d: isinstance(d, dict)).all()
    )
    assert answers.loc[answers["condition"] == "full_context", "fate"].isna().all()


def test_a_replay_record_that_lost_a_snapshot_is_refused(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = len(_owner()["sessions"])

    read = RunDir.read_owner_record

    def short(self: RunDir, *args: Any) -> dict[str, Any]:
        record = read(self, *args)
        return {**record, "snapshots": record["snapshots"][:-1]}

    monkeypatch.setattr(RunDir, "read_owner_record", short)
    message = (
        f"{OWNER}: the replay record has {sessions - 1} snapshots for {sessions} sessions; "
        "the dataset changed since the sweep: rerun it"
    )
    with pytest.raises(QAError) as raised:
        _add(run, _Agent("x"))
    assert str(raised.value) == message


def test_the_default_backends_give_the_simulated_model_its_dataset_and_judges(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(qa_step, "resolve_backend", lambda spec, **kw: seen.append((spec, kw)))
    qa_backend("sim:careful", tmp_path / "d.jsonl", [STRICT])
    qa_backend("sim:careful", tmp_path / "d.jsonl")
    qa_backend("scripted", tmp_path / "d.jsonl", [STRICT])
    assert seen == [
        ("sim:careful", {"dataset": tmp_path / "d.jsonl", "judges": [STRICT]}),
        ("sim:careful", {"dataset": tmp_path / "d.jsonl"}),
        ("scripted", {}),
    ]


def test_one_unreadable_verdict_of_one_answer_is_a_share_of_one(tmp_path: Path) -> None:
    """A step that asked one question once, its one verdict unreadable: 1 of 1 answers (100%),
    over any allowed share below 1."""
    owner = _owner()
    first = _first_question()
    owner["questions"] = [first]
    path = tmp_path / "single.jsonl"
    path.write_text(json.dumps(owner) + "\n", encoding="utf-8")
    grid = Grid.from_mapping({"name": "single", "base": {"backend": "sim:careful"}})
    single = sweep(path, grid, runs_dir=tmp_path / "runs", progress=False)
    agent = _Agent(f"It is {first['answer']}.", unreadable=first["question"])
    with pytest.raises(JudgeErrorsError) as raised:
        _add(single, agent, spec=_spec(conditions=["memory"]), max_judge_errors=0.6)
    assert raised.value.counts["judge_errors:strict"] == 1
    assert raised.value.counts["answers"] == 1


def test_a_file_where_the_qa_directory_goes_is_named_as_such(run: Run) -> None:
    (run.path / "qa").write_text("not a directory", encoding="utf-8")
    with pytest.raises(MemlabError) as raised:
        _add(run, _Agent("x"))
    assert str(raised.value) == (
        f"{run.path / 'qa'}: not a directory, where the run keeps its QA directory; move it away"
    )
    assert (run.path / "qa").read_text(encoding="utf-8") == "not a directory"


def test_a_default_matcher_this_install_cannot_build_is_named_in_a_warning(
    run: Run, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Without the embeddings extra, ``default`` builds ``default-lexical``: used, and said."""

    class _Lexical(LexicalMatcher):
        name = "default-lexical"  # type: ignore[assignment]

    lexical = _Lexical()
    monkeypatch.setattr(qa_step, "resolve_matcher", lambda name: lexical)
    with caplog.at_level(logging.WARNING, logger="memlab.postrun.qa_step"):
        assert run_matcher(_with_matcher(run, {"name": "default"})) is lexical
    assert [r.getMessage() for r in caplog.records] == [
        f"{run.path}: the run was scored by matcher 'default', which this install cannot "
        "build; using 'default-lexical' (install memlab[embeddings] to use 'default')"
    ]


def test_a_matcher_built_under_the_name_asked_is_used_without_a_warning(
    run: Run, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``default`` built as ``default`` (the embeddings extra installed), and another name
    built as whatever it builds: no warning; only ``default`` built as another is said."""

    class _Default(LexicalMatcher):
        name = "default"  # type: ignore[assignment]

    built = _Default()
    monkeypatch.setattr(qa_step, "resolve_matcher", lambda name: built)
    with caplog.at_level(logging.WARNING, logger="memlab.postrun.qa_step"):
        assert run_matcher(_with_matcher(run, {"name": "default"})) is built
        assert run_matcher(_with_matcher(run, {"name": "lexical"})) is built
    assert caplog.records == []


def test_the_step_logs_how_many_answers_it_wrote_and_where(
    run: Run, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="memlab.postrun.qa_step"):
        _add(run, _Agent("no idea"))
    answers = len(_owner()["questions"]) * 2  # two conditions
    path = run.path / "qa" / "answers.jsonl"
    assert f"qa: {answers} answers -> {path}" in [r.getMessage() for r in caplog.records]


class _Reading(_Agent):
    """:class:`_Agent`, keeping every answer prompt it is sent."""

    def __init__(self, answer: str) -> None:
        super().__init__(answer)
        self.prompts: list[str] = []

    def complete(self, request: CompletionRequest) -> Completion:
        prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
        if STRICT.parse(prompt) is None:
            self.prompts.append(prompt)
        return super().complete(request)


def _first_text(session: dict[str, Any]) -> str:
    """The first message of ``session`` that is plain text."""
    return next(m["content"] for m in session["messages"] if isinstance(m["content"], str))


def test_each_owner_is_answered_from_its_own_conversation(tmp_path: Path) -> None:
    """Three owners, the first without questions: the other two are asked, each with its own
    conversation as the full context (its answer from memory holds no conversation)."""
    lines = Path(resolve_dataset("personas")).read_text(encoding="utf-8").splitlines()
    owners = {o["user_id"]: o for o in map(json.loads, lines)}
    silent = {**owners["li_wei"], "questions": []}
    asked = [owners["amara"], owners["daniel"]]
    path = tmp_path / "three.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in [silent, *asked]), encoding="utf-8")
    grid = Grid.from_mapping({"name": "three", "base": {"backend": "sim:careful"}})
    three = sweep(path, grid, runs_dir=tmp_path / "runs", progress=False)
    agent = _Reading("no idea")
    done = _add(three, agent, spec=_spec(conditions=["full_context"]))
    # The lane's memory is always asked beside the conditions named: two answers a question.
    assert done.qa_answers.groupby("user_id").size().to_dict() == {
        o["user_id"]: len(o["questions"]) * 2 for o in asked
    }
    # A line the owner said in the session each question follows is in its prompt; the other
    # owner's line for the same session number is not.
    for owner, other in (asked, asked[::-1]):
        for question in owner["questions"]:
            index = [s["thread_id"] for s in owner["sessions"]].index(question["after_session"])
            said, not_said = (_first_text(o["sessions"][index]) for o in (owner, other))
            prompts = [p for p in agent.prompts if question["question"] in p]
            assert any(said in p for p in prompts), question["id"]  # the full context
            assert not any(not_said in p for p in prompts), question["id"]


def test_a_replay_record_without_snapshots_is_refused(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = RunDir.read_owner_record

    def bare(self: RunDir, *args: Any) -> dict[str, Any]:
        return {k: v for k, v in read(self, *args).items() if k != "snapshots"}

    monkeypatch.setattr(RunDir, "read_owner_record", bare)
    sessions = len(_owner()["sessions"])
    with pytest.raises(QAError) as raised:
        _add(run, _Agent("x"))
    assert str(raised.value) == (
        f"{OWNER}: the replay record has 0 snapshots for {sessions} sessions; "
        "the dataset changed since the sweep: rerun it"
    )


VIOLIN = "Keeps a violin called Ysolde"


class _Violin(_Agent):
    """:class:`_Agent`, answering ``Ysolde`` when the prompt holds :data:`VIOLIN`."""

    def complete(self, request: CompletionRequest) -> Completion:
        prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
        if STRICT.parse(prompt) is None and VIOLIN in prompt:
            return Completion("Ysolde")
        return super().complete(request)


def test_each_sample_is_answered_from_its_own_replay_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two samples; every snapshot of sample 1's record also stores :data:`VIOLIN`, sample 0's
    does not: exactly sample 1's answers from memory have it."""
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(_owner()) + "\n", encoding="utf-8")
    grid = Grid.from_mapping({"name": "two", "samples": 2, "base": {"backend": "sim:careful"}})
    run = sweep(path, grid, runs_dir=tmp_path / "runs", progress=False)
    read = RunDir.read_owner_record
    violin = {"id": "fact_violin", "content": VIOLIN, "category": "context", "confidence": 1.0}

    def marked(self: RunDir, lane_id: str, user_id: str, sample: int = 0) -> dict[str, Any]:
        record = read(self, lane_id, user_id, sample)
        if sample != 1:
            return record
        snapshots = [{**s, "facts": [*s.get("facts", []), violin]} for s in record["snapshots"]]
        return {**record, "snapshots": snapshots}

    monkeypatch.setattr(RunDir, "read_owner_record", marked)
    done = _add(run, _Violin("no idea"))
    answers = done.qa_answers
    questions = len(_owner()["questions"])
    saw = answers[answers["answer"] == "Ysolde"]
    assert len(saw) == questions
    assert set(saw["sample"]) == {1} and set(saw["condition"]) == {"memory"}


def test_the_full_context_is_counted_with_the_lanes_token_counting(tmp_path: Path) -> None:
    """A lane counting a token per four characters (``char``) with a 120-token budget: each
    full-context prompt holds a conversation text of ceil(characters / 4) tokens, at most
    120, and the row records that count."""
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(_owner()) + "\n", encoding="utf-8")
    base = {"backend": "sim:careful", "token_counting": "char", "max_injection_tokens": 120}
    grid = Grid.from_mapping({"name": "char", "base": base})
    run = sweep(path, grid, runs_dir=tmp_path / "runs", progress=False)
    agent = _Reading("no idea")
    done = _add(run, agent, spec=_spec(conditions=["full_context"]))
    # The default answer prompt around its memory: the text before and after it.
    before, after = answer_prompts().get("default").render("\x00", "\x01").split("\x00")
    rows = done.qa_answers[done.qa_answers["condition"] == "full_context"]
    assert len(rows) == len(_owner()["questions"])
    for row in rows.to_dict("records"):
        question = next(q for q in _owner()["questions"] if q["id"] == row["question_id"])
        end = after.replace("\x01", question["question"])
        [context] = {
            p[len(before) : len(p) - len(end)]
            for p in agent.prompts
            if p.startswith(before + "[Conversation ") and p.endswith(end)
        }
        assert row["context_tokens"] == math.ceil(len(context) / 4) <= 120, row["question_id"]
