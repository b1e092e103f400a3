"""Memory QA in a sweep, on the personas dataset with the simulated model.

Expected values come from the profile's declared rates and from what each answer row says
its context held, never from the scoring code under test:

- an answerable question whose evidence reached the answer prompt is answered with
  ``answer_rate``, else (a wrong on-topic guess) accepted with the judge's leniency; without
  its evidence it gets an abstention (wrong) with ``abstain_rate``, else a guess accepted with
  the leniency; so the expected accuracy is a sum of per-answer probabilities and the count of
  right answers lies within four standard deviations of it;
- the cause of a wrong answer from memory is recomputed from the replay record: the snapshot
  (is the evidence stored, verbatim, as the profile words it), the row's injected ids, the
  parsed replies (was it proposed below the lane's threshold) and the gold memory's verdict;
- one draw serves every judge, so the strict judge never accepts what the lenient one
  rejects, and the verdicts flip on a wrong on-topic answer with the difference of their
  leniencies.
"""

from __future__ import annotations

import json
import math
import shutil
import zlib
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from memlab.backends.caching.cache import CacheMode
from memlab.core.pipeline.llm import Backend, BackendError, Completion, CompletionRequest
from memlab.datasets import Owner, load_dataset, resolve_dataset
from memlab.grids.grid import Grid
from memlab.grids.qa_spec import QASpec
from memlab.postrun.qa_step import IncompleteQAError, add_qa, qa_backend
from memlab.reporting.qa.qa_section import compare_under_judges, qa_text
from memlab.runs.run import Run, load_run
from memlab.runs.rundir import QA_ANSWERS, RunDir
from memlab.scoring.comparing.comparison import compare
from memlab.scoring.qa.qa_metrics import accuracy_table, cause_table, judge_agreement
from memlab.simulation.model import SimulatedBackend
from memlab.simulation.profile import load_profile
from memlab.simulation.qa_replies import ABSTAIN_TEXT, AnswerDecision
from memlab.sweeps.driver import sweep

ANSWER_RATE, ABSTAIN_RATE = 0.8, 0.5
LENIENCY = {"lenient": 0.7, "strict": 0.1}
CONDITIONS = ["memory", "none", "full_context", "gold_memory"]
FATE_ORDER = ("never_proposed", "below_threshold", "not_injected", "injected")


@pytest.fixture(scope="module")
def personas() -> list[Owner]:
    return load_dataset(resolve_dataset("personas"))


