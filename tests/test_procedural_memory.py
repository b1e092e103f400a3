"""The procedural memory: its graph (Kuzu), its design in a sweep, its labels and scoring.

Expected values come from hand-worked examples, from the simulated model's declared rates and
from its record of what it decided (:meth:`SimulatedBackend.decide_procedures`), never from
the code under test.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "kuzu", reason="the procedural memory needs Kuzu: pip install 'memlab[procedural]'"
)

from memlab.core.jsondoc.parsing import parse_reply
from memlab.core.pipeline.llm import Completion, CompletionRequest, GenerationParams
from memlab.core.pipeline.messages import (
    filter_messages_for_memory,
    format_conversation_for_update,
)
from memlab.core.procedure_prompts import PROCEDURES_CONTRACT, procedures_prompt
from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid
from memlab.memory.storage.graph import (
    CorruptGraphError,
    ProceduralGraph,
    Procedure,
    recall_procedures,
)
from memlab.memory.strategy import call_kind, is_primary
from memlab.postrun.qa_jobs import read_path
from memlab.qa.procedure_scores import step_order_accuracy
from memlab.simulation.model import SimulatedBackend
from memlab.simulation.provenance import ProvenanceMatcher
from memlab.sweeps.driver import sweep

AT = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
OWNERS = load_dataset(resolve_dataset("procedures"))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------- the graph


def test_learn_recall_and_replace_by_name(tmp_path: Path) -> None:
    graph = ProceduralGraph(tmp_path / "g.kuzu")
    graph.learn(Procedure("Brew coffee", ("grind", "boil", "pour"), ("Coffee", "espresso")), AT)
    steps = tuple(f"step {i}" for i in range(1, 13))  # 12: "10" sorts before "2" as text
    graph.learn(Procedure("Backup", steps, ("backup",)), AT)
    assert graph.recall("Time for an ESPRESSO") == [
        Procedure("Brew coffee", ("grind", "boil", "pour"), ("coffee", "espresso"))
    ]
    assert [p.steps for p in graph.recall("run the backup")] == [steps]
    assert graph.recall("nothing here") == []
    later = AT.replace(day=4)
    graph.learn(Procedure("brew COFFEE", ("boil", "pour"), ("coffee",)), later)
    assert [(p.name, p.steps) for p in graph.procedures()] == [
        ("Backup", steps),
        ("brew COFFEE", ("boil", "pour")),
    ]
    graph.close()
    reopened = ProceduralGraph(tmp_path / "g.kuzu")
    assert len(reopened.procedures()) == 2 and reopened.partial() is None
    reopened.close()


def test_the_graphs_recall_query_and_the_snapshots_rule_agree(tmp_path: Path) -> None:
    graph = ProceduralGraph(None)
    owner = OWNERS[0]
    for session in owner.sessions:
        for p in session.labels.procedures:
            graph.learn(Procedure(p.name, tuple(p.steps), tuple(p.triggers)), AT)
    document = [p.to_dict() for p in graph.procedures()]
    contexts = [q.question for q in owner.questions] + ["Release notes?", "API KEYS", "hello"]
    for context in contexts:
        by_graph = [p.name for p in graph.recall(context)]
        by_rule = [p["name"] for p in recall_procedures(document, context)]
        assert by_graph == by_rule
    graph.close()


def _foreign_files(tmp_path: Path) -> list[Path]:
    text = tmp_path / "text.kuzu"
    text.write_text("not a graph\n" * 50)
    lite = tmp_path / "lite.kuzu"
    con = sqlite3.connect(lite)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    empty = tmp_path / "empty.kuzu"
    empty.touch()
    import kuzu

    other = tmp_path / "other.kuzu"
    db = kuzu.Database(str(other))
    kuzu.Connection(db).execute("CREATE NODE TABLE A(id STRING, PRIMARY KEY(id))")
    db.close()
    return [text, lite, empty, other]


def test_foreign_files_are_refused_with_one_line_and_left_untouched(tmp_path: Path) -> None:
    for path in _foreign_files(tmp_path):
        before = {p.name: _sha(p) for p in tmp_path.iterdir()}
        with pytest.raises(CorruptGraphError) as raised:
            ProceduralGraph(path)
        assert "\n" not in str(raised.value) and str(path) in str(raised.value)
        assert {p.name: _sha(p) for p in tmp_path.iterdir()} == before


_WRITER = textwrap.dedent(
    """
    import sys
    from datetime import UTC, datetime, timedelta
    from pathlib import Path
    from memlab.memory.storage.graph import Procedure, ProceduralGraph
    graph = ProceduralGraph(Path(sys.argv[1]))
    at = datetime(2025, 1, 1, tzinfo=UTC)
    n = 0
    while True:
        steps = tuple(f"p{n} step {i}" for i in range(40))
        graph.learn(Procedure(f"p{n}", steps, (f"t{n}", f"u{n}")), at + timedelta(seconds=n))
        n += 1
        if n == 1:
            print("ready", flush=True)
    """
)


def test_the_graph_survives_sigkill_mid_write(tmp_path: Path) -> None:
    path = tmp_path / "g.kuzu"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for delay in (0.3, 0.9):
        child = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, env=env
        )
        assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait()
        graph = ProceduralGraph(path)  # reopening checks every procedure is whole
        found = graph.procedures()
        graph.close()
        assert found, "the first procedure was committed before 'ready'"
        for procedure in found:
            n = procedure.name[1:]
            assert procedure.steps == tuple(f"p{n} step {i}" for i in range(40))
            assert procedure.triggers == (f"t{n}", f"u{n}")


# ---------------------------------------------------------------------- scoring


def test_step_order_accuracy_by_hand() -> None:
    gold = ["Grind the beans fine", "Boil water to 94 degrees", "Pour slowly", "Wait"]
    assert step_order_accuracy("1) grind beans fine\n2) boil water 94 degrees", gold) == 0.5
    # Named out of order: pour, grind, boil -> the longest run in order is grind, boil.
    assert step_order_accuracy("Pour slowly. Grind beans fine. Boil water 94.", gold) == 0.5
    assert step_order_accuracy("Grind fine; boil; pour slowly; wait", gold) == 0.75
    assert step_order_accuracy(None, gold) == 0.0
    assert step_order_accuracy("I don't know.", gold) == 0.0


def test_the_contract_accepts_a_reply_and_refuses_unbounded_ones() -> None:
    ok = '{"procedures": [{"name": "n", "steps": ["a"], "triggers": ["t"]}]}'
    assert parse_reply(ok, contract=PROCEDURES_CONTRACT).ok
    many = json.dumps({"procedures": [{"name": "n", "steps": ["a"] * 21, "triggers": ["t"]}]})
    assert not parse_reply(many, contract=PROCEDURES_CONTRACT).ok
    no_steps = '{"procedures": [{"name": "n", "steps": [], "triggers": ["t"]}]}'
    assert not parse_reply(no_steps, contract=PROCEDURES_CONTRACT).ok


# ---------------------------------------------------------------------- the design in a sweep

PROFILE = """
name: teacher
failures: {no_json: 0.2}  # a reply no parse rung recovers
procedural:
  learn_rate: 0.75
  step_keep_rate: 0.8
