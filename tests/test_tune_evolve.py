"""``tune.evolve``: GEPA rewrites the update prompt from memlab's failure records.

Known truth from simulated instruments: ``sim:attentive`` declares in its YAML (read here with
``yaml.safe_load``) the prompt phrase that raises its recall, and the simulated reflector
(:mod:`memlab.simulation.reflector`, a stand-in for a reflection model) adds a declared phrase
only when the feedback it reads names a failure the phrase addresses. The expected prompt and
verdict come from the profile; the expected feedback from the run files, read here as JSON.
"""

from __future__ import annotations

import json
import re
import sys
from importlib import resources, util
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import copied_personas

from memlab.backends.registry import MINIMAL_CONTRACT_REPLY
from memlab.cli.main import main
from memlab.core.pipeline.llm import CompletionRequest
from memlab.core.prompts import PromptRegistry
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid, GridError
from memlab.matching.matchers import default_matcher
from memlab.postrun.rescoring import replays
from memlab.reporting.tuning.tune import tune
from memlab.reporting.tuning.tune_evolve import EvolveError, reflector
from memlab.reporting.tuning.tune_feedback import owner_feedback
from memlab.reporting.tuning.tune_spec import load_tune
from memlab.simulation.profile import load_profile
from memlab.simulation.reflector import SimulatedReflector
from memlab.sweeps.driver import sweep

needs_gepa = pytest.mark.skipif(util.find_spec("gepa") is None, reason="pip install gepa")


def _declared(name: str) -> dict[str, Any]:
    path = resources.files("memlab.simulation") / "profiles" / f"{name}.yaml"
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def _grid(folder: Path, copies: int, backend: str, evolve: dict[str, Any]) -> Path:
    copied_personas(folder / "people.jsonl", copies)
    grid = {
        "name": "evolve",
        "dataset": "people.jsonl",
        "base": {"backend": backend},
        "tune": {
            "split": {"train": 0.4, "validation": 0.2, "test": 0.4, "seed": 3},
            "space": {"prompt": ["default"]},
            "objective": {"metric": "recall"},
            "evolve": evolve,
        },
    }
    path = folder / "tune.yaml"
    path.write_text(yaml.safe_dump(grid), encoding="utf-8")
    return path


@needs_gepa
def test_evolution_finds_the_declared_prompt_feature_and_the_held_out_verdict_confirms_it(
    tmp_path: Path,
) -> None:
    profile = _declared("attentive")
    (effect,) = profile["prompt_effects"]
    phrase = effect["when_contains"].casefold()
    assert phrase not in PromptRegistry().get("default").template.casefold()
    # The declared effect raises the share of revealed facts proposed: recall goes up.
    assert effect["set"]["propose_rate"] > profile["propose_rate"]
    # 42 owners: 17 train, 8 validation, 17 held out. 22 owner replays: the start on the
    # validation owners, then one rewrite tried on 3 train owners and, kept, on validation.
    path = _grid(tmp_path, 3, "sim:attentive", {"reflect_backend": "sim:attentive",
                                                 "max_metric_calls": 22})  # fmt: skip
    result = tune(path, runs_dir=tmp_path / "runs", max_trials=2)
    assert result.start["prompt"] == "default"
    assert result.best["prompt"].startswith("evolved-"), "\n".join(result.lines())
    assert result.verdict("recall") == "better", "\n".join(result.lines())
    saved = json.loads((tmp_path / "runs" / "evolve" / "tune.json").read_text("utf-8"))
    record = saved["evolution"]["prompts"][result.best["prompt"]]
    assert record["parent"] == "default" and record["evolved"]
    assert saved["evolution"]["simulated_reflector"] is True
    text = (tmp_path / "runs" / "evolve" / record["file"]).read_text("utf-8")
    assert phrase in " ".join(text.split()).casefold()
    assert "[simulated reflector" in "\n".join(result.lines())


def _violating_profile(folder: Path) -> Path:
    """``attentive`` whose replies often break the schema (violations with pointers)."""
    data = _declared("attentive")
    data.update(name="violating", failures={"schema_violation": 0.3})
    path = folder / "violating.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _evaluated_run(evolve_dir: Path, owners: set[str]) -> Path:
    """The evaluation run of the starting prompt on exactly ``owners``."""
    start = PromptRegistry().get("default").sha256[:8]
    for run in sorted(evolve_dir.glob(f"eval-{start}-*")):
        calls = [json.loads(x) for x in (run / "calls.jsonl").read_text("utf-8").splitlines()]
        if {c["user_id"] for c in calls} == owners:
            return run
    raise AssertionError(f"no evaluation of the start on {sorted(owners)} in {evolve_dir}")


