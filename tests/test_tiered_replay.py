"""The ``memory`` axis: DeerFlow lanes exactly as before, tiered lanes through the same sweep.

Expected values come from the simulated model's declared rates and its record of what it
decided (:meth:`SimulatedBackend.decide_tiered`), never from the metric code under test.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from builders import kill_slow_sweep

from memlab.backends.caching.cache import CacheMode
from memlab.backends.scripted import ScriptedBackend
from memlab.core.jsondoc.contract import Violation
from memlab.core.jsondoc.parsing import FailureCategory, parse_reply
from memlab.core.pipeline.llm import Completion, CompletionRequest
from memlab.core.tiered_prompts import CALL_CONTRACTS
from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid, GridError
from memlab.grids.lane import LaneConfig
from memlab.memory.strategy import call_kind, is_primary
from memlab.memory.tiers.options import TieredOptions
from memlab.memory.tiers.tiered import TieredSettings
from memlab.postrun.qa_jobs import read_path
from memlab.runs.run import Run
from memlab.simulation.model import SimulatedBackend
from memlab.simulation.profile_model import uniform
from memlab.simulation.provenance import ProvenanceMatcher
from memlab.sweeps.driver import sweep
from memlab.sweeps.grid_check import prompt_registry
from memlab.sweeps.plan import LaneBackends, resolve_lanes, tiered_settings

OWNERS = load_dataset(resolve_dataset("personas"))


# Fields records gained after the pins were measured: echo counting (memlab.core.jsondoc.echo).
_LATER_FIELDS = frozenset({"n_echoed", "echoed"})


def _scrubbed(value: Any) -> Any:
    """A record without wall-clock durations (the only field that differs between runs) and
    without the fields added since the pins below were measured."""
    if isinstance(value, dict):
        return {
            k: _scrubbed(v)
            for k, v in value.items()
            if k != "duration_s" and k not in _LATER_FIELDS
        }
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    return value


def _digest(path: Path) -> str:
    data = _scrubbed(json.loads(path.read_text(encoding="utf-8")))
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _sweep(grid: Grid, runs: Path, backend: Any, truth: SimulatedBackend) -> Run:
    """Sweep personas with ``backend`` for every lane, scored by ``truth``'s provenance."""
    return sweep(
        "personas",
        grid,
        runs_dir=runs,
        progress=False,
        max_workers=1,
        backend_factory=lambda _spec: backend,
        matcher=ProvenanceMatcher(truth),
    )


# What the same sweep wrote before lanes had a memory design (measured on that code).
DEERFLOW_LANE = "default-free-t0.7-m50-baseline-d30-careful-d2c67319"
DEERFLOW_RECORDS = {
    "amara": "18d34d19802a387e",
    "daniel": "7798416eb67da479",
    "li_wei": "328210969080094a",
}
DEERFLOW_CONFIG = "29e74d72b47aaba1"


def test_a_deerflow_lane_writes_what_it_wrote_before_the_axis(tmp_path: Path) -> None:
    grid = Grid.from_mapping(
        {"name": "ref", "max_owners": 3, "base": {"backend": "sim:careful", "max_facts": 50}}
    )
    run = sweep("personas", grid, runs_dir=tmp_path, progress=False, max_workers=1)
    assert list(run.lanes) == [DEERFLOW_LANE]
    lane_dir = tmp_path / "ref" / "lanes" / DEERFLOW_LANE
    digests = {p.stem: _digest(p) for p in sorted((lane_dir / "owners").glob("*.json"))}
    assert digests == DEERFLOW_RECORDS
    config = hashlib.sha256((lane_dir / "config.json").read_bytes()).hexdigest()[:16]
    assert config == DEERFLOW_CONFIG
    assert "memory" not in LaneConfig().model_dump()
    assert LaneConfig(memory="deerflow").point_id == LaneConfig().point_id
    assert LaneConfig(memory="tiered").point_id != LaneConfig().point_id
    assert LaneConfig(memory="tiered").model_dump()["memory"] == "tiered"


# ---------------------------------------------------------------------- both designs, one sweep

NOISY = """
name: noisy
propose_rate: 0.9
confidence: {0.9: 1.0}
failures: {fenced: 0.2}
tiered:
  summary_keep_rate: 0.9
  importance: {0.9: 0.5, 0.7: 0.25, 0.5: 0.25}
"""