@pytest.fixture(scope="module")
def profile_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    careful = load_profile("careful").model_dump(mode="json")
    for key in ("confidence", "invented_confidence"):  # numbers again, as YAML keys
        if careful.get(key):
            careful[key] = {float(k): v for k, v in careful[key].items()}
    for key in ("importance", "other_importance"):  # the tiered calls' ratings, likewise
        careful["tiered"][key] = {float(k): v for k, v in careful["tiered"][key].items()}
    careful["name"] = "qa-test"
    careful["qa"] = {
        "answer_rate": ANSWER_RATE,
        "abstain_rate": ABSTAIN_RATE,
        "trap_rate": 0.3,
        "judge_leniency": LENIENCY,
    }
    # YAML keeps the confidence keys numbers (JSON would make them text).
    path = tmp_path_factory.mktemp("profile") / "qa-test.yaml"
    path.write_text(yaml.safe_dump(careful), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run(profile_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("qa")
    spec = f"sim:{profile_path}"
    grid = Grid.from_mapping(
        {
            "name": "qa",
            "base": {"backend": spec, "max_facts": 100},
            # A tight budget leaves held facts out of the prompt; the threshold drops proposals.
            "axes": {"fact_confidence_threshold": [0.5, 0.95], "max_injection_tokens": [100, 4000]},
            "qa": {
                "answer_backend": spec,
                "judges": ["lenient", "strict"],
                "conditions": CONDITIONS,
            },
        }
    )
    return sweep(
        resolve_dataset("personas"),
        grid,
        runs_dir=root / "runs",
        cache_dir=root / "cache",
        progress=False,
        max_workers=2,
    )


def _verdict(row: Mapping[str, Any], judge: str) -> bool:
    return (row["verdicts"].get(judge) or {}).get("answer") is True


def _present(row: Mapping[str, Any], owner: Owner, snapshot: Mapping[str, Any]) -> bool:
    """Whether every evidence fact of the row's question reached its answer prompt."""
    question = next(q for q in owner.questions if q.id == row["question_id"])
    gold = owner.gold_facts()
    # The simulated answerer recognises fact evidence only as a stored fact's line; the raw
    # history (full_context) shows the conversations in their own words, so it never has it.
    if row["condition"] in ("none", "full_context") or not question.evidence.facts:
        return False
    if row["condition"] == "gold_memory":
        return set(question.evidence.facts) <= set(row["injected"])
    shown = {f["content"] for f in snapshot["facts"] if f["id"] in set(row["injected"])}
    return all(gold[g].content in shown for g in question.evidence.facts)


def _records(run: Run, owners: list[Owner]) -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for lane in run.lanes:
        for owner in owners:
            found[lane, owner.user_id] = RunDir(run.path).read_owner_record(lane, owner.user_id)
    return found


def test_one_row_per_lane_owner_question_and_condition(run: Run, personas: list[Owner]) -> None:
    answers = run.qa_answers
    questions = sum(len(o.questions) for o in personas)
    assert len(answers) == 4 * questions * len(CONDITIONS)
    assert not answers.duplicated(["lane_id", "user_id", "question_id", "condition"]).any()
    assert answers["error"].isna().all() and (answers["judge_errors"] == 0).all()
    assert run.judges == ["lenient", "strict"] and run.judge == "lenient"
    # Questions are asked right after the session they name.
    by_id = {
        (o.user_id, q.id): o.session_index(q.after_session) for o in personas for q in o.questions
    }
    asked = answers.apply(lambda r: by_id[r["user_id"], r["question_id"]], axis=1)
    assert (asked == answers["session_index"]).all()


def test_accuracy_per_condition_matches_the_profile(run: Run, personas: list[Owner]) -> None:
    owners = {o.user_id: o for o in personas}
    records = _records(run, personas)
    answers = run.qa_answers
    answerable = answers[answers["kind"] == "answerable"]
    present_share = {}
    for judge, leniency in LENIENCY.items():
        table = accuracy_table(answers, judges=[judge]).set_index(["lane_id", "condition"])
        for (lane, condition), rows in answerable.groupby(["lane_id", "condition"]):
            right = expected = variance = 0.0
            shown = 0
            for row in rows.to_dict("records"):
                snapshot = records[lane, row["user_id"]]["snapshots"][row["session_index"]]
                present = _present(row, owners[row["user_id"]], snapshot)
                shown += present
                p = (
                    ANSWER_RATE + (1 - ANSWER_RATE) * leniency
                    if present
                    else ((1 - ABSTAIN_RATE) * leniency)
                )
                expected += p
                variance += p * (1 - p)
                right += _verdict(row, judge)
            slack = 4 * math.sqrt(variance) + 1e-9
            assert abs(right - expected) <= slack, (lane, condition, judge, right, expected)
            measured = table.loc[(lane, condition)]
            assert measured["accuracy"] == pytest.approx(right / len(rows))
            assert measured["accuracy_lo"] <= measured["accuracy"] <= measured["accuracy_hi"]
            present_share[lane, condition] = shown / len(rows)
    # The conditions order as their contexts do: nothing, the lane's memory, the labels.
    for lane in run.lanes:
        assert present_share[lane, "none"] == present_share[lane, "full_context"] == 0.0
        assert present_share[lane, "gold_memory"] >= present_share[lane, "memory"]
    # The summary's headline is the memory condition under the first judge.
    summary = run.summary
    for lane in run.lanes:
        rows = answerable[(answerable["lane_id"] == lane) & (answerable["condition"] == "memory")]
        right = sum(_verdict(r, "lenient") for r in rows.to_dict("records"))
        assert summary.loc[lane, "qa_accuracy"] == pytest.approx(right / len(rows))


def _fate(row: Mapping[str, Any], owner: Owner, record: Mapping[str, Any], threshold: float) -> str:
    """The earliest pipeline stage that lost an evidence fact, from the record alone."""
    question = next(q for q in owner.questions if q.id == row["question_id"])
    if not question.evidence.facts:
        return "no_evidence"
    gold = owner.gold_facts()
    snapshot = record["snapshots"][row["session_index"]]
    fates = []
    for gold_id in question.evidence.facts:
        content = gold[gold_id].content
        held = [f for f in snapshot["facts"] if f["content"] == content]
        if held:
            injected = any(f["id"] in set(row["injected"]) for f in held)
            fates.append("injected" if injected else "not_injected")
            continue
        below = any(
            (call.get("parse") or {}).get("ok")
            and call["session_index"] <= row["session_index"]
            and any(
                f.get("content") == content and f.get("confidence", 1) < threshold
                for f in call["parse"]["data"].get("newFacts", [])
            )
            for call in record["calls"]
        )
        fates.append("below_threshold" if below else "never_proposed")
    return min(fates, key=FATE_ORDER.index)


def expected_causes(run: Run, personas: list[Owner], judge: str) -> dict[str, Counter[str]]:
    """Per lane, the causes of wrong answers from memory under ``judge``, recomputed from the
    replay records and the gold memory's answers (nothing of the scoring code)."""
    owners = {o.user_id: o for o in personas}
    records = _records(run, personas)
    answers = run.qa_answers
    answerable = answers[answers["kind"] == "answerable"]
    gold_right = {
        (r["lane_id"], r["user_id"], r["question_id"]): _verdict(r, judge)
        for r in answerable[answerable["condition"] == "gold_memory"].to_dict("records")
    }
    expected: dict[str, Counter[str]] = {lane: Counter() for lane in run.lanes}
    for row in answerable[answerable["condition"] == "memory"].to_dict("records"):
        if _verdict(row, judge):
            continue
        threshold = run.lanes[row["lane_id"]].fact_confidence_threshold
        fate = _fate(
            row, owners[row["user_id"]], records[row["lane_id"], row["user_id"]], threshold
        )
        if fate == "injected":
            right = gold_right[row["lane_id"], row["user_id"], row["question_id"]]
            fate = "answered_wrong" if right else "wrong_with_gold_memory"
        expected[row["lane_id"]][fate] += 1
    return expected


def assert_causes(run: Run, expected: dict[str, Counter[str]], judge: str) -> Counter[str]:
    """The cause table of ``run`` under ``judge`` equals ``expected``; returns the total."""
    table = cause_table(run.qa_answers, judge).set_index("lane_id")
    seen: Counter[str] = Counter()
    for lane, counts in expected.items():
        got = {
            c: int(v) for c, v in table.loc[lane].items() if c not in ("wrong", "answered") and v
        }
        assert got == dict(counts), lane
        assert table.loc[lane, "wrong"] == sum(counts.values())
        seen.update(counts)
    return seen


def test_every_wrong_answer_from_memory_has_its_cause(run: Run, personas: list[Owner]) -> None:
    seen = assert_causes(run, expected_causes(run, personas, "lenient"), "lenient")
    # The grid makes each cause happen: a high threshold, a tight budget, a fallible answerer.
    # (One draw per question serves every condition, so an answerer wrong with the evidence
    # in its memory is wrong with the gold memory too: never "answered_wrong" here; the
    # misled answerer below makes it happen.)
    assert {"never_proposed", "below_threshold", "not_injected"} <= set(seen)
    assert "wrong_with_gold_memory" in seen and "answered_wrong" not in seen


def test_full_context_is_the_raw_history_within_the_budget(run: Run) -> None:
    answers = run.qa_answers
    keys = ["lane_id", "user_id", "question_id"]
    full = answers[answers["condition"] == "full_context"].set_index(keys).sort_index()
    none = answers[answers["condition"] == "none"].set_index(keys).sort_index()
    mean_tokens = {}
    for lane, rows in full.groupby(level="lane_id"):
        budget = run.lanes[str(lane)].max_injection_tokens
        assert (rows["context_tokens"] <= budget).all() and (rows["context_tokens"] > 0).any()
        assert (rows["injected"].map(len) == 0).all()  # a history holds no memory facts
        mean_tokens[budget] = rows["context_tokens"].mean()
    assert mean_tokens[4000] > mean_tokens[100]
    # Neither context shows fact evidence as a stored fact and one draw serves each question:
    # on answerable questions (evidence: facts) the simulated answerer says the same thing
    # with the raw history as with nothing. (An adversarial question's evidence is a turn,
    # which the raw history can hold: there they may differ.)
    assert list(full.index) == list(none.index)
    facts = full["kind"] == "answerable"
    assert facts.sum() > 100
    assert list(full.loc[facts, "answer"]) == list(none.loc[facts, "answer"])


MISLED = "Purple elephants on Tuesdays"
"""A reply no simulated judge accepts (it is not on the topic of any question)."""


class _Misled:
    """The simulated answerer, misled by a lane's memory: where it would give the right
    answer from a memory that is not the labels (no fact line at the gold memory's confidence
    1.00; the simulated updater never proposes 1.0), it replies :data:`MISLED` instead for
    every other question. A test instrument with known truth: which replies it changed."""

    name = "misled"

    def __init__(self, inner: SimulatedBackend) -> None:
        self.inner, self.model = inner, inner.model
        self.changed: set[tuple[str, str]] = set()

    def complete(self, request: CompletionRequest) -> Completion:
        prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
        decision = self.inner.decide_qa(prompt, request.params.seed)
        chosen = isinstance(decision, AnswerDecision) and decision.outcome == "answer"
        if chosen and "| 1.00]" not in prompt and zlib.crc32(decision.question_id.encode()) % 2:
            self.changed.add((decision.user_id, decision.question_id))
            return Completion(text=MISLED, model=self.model)
        return self.inner.complete(request)


def test_injected_but_answered_wrong_is_counted_where_the_memory_misled(
    run: Run, personas: list[Owner], profile_path: Path, tmp_path: Path
) -> None:
    target = tmp_path / "runs" / run.name
    shutil.copytree(run.path, target)
    sim = qa_backend(f"sim:{profile_path}", resolve_dataset("personas"))
    assert isinstance(sim, SimulatedBackend)
    misled = _Misled(sim)
    spec = QASpec(
        answer_backend="misled:sim",
        judges=["lenient", "strict"],
        conditions=["memory", "gold_memory"],
    )
    done = add_qa(
        load_run(target),
        spec,
        cache_dir=tmp_path / "cache",
        backend_factory=lambda s: misled,
        progress=False,
    )
    answers = done.qa_answers
    memory = answers[(answers["condition"] == "memory") & (answers["kind"] == "answerable")]
    # The independent count: memory answers the instrument changed (each had its evidence in
    # the prompt, else the simulated answerer would not have answered) whose gold-memory
    # answer was right.
    gold = answers[answers["condition"] == "gold_memory"]
    gold_right = {
        (r["lane_id"], r["user_id"], r["question_id"]): _verdict(r, "strict")
        for r in gold.to_dict("records")
    }
    changed = [r for r in memory.to_dict("records") if r["answer"] == MISLED]
    assert {(r["user_id"], r["question_id"]) for r in changed} <= misled.changed
    count = Counter(
        r["lane_id"] for r in changed if gold_right[r["lane_id"], r["user_id"], r["question_id"]]
    )
    assert sum(count.values()) > 10
    table = cause_table(answers, "strict").set_index("lane_id")
    for lane in done.lanes:
        assert table.loc[lane, "answered_wrong"] == count[lane], lane
    # And every other cause as the records say.
    assert_causes(done, expected_causes(done, personas, "strict"), "strict")


def test_judge_band_comes_from_the_declared_leniencies(run: Run) -> None:
    answers = run.qa_answers
    graded = answers[answers["kind"] == "answerable"]
    rows = graded.to_dict("records")
    # One draw serves both judges: the strict one accepts nothing the lenient one rejects.
    assert all(_verdict(r, "lenient") or not _verdict(r, "strict") for r in rows)
    flips = sum(_verdict(r, "lenient") != _verdict(r, "strict") for r in rows)
    # A wrong answer that is not an abstention is an on-topic guess; one draw per (question,
    # answer) decides both verdicts, so each distinct guess flips or not in every row.
    guesses = {
        (r["user_id"], r["question_id"], r["answer"])
        for r in rows
        if r["answer"] != ABSTAIN_TEXT and r["f1"] < 1.0
    }
    flipped = {
        (r["user_id"], r["question_id"], r["answer"])
        for r in rows
        if _verdict(r, "lenient") != _verdict(r, "strict")
    }
    assert flipped <= guesses
    p = LENIENCY["lenient"] - LENIENCY["strict"]
    slack = 4 * math.sqrt(len(guesses) * p * (1 - p))
    assert abs(len(flipped) - len(guesses) * p) <= slack, (len(flipped), len(guesses))
    agreement = judge_agreement(answers)
    assert agreement["flips"].sum() == flips
    # An abstention on an answerable question is wrong without a judge: no judge saw one, and
    # the agreement counts only the answers the judges graded.
    assert all((r["verdicts"] == {}) == (r["answer"] == ABSTAIN_TEXT) for r in rows)
    assert agreement["graded"].sum() == sum(r["answer"] != ABSTAIN_TEXT for r in rows)
    memory = agreement[agreement["condition"] == "memory"]
    assert (memory["flip_rate"] > 0).all() and (memory["kappa"] < 1).all()


class _Counting:
    """The simulated model under a cacheable spec, counting its calls and failing the first
    ``fail`` ones (a refused connection)."""

    name = "counting"

    def __init__(self, inner: Backend, fail: int = 0) -> None:
        self.inner, self.fail, self.calls = inner, fail, 0
        self.model = inner.model

    def complete(self, request: CompletionRequest) -> Completion:
        self.calls += 1
        if self.calls <= self.fail:
            raise BackendError("connection refused (test)")
        return self.inner.complete(request)


@pytest.fixture
def copied(run: Run, tmp_path: Path) -> Run:
    target = tmp_path / "runs" / run.name
    shutil.copytree(run.path, target)
    return load_run(target)


def _spec() -> QASpec:
    # An unregistered prefix: the response cache keeps its replies (the simulated model's
    # own spec skips the cache).
    return QASpec(
        answer_backend="counting:sim", judges=["lenient", "strict"], conditions=CONDITIONS
    )


def test_an_interrupted_qa_step_resumes_from_the_cache(
    copied: Run, tmp_path: Path, profile_path: Path
) -> None:
    sim = qa_backend(f"sim:{profile_path}", resolve_dataset("personas"))
    cache = tmp_path / "cache"
    failing = _Counting(sim, fail=5)
    with pytest.raises(IncompleteQAError) as caught:
        add_qa(copied, _spec(), cache_dir=cache, backend_factory=lambda s: failing, progress=False)
    broken = caught.value.run
    assert not broken.qa_manifest["complete"]
    assert broken.qa_answers["error"].notna().any()
    first = failing.calls
    # Again: only the 5 failed answers are sent (with the verdicts of their new replies).
    retry = _Counting(sim)
    done = add_qa(copied, _spec(), cache_dir=cache, backend_factory=lambda s: retry, progress=False)
    assert done.qa_manifest["complete"]
    assert done.qa_answers["error"].isna().all() and (done.qa_answers["judge_errors"] == 0).all()
    assert 5 <= retry.calls <= 5 * (1 + 2) and first > 100
    # Once more, read-only: every answer and verdict from the cache, the same table.
    before = (copied.path / QA_ANSWERS).read_text(encoding="utf-8")
    cached = _Counting(sim)
    again = add_qa(
        copied,
        _spec(),
        cache_dir=cache,
        cache_mode=CacheMode.READ_ONLY,
        backend_factory=lambda s: cached,
        progress=False,
    )
    assert cached.calls == 0 and again.qa_answers["cached"].all()
    kept = ["lane_id", "user_id", "question_id", "condition", "answer", "verdicts", "fate"]
    after = (again.path / QA_ANSWERS).read_text(encoding="utf-8")
    assert [{k: json.loads(line)[k] for k in kept} for line in after.splitlines()] == [
        {k: json.loads(line)[k] for k in kept} for line in before.splitlines()
    ]


def test_robustness_to_the_judge_is_decided_in_the_headline_family(run: Run) -> None:
    """Under the headline judge, each judged row's verdict is the headline comparison's own
    (the same pairs, rates and Holm family); a difference robust to the judge is one the
    headline finds, in the same direction."""
    keys = ["baseline_lane", "lane", "metric"]
    for primary in (None, ["qa_accuracy"], ["recall", "qa_accuracy", "parse_failure_rate"]):
        headline = compare(run, primary=primary)
        robust = compare_under_judges(run, primary=primary)
        merged = robust.merge(headline[[*keys, "verdict"]], on=keys, how="left")
        assert len(merged) == len(robust) > 0
        assert list(merged[f"verdict:{run.judge}"]) == list(merged["verdict"]), primary
        for row in merged.to_dict("records"):
            if str(row["judge_robust"]).startswith("robust to the judge: "):
                assert row["judge_robust"].endswith(f": {row['verdict']}")


def test_the_qa_text_says_what_the_simulated_answerer_cannot_read(run: Run) -> None:
    text = qa_text(run)
    identity = run.qa_manifest["identity"]["answer_backend"]
    assert f"answered by {identity['name']}" in text and "[simulated]" in text
    # The run asks full_context of a simulated answerer: the section says what that measures.
    assert "full_context scores like none here" in text


def test_memory_is_read_right_after_the_session_the_question_names(run: Run) -> None:
    """Each answer from memory reads the snapshot taken after its question's session: every
    injected fact is held then, and some were added by that very session (read one session
    earlier, they would be missing)."""
    answers = run.qa_answers
    memory = answers[(answers["condition"] == "memory") & (answers["sample"] == 0)]
    records: dict[tuple[str, str], Any] = {}
    added_then = 0
    for row in memory.to_dict("records"):
        key = (row["lane_id"], row["user_id"])
        if key not in records:
            records[key] = RunDir(run.path).read_owner_record(*key)
        snapshots = records[key]["snapshots"]
        index = row["session_index"]
        held = {str(f["id"]) for f in snapshots[index]["facts"]}
        before = {str(f["id"]) for f in snapshots[index - 1]["facts"]} if index else set()
        assert set(row["injected"]) <= held, (row["question_id"], index)
        added_then += bool(set(row["injected"]) - before)
    assert added_then > 0


HUGE = "blah " * 2_000_000  # 10 MB: a server that ignores max_tokens


class _Flooding:
    """The simulated answerer, replying :data:`HUGE` to every other question it would answer
    (by question id), and recording the longest prompt it was sent (a test instrument)."""

    name = "flooding"

    def __init__(self, inner: SimulatedBackend) -> None:
        self.inner, self.model = inner, inner.model
        self.flooded: set[tuple[str, str]] = set()
        self.longest_prompt = 0

    def complete(self, request: CompletionRequest) -> Completion:
        prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
        self.longest_prompt = max(self.longest_prompt, len(prompt))
        decision = self.inner.decide_qa(prompt, request.params.seed)
        if isinstance(decision, AnswerDecision) and zlib.crc32(decision.question_id.encode()) % 2:
            self.flooded.add((decision.user_id, decision.question_id))
            return Completion(text=HUGE, model=self.model)
        return self.inner.complete(request)


def test_a_huge_answer_is_a_failed_call_that_is_never_scored_nor_judged(
    copied: Run, profile_path: Path
) -> None:
    from memlab.qa.reply_bounds import MAX_REPLY_CHARS

    sim = qa_backend(f"sim:{profile_path}", resolve_dataset("personas"))
    assert isinstance(sim, SimulatedBackend)
    flooding = _Flooding(sim)
    spec = QASpec(answer_backend="flooding:sim", judges=["lenient"], conditions=["memory"])
    with pytest.raises(IncompleteQAError, match="more than the 65536"):
        add_qa(copied, spec, backend_factory=lambda s: flooding, progress=False)
    lines = (copied.path / QA_ANSWERS).read_text(encoding="utf-8").splitlines()
    answers = [json.loads(line) for line in lines]
    failed = [r for r in answers if r["error"] is not None]
    assert {(r["user_id"], r["question_id"]) for r in failed} == flooding.flooded != set()
    for row in failed:
        assert f"{len(HUGE)} characters, more than the {MAX_REPLY_CHARS}" in row["error"]
        assert row["answer"] is None and row["f1"] is None and row["bleu1"] is None
        assert row["verdicts"] == {}
    assert all(r["answer"] != HUGE for r in answers) and len(failed) < len(answers)
    # No judge prompt carried a huge answer: the longest prompt is an ordinary one.
    assert flooding.longest_prompt < MAX_REPLY_CHARS