"""


class _Recording:
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


def test_a_procedural_lane_learns_and_recalls_what_the_model_decided(tmp_path: Path) -> None:
    profile = tmp_path / "teacher.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    recording = _Recording(SimulatedBackend(profile, dataset=OWNERS))
    grid = Grid.from_mapping(
        {"name": "proc", "base": {"backend": f"sim:{profile}", "memory": "procedural"}}
    )
    run = sweep(
        "procedures",
        grid,
        runs_dir=tmp_path,
        progress=False,
        max_workers=1,
        backend_factory=lambda _spec: recording,
        matcher=ProvenanceMatcher(recording.backend),
    )
    ((lane, config),) = run.lanes.items()
    template = procedures_prompt()
    learned: dict[str, tuple[int, ...]] = {}  # gold procedure id -> steps kept
    calls = 0
    for prompt, seed in recording.prompts:
        if template.parse(prompt) is None:
            continue
        calls += 1
        decision = recording.backend.decide_procedures(prompt, seed)
        assert decision is not None and decision.session is not None
        if decision.failure is None:
            learned.update({s.procedure: s.kept for s in decision.sources})
    assert calls == sum(len(o.sessions) for o in OWNERS)  # one call per session end
    inject = read_path(config).inject
    scores: list[float] = []
    for owner in OWNERS:
        path = run.path / "lanes" / lane / "owners" / f"{owner.user_id}.json"
        record = json.loads(path.read_text(encoding="utf-8"))
        assert record["complete"] is True
        assert sum(1 for c in record["calls"] if is_primary(c)) == record["updates"]
        kinds = [call_kind(c) for c in record["calls"]]
        assert kinds.count("procedures") == len(owner.sessions)
        gold = owner.gold_procedures()
        for index, question in owner.procedure_questions():
            snapshot = record["snapshots"][index]
            injection = inject(snapshot, question.question)
            steps = gold[str(question.procedure)].steps
            score = step_order_accuracy(injection.text, steps)
            kept = learned.get(str(question.procedure))
            assert score == (0.0 if kept is None else len(kept) / len(steps))
            scores.append(score)
    assert len(scores) == 16


def _interval(p: float, n: int, z: float = 3.29) -> tuple[float, float]:
    """Normal interval (99.9%) of a share whose true value is ``p`` on ``n`` draws."""
    half = z * math.sqrt(p * (1 - p) / n)
    return p - half, p + half


def test_learning_rates_match_the_profile_within_their_intervals(tmp_path: Path) -> None:
    profile = tmp_path / "teacher.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    backend = SimulatedBackend(profile, dataset=OWNERS)
    rates = backend.profile.procedural
    fail = sum(backend.profile.failures.values())
    template = procedures_prompt()
    recalled = total = 0
    accuracy: list[float] = []
    implied_recall: list[float] = []
    for owner in OWNERS:
        for session in owner.sessions[:2]:
            messages = [m.to_pipeline_message() for m in session.messages]
            prompt = template.render(
                format_conversation_for_update(filter_messages_for_memory(messages))
            )
            (gold,) = session.labels.procedures
            n = len(gold.steps)
            for seed in range(40):
                decision = backend.decide_procedures(prompt, seed)
                assert decision is not None
                request = CompletionRequest(
                    messages=[{"role": "user", "content": prompt}],
                    params=GenerationParams(seed=seed),
                )
                reply = backend.complete(request).text  # what the memory receives
                parsed = parse_reply(reply, contract=PROCEDURES_CONTRACT)
                assert parsed.ok == (decision.failure is None)
                got = parsed.data["procedures"] if parsed.ok and parsed.data else []
                total += 1
                recalled += bool(got)
                text = "\n".join(got[0]["steps"]) if got else None
                accuracy.append(step_order_accuracy(text, gold.steps))
                kept_any = 1 - (1 - rates.step_keep_rate) ** n
                implied_recall.append((1 - fail) * rates.learn_rate * kept_any)
    p_recall = sum(implied_recall) / total
    low, high = _interval(p_recall, total)
    assert low <= recalled / total <= high
    p_steps = (1 - fail) * rates.learn_rate * rates.step_keep_rate
    mean = sum(accuracy) / total
    spread = math.sqrt(sum((a - mean) ** 2 for a in accuracy) / (total - 1))
    assert abs(mean - p_steps) <= 3.29 * spread / math.sqrt(total)