class _Recording:
    """The simulated model, keeping every prompt it answered (for the expected values)."""

    name = "sim"

    def __init__(self, backend: SimulatedBackend) -> None:
        self.backend = backend
        self.prompts: list[tuple[str, int | None]] = []

    @property
    def model(self) -> str:
        return self.backend.model

    def identity(self) -> dict[str, Any]:
        return self.backend.identity()

    def complete(self, request: CompletionRequest) -> Completion:
        self.prompts.append((str(request.messages[-1]["content"]), request.params.seed))
        return self.backend.complete(request)


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, _Recording]:
    tmp = tmp_path_factory.mktemp("both")
    profile = tmp / "noisy.yaml"
    profile.write_text(NOISY, encoding="utf-8")
    recording = _Recording(SimulatedBackend(profile, dataset=OWNERS))
    grid = Grid.from_mapping(
        {
            "name": "both",
            "base": {"backend": f"sim:{profile}", "max_facts": 100, "parse": "strict_only"},
            "axes": {"memory": ["deerflow", "tiered"]},
            "qa": {"answer_backend": f"sim:{profile}", "judges": ["lenient"]},
        }
    )
    return _sweep(grid, tmp, recording, recording.backend), recording


def _lane(run: Run, memory: str) -> str:
    return next(lane for lane, config in run.lanes.items() if config.memory == memory)


def _record(run: Run, lane: str, user_id: str) -> dict[str, Any]:
    path = run.path / "lanes" / lane / "owners" / f"{user_id}.json"
    record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return record


def test_both_designs_replay_every_owner(both: tuple[Run, _Recording]) -> None:
    run, _ = both
    assert sorted(config.memory for config in run.lanes.values()) == ["deerflow", "tiered"]
    sessions = run.sessions
    for lane in run.lanes:
        rows = sessions[sessions["lane_id"] == lane]
        assert len(rows) == sum(len(o.sessions) for o in OWNERS)
    tiered = _lane(run, "tiered")
    for owner in OWNERS:
        record = _record(run, tiered, owner.user_id)
        assert record["complete"] is True
        assert sum(1 for c in record["calls"] if is_primary(c)) == record["updates"]
        assert isinstance(record["forgetting"], list)
        assert "forgetting" not in _record(run, _lane(run, "deerflow"), owner.user_id)
        budget = run.lanes[tiered].max_injection_tokens
        for snapshot, audit in zip(record["snapshots"], record["injections"], strict=True):
            if audit is None:
                continue
            held = [f["id"] for f in snapshot["facts"]]
            assert 0 < audit["tokens"] <= budget  # the session summary is always there
            assert sorted(audit["injected"] + audit["dropped"]) == sorted(held)


def test_memory_qa_asks_both_designs_the_same_questions(both: tuple[Run, _Recording]) -> None:
    run, _ = both
    answers = run.qa_answers
    asked = answers[answers["condition"] == "memory"].groupby("lane_id")["question_id"]
    counts = asked.nunique()
    assert set(counts.index) == set(run.lanes)
    assert counts.nunique() == 1 and counts.iloc[0] > 0


def test_tiered_calls_are_counted_in_the_parse_taxonomy(both: tuple[Run, _Recording]) -> None:
    """Each tiered call failed exactly when the model broke its reply (fenced, which the
    lane's strict parsing refuses), and the lane's parse failures count those calls."""
    run, recording = both
    decided: Counter[tuple[str, str | None]] = Counter()
    for prompt, seed in recording.prompts:
        decision = recording.backend.decide_tiered(prompt, seed)
        if decision is not None:
            failure = decision.failure.value if decision.failure is not None else None
            decided[(decision.call, failure)] += 1
    calls = run.calls
    tiered = calls[calls["lane_id"] == _lane(run, "tiered")]
    asked = tiered[tiered["skipped"].isna()]
    measured = Counter(
        (call_kind(row), row["parse_category"] if isinstance(row["parse_category"], str) else None)
        for row in asked.to_dict("records")
    )
    assert decided[("summary", "fenced")] > 0 and decided[("importance", "fenced")] > 0
    assert measured == decided
    failed = int((~asked["parse_ok"]).sum())
    assert run.summary.loc[_lane(run, "tiered"), "parse_failures"] == failed


def test_forgetting_events_match_the_snapshots(both: tuple[Run, _Recording]) -> None:
    """A forgotten memory is in no snapshot from the event's on."""
    run, _ = both
    tiered = _lane(run, "tiered")
    events = 0
    for owner in OWNERS:
        record = _record(run, tiered, owner.user_id)
        snapshots = record["snapshots"]
        for event in record["forgetting"]:
            events += 1
            index = event["session_index"]
            assert event["kind"] in {"decayed", "merged", "compressed"}
            assert 0 <= index < len(snapshots)
            removed = {item["id"] for item in event["removed"]}
            assert removed
            for later in snapshots[index:]:
                assert not removed & {f["id"] for f in later["facts"]}
    assert events > 0  # a sentinel: the personas' gaps do let memories decay