def _missed_gold(run: Path, dataset: Path, owner: str) -> list[str]:
    """Active gold facts of ``owner`` that no final stored fact states word for word (the
    profile stores verbatim)."""
    (record_file,) = run.glob(f"lanes/*/owners/{owner}.json")
    record = json.loads(record_file.read_text("utf-8"))
    stored = {f["content"] for f in record["snapshots"][-1]["facts"]}
    rows = [json.loads(x) for x in dataset.read_text("utf-8").splitlines()]
    (row,) = [r for r in rows if r["user_id"] == owner]
    gold: dict[str, str] = {}
    retracted: set[str] = set()
    for session in row["sessions"]:
        labels = session.get("labels", {})
        gold.update({f["id"]: f["content"] for f in labels.get("facts", [])})
        retracted.update(labels.get("retracts", []))
    return [t for gid, t in gold.items() if gid not in retracted and t not in stored]


@needs_gepa
def test_the_reflector_reads_the_failed_replies_and_missed_facts_of_the_candidate(
    tmp_path: Path,
) -> None:
    profile_path = _violating_profile(tmp_path)
    reflector = SimulatedReflector(load_profile(profile_path))
    path = _grid(tmp_path, 1, f"sim:{profile_path}",
                 {"reflect_backend": f"sim:{profile_path}", "max_metric_calls": 9})  # fmt: skip
    tune(path, runs_dir=tmp_path / "runs", max_trials=1, reflector=reflector)
    assert reflector.requests, "the reflector was never asked"
    request = reflector.requests[0]  # the first rewrite reads the start's failures
    owners = set(re.findall(r"### owner\s+(\S+)", request))
    run = _evaluated_run(tmp_path / "runs" / "evolve" / "evolve", owners)
    calls = [json.loads(x) for x in (run / "calls.jsonl").read_text("utf-8").splitlines()]
    violations = [v for c in calls if not c["parse_ok"] for v in c["violations"]]
    assert violations, "the profile's schema violations should have produced some"
    for violation in violations:
        assert f"{violation['keyword']} at {violation['pointer'] or '/'}" in request
    missed = [t for o in owners for t in _missed_gold(run, tmp_path / "people.jsonl", o)]
    assert missed, "the profile proposes 75% of facts: some must be missed"
    for text in missed:
        assert repr(text) in request


