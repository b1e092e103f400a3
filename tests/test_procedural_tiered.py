"""The procedural design over tiered facts (``procedural: {facts: tiered}``): the seed's memory
whole, facts in the tiered store and procedures in the graph.

The dataset is ``procedures`` with a gold fact told at the end of each owner's first and third
sessions; the simulated model is deterministic (no failures, every fact a key point rated 0.9,
every procedure learned whole and every shown step named), so the expected stores and scores
follow from the labels and the declared rates alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import kill_slow_sweep

pytest.importorskip(
    "kuzu", reason="the procedural memory needs Kuzu: pip install 'memlab[procedural]'"
)

from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid
from memlab.grids.lane import LaneConfig
from memlab.memory.procedural import PROCEDURE_CATEGORY, procedure_line
from memlab.memory.storage.graph import ProceduralGraph
from memlab.memory.storage.store import TieredStore
from memlab.memory.storage.vectors import HashedEmbedding
from memlab.memory.strategy import call_kind, is_primary
from memlab.postrun.qa_jobs import read_path
from memlab.runs.run import Run
from memlab.simulation.model import SimulatedBackend
from memlab.sweeps.driver import sweep

PROFILE = """
name: exact
procedural: {learn_rate: 1.0, step_keep_rate: 1.0, answer_step_rate: 1.0}
tiered: {summary_keep_rate: 1.0, importance: {0.9: 1.0}}
"""
FACTS = {0: ("I live in Porto.", "context"), 2: ("I am allergic to peanuts.", "knowledge")}
BASE = {"memory": "procedural", "procedural": {"facts": "tiered"}}


def _with_facts(path: Path) -> Path:
    """``procedures`` with a fact told (and labelled) at the end of sessions 1 and 3."""
    lines = []
    source = resolve_dataset("procedures")
    for line in Path(source).read_text(encoding="utf-8").splitlines():
        owner = json.loads(line)
        for index, (text, category) in FACTS.items():
            session = owner["sessions"][index]
            last = session["messages"][-1]["timestamp"]  # ...:SSZ, never at :59
            said, reply = last[:-3] + "58Z", last[:-3] + "59Z"
            session["messages"] += [
                {"role": "human", "content": text, "timestamp": said},
                {"role": "ai", "content": "Noted.", "timestamp": reply},
            ]
            fact = {"id": f"{owner['user_id']}.f{index}", "content": text, "category": category}
            session["labels"].setdefault("facts", []).append(fact)
            session["labels"]["noise"] = False  # the small talk now tells a fact
        lines.append(json.dumps(owner))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Path]:
    root = tmp_path_factory.mktemp("proctiered")
    dataset = _with_facts(root / "facts_and_procedures.jsonl")
    profile = root / "exact.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    backend = SimulatedBackend(profile, dataset=load_dataset(dataset))
    spec = f"sim:{profile}"
    grid = Grid.from_mapping(
        {
            "name": "proctiered",
            "base": {"backend": spec, **BASE},
            "qa": {"answer_backend": spec, "judges": ["lenient"], "conditions": ["memory", "none"]},
        }
    )
    run = sweep(
        dataset,
        grid,
        runs_dir=root / "runs",
        progress=False,
        max_workers=1,
        backend_factory=lambda _spec: backend,
    )
    return run, dataset


def test_the_default_option_keeps_the_procedural_lane_id() -> None:
    plain = LaneConfig.model_validate({"memory": "procedural"})
    default = LaneConfig.model_validate(
        {"memory": "procedural", "procedural": {"facts": "deerflow"}}
    )
    tiered = LaneConfig.model_validate(BASE)
    assert default.model_dump(mode="json") == plain.model_dump(mode="json")
    assert "procedural" not in plain.model_dump(mode="json")
    assert tiered.model_dump(mode="json")["procedural"] == {"facts": "tiered"}
    assert tiered.point_id != plain.point_id
    assert (plain.history_last, tiered.history_last) == (False, True)
    with pytest.raises(ValueError, match="facts"):
        LaneConfig.model_validate({"memory": "procedural", "procedural": {"facts": "mem0"}})


def test_facts_go_to_the_tiered_store_and_procedures_to_the_graph(
    swept: tuple[Run, Path],
) -> None:
    run, dataset = swept
    owners = load_dataset(dataset)
    ((lane, _config),) = run.lanes.items()
    stores = run.path / "lanes" / lane / "stores"
    for owner in owners:
        record = run.dir.read_owner_record(lane, owner.user_id)
        assert record["complete"] is True
        assert isinstance(record["forgetting"], list)  # the tiered facts forget
        calls = record["calls"]
        assert sum(1 for c in calls if is_primary(c)) == record["updates"]
        ends = [call_kind(c) for c in calls if c.get("session_end")]
        # Each session end folds twice: the tiered working memory, then the procedures.
        assert ends == ["summary", "procedures"] * len(owner.sessions)
        assert [call_kind(c) for c in calls].count("importance") == len(FACTS)
        with TieredStore(stores / f"{owner.user_id}.sqlite", embed=HashedEmbedding()) as store:
            for session in owner.sessions:
                assert store.session_summary(session.thread_id) is not None
            memories = {(m.content, m.category) for m in store.memories()}
        assert memories == {(f.content, f.category) for f in owner.gold_facts().values()}
        graph = ProceduralGraph(stores / f"{owner.user_id}.kuzu")
        try:
            learned = {p.name: list(p.steps) for p in graph.procedures()}
        finally:
            graph.close()
        gold = {p.name: list(p.steps) for p in owner.gold_procedures().values()}
        assert learned == gold


def test_both_are_injected_within_the_budget_and_procedures_scored(
    swept: tuple[Run, Path],
) -> None:
    run, dataset = swept
    owners = load_dataset(dataset)
    ((lane, config),) = run.lanes.items()
    inject = read_path(config).inject
    asked = 0
    for owner in owners:
        record = run.dir.read_owner_record(lane, owner.user_id)
        facts = [f.content for f in owner.gold_facts().values()]
        for index, question in owner.procedure_questions():
            injection = inject(record["snapshots"][index], question.question)
            gold = owner.gold_procedures()[str(question.procedure)]
            line = procedure_line({"name": gold.name, "steps": gold.steps})
            assert line in injection.text
            assert injection.injected[0]["category"] == PROCEDURE_CATEGORY
            assert all(fact in injection.text for fact in facts)
            assert injection.tokens <= config.max_injection_tokens
            asked += 1
    answers = run.qa_answers[run.qa_answers["kind"] == "procedure"]
    by_condition = answers.groupby("condition")["step_accuracy"]
    # learn_rate x step_keep_rate x answer_step_rate = 1 with memory; nothing shown without.
    assert by_condition.count().to_dict() == {"memory": asked, "none": asked}
    assert by_condition.mean().to_dict() == {"memory": 1.0, "none": 0.0}
    assert run.summary.loc[lane, "qa_procedure_step_accuracy"] == 1.0


KILL_GRID = {"name": "killed", "max_owners": 4, "base": {"backend": "sim:careful", **BASE}}


def _owner_records(run_dir: Path) -> dict[str, Any]:
    found = {}
    for path in run_dir.glob("lanes/*/owners/*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data.pop("fingerprint", None)
        for call in data["calls"]:
            call.pop("duration_s", None)  # wall clock
        found[path.stem] = data
    return found


def test_a_killed_sweep_resumes_to_the_clean_result(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    lanes = runs / "killed" / "lanes"
    kill_slow_sweep("procedures", KILL_GRID, runs)
    assert 1 <= len(_owner_records(runs / "killed")) < 4
    assert list(lanes.glob("*/stores/*.sqlite")) and list(lanes.glob("*/stores/*.kuzu"))

    backend = SimulatedBackend("careful", dataset="procedures")

    def again(root: Path) -> Run:
        grid = Grid.from_mapping(KILL_GRID)
        return sweep(
            "procedures",
            grid,
            runs_dir=root,
            progress=False,
            max_workers=1,
            backend_factory=lambda _spec: backend,
        )

    resumed, clean = again(runs), again(tmp_path / "clean")
    assert _owner_records(runs / "killed") == _owner_records(tmp_path / "clean" / "killed")
    assert len(_owner_records(runs / "killed")) == 4
    assert resumed.summary.equals(clean.summary)