# ---------------------------------------------------------------------- importance threshold

SURE = """
name: sure
propose_rate: 1.0
tiered:
  summary_keep_rate: 1.0
  importance: {RATING: 1.0}
"""


def _first_sessions(
    tmp: Path, rating: str, seed: int = 0, **tiered: Any
) -> tuple[Run, SimulatedBackend]:
    profile = tmp / f"sure-{rating}.yaml"
    profile.write_text(SURE.replace("RATING", rating), encoding="utf-8")
    backend = SimulatedBackend(profile, dataset=OWNERS)
    base = {"backend": f"sim:{profile}", "memory": "tiered", "seed": seed}
    grid = Grid.from_mapping(
        {
            "name": f"first-{rating}-{len(tiered)}",
            "replay_mode": "per_session",
            "max_sessions": 1,
            "base": {**base, **({"tiered": tiered} if tiered else {})},
        }
    )
    return _sweep(grid, tmp, backend, backend), backend


def _stored(run: Run) -> dict[str, int]:
    (lane,) = run.lanes
    return {o.user_id: len(_record(run, lane, o.user_id)["snapshots"][0]["facts"]) for o in OWNERS}


def test_a_rating_of_exactly_the_threshold_stores_nothing(tmp_path: Path) -> None:
    gold = {o.user_id: len(o.sessions[0].labels.facts) for o in OWNERS}
    at_threshold, _ = _first_sessions(tmp_path, "0.7")
    above, _ = _first_sessions(tmp_path, "0.71")
    assert _stored(at_threshold) == dict.fromkeys(gold, 0)
    assert _stored(above) == gold  # every key point of a first session, one memory each
    calls = at_threshold.calls
    assert (calls["call"] == "importance").sum() == sum(1 for n in gold.values() if n)


def test_a_lane_sets_the_importance_threshold(tmp_path: Path) -> None:
    """``tiered: {importance_threshold: 0.6}``: a rating of 0.7, refused at the seed's
    threshold, is now stored; the lane's id, identity and dumps say so."""
    gold = {o.user_id: len(o.sessions[0].labels.facts) for o in OWNERS}
    lowered, _ = _first_sessions(tmp_path, "0.7", importance_threshold=0.6)
    assert _stored(lowered) == gold
    ((lane_id, config),) = lowered.lanes.items()
    assert config.tiered.importance_threshold == 0.6
    assert config.model_dump()["tiered"] == {"importance_threshold": 0.6}
    described = json.loads((lowered.path / "lanes" / lane_id / "config.json").read_text())
    assert described["identity"]["strategy"]["settings"]["importance_threshold"] == 0.6


def test_the_default_options_are_the_seeds_and_change_no_id() -> None:
    """Options at their defaults are the seed's values and are left out of every dump."""
    tiered = LaneConfig(memory="tiered")
    assert tiered_settings(tiered) == TieredSettings(token_counting=tiered.token_counting)
    explicit = LaneConfig(memory="tiered", tiered=TieredOptions().model_dump())
    assert explicit.point_id == tiered.point_id
    assert "tiered" not in explicit.model_dump() and explicit.settings()["tiered"] == {}
    changed = LaneConfig(memory="tiered", tiered={"recall_k": 5})
    assert changed.point_id != tiered.point_id
    assert tiered_settings(changed).recall_k == 5


def test_noisy_ratings_store_what_the_draws_imply(tmp_path: Path) -> None:
    """Ratings 0.9 or 0.7 with equal weight: a first session's fact is stored exactly when
    its draw gave 0.9 (the simulator's declared draw, recomputed here)."""
    profile = tmp_path / "half.yaml"
    profile.write_text(
        SURE.replace("{RATING: 1.0}", "{0.9: 1.0, 0.7: 1.0}").replace("sure", "half"),
        encoding="utf-8",
    )
    backend = SimulatedBackend(profile, dataset=OWNERS)
    rates = backend.profile.tiered
    grid = Grid.from_mapping(
        {
            "name": "half",
            "replay_mode": "per_session",
            "max_sessions": 1,
            "base": {"backend": f"sim:{profile}", "memory": "tiered"},
        }
    )
    run = _sweep(grid, tmp_path, backend, backend)
    expected = {
        o.user_id: sum(
            rates.pick_rating(uniform(backend.seed, 0, fact.id, "importance")) > 0.7
            for fact in o.sessions[0].labels.facts
        )
        for o in OWNERS
    }
    assert 0 < sum(expected.values()) < sum(len(o.sessions[0].labels.facts) for o in OWNERS)
    assert _stored(run) == expected
    # The write-side metrics read the tiered memory's view: each stored key point covers the
    # gold fact it came from.
    rows = run.sessions.set_index("user_id")
    assert rows["gold_covered"].to_dict() == expected