def test_evolution_without_gepa_is_a_one_line_error_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "gepa", None)  # import gepa raises ImportError
    path = _grid(tmp_path, 1, "sim:attentive", {"reflect_backend": "sim:attentive"})
    code = main(["tune", str(path), "--runs-dir", str(tmp_path / "runs"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "pip install 'memlab[tune]'" in err, err
    assert not list((tmp_path / "runs").glob("*/evolve/eval-*")), "nothing replayed"
    # Without tune.evolve the search never imports it.
    plain = _grid(tmp_path, 1, "sim:attentive", {"reflect_backend": "sim:attentive"})
    data = yaml.safe_load(plain.read_text("utf-8"))
    del data["tune"]["evolve"]
    plain.write_text(yaml.safe_dump(data), encoding="utf-8")
    # --reflect-backend turns evolution on for a grid without the key: GEPA is needed.
    flag = ["--reflect-backend", "sim:attentive", "--no-progress"]
    assert main(["tune", str(plain), "--runs-dir", str(tmp_path / "runs3"), *flag]) == 2
    assert "pip install 'memlab[tune]'" in capsys.readouterr().err
    assert main(["tune", str(plain), "--runs-dir", str(tmp_path / "runs2"), "--max-trials",
                 "1", "--no-progress", "--allow-inconclusive"]) == 0  # fmt: skip


def _request(prompt: str, feedback: str) -> str:
    """A reflection request shaped as GEPA sends it: the prompt, then the feedback."""
    return f"I gave these instructions:\n```\n{prompt}\n```\nFeedback:\n```\n{feedback}\n```"


def test_the_simulated_reflector_adds_only_what_the_profile_declares_for_the_named_failure() -> (
    None
):
    declared = _declared("attentive")
    (effect,) = declared["prompt_effects"]
    phrase = effect["when_contains"]
    # The effect raises propose_rate and lowers invent_rate; failures stay as they are.
    assert effect["set"]["propose_rate"] > declared["propose_rate"]
    assert "failures" not in effect["set"]
    reflect = SimulatedReflector(load_profile("attentive"))
    start = "Update the memory.\n{current_memory}\n{conversation}"
    missed = reflect(_request(start, "missed gold fact: 'Lives in Oslo': never proposed"))
    assert phrase in missed and start in missed
    # A failed reply alone: the declared effect does not address it, so a plain edit.
    failed = reflect(_request(start, "failed reply (session 0): truncated"))
    assert phrase not in failed and "JSON object alone" in failed
    # Nothing named: the prompt comes back as it was; a phrase already there is not added again.
    assert reflect(_request(start, "no failure recorded")) == f"```\n{start}\n```"
    done = f"{phrase}\n{start}"
    assert reflect(_request(done, "missed gold fact: 'x': never proposed")).count(phrase) == 1
    assert reflect.requests[0] == _request(
        start, "missed gold fact: 'Lives in Oslo': never proposed"
    )


def _graded(row: dict[str, Any]) -> bool | None:
    """The strict judge's verdict on an answer row; an abstention no judge saw is wrong by
    rule; None when nothing graded it (no verdict, or the answer call failed)."""
    by_key = (row.get("verdicts") or {}).get("strict", {})
    if by_key.get("answer") is not None:
        return by_key["answer"] is True
    if row.get("error") is None and row.get("abstained") is True and not by_key:
        return False
    return None


def test_the_feedback_names_each_question_answered_wrong_from_memory_and_its_cause(
    tmp_path: Path,
) -> None:
    grid = {
        "name": "qa",
        "owners": ["amara", "raj"],
        "base": {"backend": "sim:sloppy"},
        "qa": {"answer_backend": "sim:sloppy", "judges": ["strict"],
               "conditions": ["memory", "gold_memory"]},
    }  # fmt: skip
    run = sweep("personas", Grid.from_mapping(grid), runs_dir=tmp_path, progress=False)
    rows = [json.loads(x) for x in (run.path / "qa/answers.jsonl").read_text("utf-8").splitlines()]
    answerable = {
        (r["user_id"], r["condition"], r["session_index"], r["question_id"]): r
        for r in rows
        if r["kind"] == "answerable"
    }
    graded = {k: _graded(r) for k, r in answerable.items()}
    questions = {
        q["id"]: q["question"]
        for line in resolve_dataset("personas").read_text("utf-8").splitlines()
        for q in json.loads(line).get("questions", [])
    }
    found = 0
    for replay in replays(run):
        user = replay.owner.user_id
        expected = set()
        for (owner, condition, session, qid), row in answerable.items():
            verdict = graded[(owner, condition, session, qid)]
            if owner != user or condition != "memory" or verdict is True:
                continue  # an unjudged answer counts as wrong, as in the accuracy
            cause = row["fate"] if verdict is False else "no_verdict"
            if cause == "injected":  # split by the gold memory's answer to the same question
                gold_ok = graded.get((owner, "gold_memory", session, qid))
                cause = "wrong_with_gold_memory" if gold_ok is False else "answered_wrong"
            expected.add((questions[qid], cause))
        feedback = owner_feedback(run, replay, default_matcher())
        assert {(w["question"], w["cause"]) for w in feedback.wrong_answers} == expected
        found += len(expected)
        for question, cause in expected:
            assert f"question answered wrong: {question!r}" in feedback.text()
            assert cause in feedback.text()
    assert found, "sim:sloppy answers some questions wrong"


def test_a_bad_evolve_key_names_the_file_and_key(tmp_path: Path) -> None:
    path = _grid(tmp_path, 1, "sim:attentive", {"reflect_backend": "sim:attentive", "rounds": 3})
    with pytest.raises(GridError, match=r"tune\.evolve\.rounds"):
        load_tune(path)
    path = _grid(tmp_path, 1, "sim:attentive", {"max_metric_calls": 3})
    with pytest.raises(GridError, match=r"tune\.evolve\.reflect_backend"):
        load_tune(path)


def test_a_backend_reflector_sends_the_request_and_an_unknown_one_is_named() -> None:
    backend = reflector("scripted")  # answers every request with the minimal valid update
    request = CompletionRequest(messages=[{"role": "user", "content": "rewrite this prompt"}])
    assert json.loads(backend.complete(request).text) == json.loads(MINIMAL_CONTRACT_REPLY)
    assert isinstance(reflector("sim:attentive"), SimulatedReflector)
    with pytest.raises(EvolveError, match=r"reflect_backend 'nosuch:model'"):
        reflector("nosuch:model")