# ---------------------------------------------------------------------- contracts


def test_each_tiered_contract_sorts_replies_into_the_update_taxonomy() -> None:
    summary = CALL_CONTRACTS["summary"]
    good = parse_reply('{"summary": "s", "keyPoints": ["a"]}', contract=summary)
    assert good.ok and good.data == {"summary": "s", "keyPoints": ["a"]}
    shape = parse_reply('{"keyPoints": ["a"]}', contract=summary)
    assert shape.category is FailureCategory.WRONG_SHAPE
    bad = parse_reply(
        '{"ratings": [{"index": 0, "importance": 1.5, "category": "x"}]}',
        contract=CALL_CONTRACTS["importance"],
    )
    assert bad.category is FailureCategory.SCHEMA_VIOLATION
    assert {v.keyword for v in bad.violations} == {"minimum", "maximum", "enum"}
    assert all(isinstance(v, Violation) for v in bad.violations)
    fenced = parse_reply('```json\n{"summary": "x"}\n```', contract=CALL_CONTRACTS["compression"])
    assert fenced.ok and "fence" in fenced.wrappers


# ---------------------------------------------------------------------- SIGKILL and resume

KILL_GRID = {
    "name": "killed",
    "max_owners": 4,
    "base": {"backend": "sim:careful", "memory": "tiered"},
}


def _owner_records(run_dir: Path) -> dict[str, str]:
    return {p.stem: _digest_without_cache(p) for p in run_dir.glob("lanes/*/owners/*.json")}


def _digest_without_cache(path: Path) -> str:
    data = _scrubbed(json.loads(path.read_text(encoding="utf-8")))
    data.pop("fingerprint", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def test_a_killed_tiered_sweep_resumes_to_the_clean_result(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    owners_dir = runs / "killed" / "lanes"
    kill_slow_sweep("personas", KILL_GRID, runs)
    finished = set(_owner_records(runs / "killed"))
    assert 1 <= len(finished) < 4
    assert list(owners_dir.glob("*/stores/*.sqlite"))  # a database the kill left behind

    backend = SimulatedBackend("careful", dataset="personas")
    resumed = sweep(
        "personas",
        Grid.from_mapping(KILL_GRID),
        runs_dir=runs,
        progress=False,
        max_workers=1,
        backend_factory=lambda _spec: backend,
    )
    status = resumed.manifest["lanes"] if resumed.manifest else {}
    clean = sweep(
        "personas",
        Grid.from_mapping(KILL_GRID),
        runs_dir=tmp_path / "clean",
        progress=False,
        max_workers=1,
        backend_factory=lambda _spec: backend,
    )
    assert _owner_records(runs / "killed") == _owner_records(tmp_path / "clean" / "killed")
    assert resumed.summary.equals(clean.summary)
    assert status  # the resumed run finished with a manifest


def test_a_fork_of_a_tiered_lane_is_refused_at_its_memory_key() -> None:
    class _Fork:  # what resolving reads of a loaded fork
        def identity(self) -> dict[str, Any]:
            return {"run": "ref", "lane": "x", "at_session": 1}

    grid = Grid.from_mapping({"name": "f", "axes": {"memory": ["deerflow", "tiered"]}})
    backends = LaneBackends(lambda _spec: ScriptedBackend(["{}"]), None, CacheMode.OFF)
    with pytest.raises(GridError) as info:
        resolve_lanes(grid, prompt_registry(grid), backends, _Fork())  # type: ignore[arg-type]
    assert info.value.key == "axes.memory[1]"
    assert "fork only memory: deerflow lanes" in str(info.value)


# ---------------------------------------------------------------------- call counts


def test_llm_calls_count_the_calls_the_model_answered(tmp_path: Path) -> None:
    """A tiered lane's ``llm_calls`` is the number of prompts the simulated model answered:
    its working-memory steps that made no call are rows, not calls."""
    profile = tmp_path / "noisy.yaml"
    profile.write_text(NOISY, encoding="utf-8")
    recording = _Recording(SimulatedBackend(profile, dataset=OWNERS))
    grid = Grid.from_mapping(
        {"name": "counts", "base": {"backend": f"sim:{profile}", "memory": "tiered"}}
    )
    run = _sweep(grid, tmp_path, recording, recording.backend)
    ((lane, summary),) = run.summary.iterrows()
    rows = sum(len(_record(run, lane, o.user_id)["calls"]) for o in OWNERS)
    assert rows > len(recording.prompts) > 0  # a sentinel: some rows made no call
    assert summary["llm_calls"] == len(recording.prompts) == summary["simulated_calls"]
    assert run.sessions["llm_calls"].sum() == len(recording.prompts)


def test_the_debounce_saves_the_same_updates_under_both_designs(
    both: tuple[Run, _Recording],
) -> None:
    """The debounce is the queue's: both designs see the same agent runs and hand-overs, so
    they save the same updates, whatever else the tiered design asks. A DeerFlow lane makes
    one call per hand-over, so its saving is its agent runs minus its call records."""
    run, _ = both
    deerflow = [_record(run, _lane(run, "deerflow"), o.user_id) for o in OWNERS]
    runs = sum(sum(r["agent_runs"]) for r in deerflow)
    handed_over = sum(len(r["calls"]) for r in deerflow)
    assert runs > handed_over  # a sentinel: the debounce merged some agent runs
    saved = run.summary["calls_saved_by_debounce"].to_dict()
    assert saved == dict.fromkeys(run.lanes, runs - handed_over)
    assert run.summary.loc[_lane(run, "deerflow"), "llm_calls"] == handed_over


def test_a_tiered_lane_reads_its_memory_in_the_seeds_order() -> None:
    """Memory QA's read path renders a tiered lane's view as the seed assembles its context
    (summary, semantic memories, then episodes); a DeerFlow lane's keeps History first."""
    memory = {
        "user": {"topOfMind": {"summary": "Moving to Lisbon.", "updatedAt": ""}},
        "history": {"recentMonths": {"summary": "asked for flats -> got three", "updatedAt": ""}},
        "facts": [{"id": "m1", "content": "The user moves to Lisbon in May", "confidence": 0.9}],
    }
    layouts = (("tiered", "Facts:", "History:"), ("deerflow", "History:", "Facts:"))
    for memory_kind, first, then in layouts:
        text = read_path(LaneConfig(memory=memory_kind)).render(memory, "Where?").text
        assert text.index("User Context:") < text.index(first) < text.index(then), memory_kind


# ---------------------------------------------------------------------- causes of wrong answers


def test_key_points_rated_at_or_below_the_threshold_are_below_the_threshold(
    tmp_path: Path,
) -> None:
    """Every key point is proposed (keep rate 1) and rated 0.5, 0.7 or 0.9 by the simulator's
    declared draw: an answer's evidence fact rated 0.5 or 0.7 was never stored because of its
    rating, and its cause says the values; one rated 0.9 was stored and is no threshold loss."""
    profile = tmp_path / "thirds.yaml"
    profile.write_text(
        SURE.replace("{RATING: 1.0}", "{0.9: 1.0, 0.7: 1.0, 0.5: 1.0}").replace("sure", "thirds"),
        encoding="utf-8",
    )
    backend = SimulatedBackend(profile, dataset=OWNERS)
    rates = backend.profile.tiered
    grid = Grid.from_mapping(
        {
            "name": "thirds",
            "max_owners": 3,
            "base": {"backend": f"sim:{profile}", "memory": "tiered"},
            "qa": {"answer_backend": f"sim:{profile}", "judges": ["lenient"]},
        }
    )
    run = _sweep(grid, tmp_path, backend, backend)
    gold = {f.id: f for o in OWNERS for s in o.sessions for f in s.labels.facts}
    rating = {
        fact_id: rates.pick_rating(uniform(backend.seed, 0, fact_id, "importance"))
        for fact_id in gold
    }
    memory = run.qa_answers[run.qa_answers["condition"] == "memory"]
    seen: Counter[str] = Counter()
    for row in memory.to_dict("records"):
        for fact_id, fate in (row["evidence_fates"] or {}).items():
            if rating[fact_id] <= 0.7:
                assert fate == f"below_threshold (importance {rating[fact_id]} ≤ 0.7)"
                seen[fate] += 1
            else:
                assert not fate.startswith("below_threshold")
        if any(rating[g] <= 0.7 for g in row["evidence_fates"] or {}):
            assert row["fate"] == "below_threshold"
    assert seen["below_threshold (importance 0.5 ≤ 0.7)"] > 0
    assert seen["below_threshold (importance 0.7 ≤ 0.7)"] > 0
    assert not memory["fate"].eq("never_proposed").any()
