"""A run's report shows each judge's audit on the judge calibration set beside its band.

The audit shown for a judge is the one kept in the run for exactly that judge (prompt text,
backend and model, judge settings); any other judge is "not audited", with the command that
audits it. The expected numbers are counted here by hand over a six-triple calibration set
and a scripted judge whose verdicts follow a rule written below (an instrument of this test),
or from the bundled set's own labels and the simulated judge's declared leniency.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from memlab.cli.main import main
from memlab.core.pipeline.llm import Completion, CompletionRequest
from memlab.datasets import resolve_dataset
from memlab.grids.grid import Grid
from memlab.grids.qa_spec import QAError, QASpec
from memlab.postrun.judge_audit_step import JUDGE_AUDITS, audit_run_judges
from memlab.postrun.qa_step import add_qa
from memlab.qa.judge_calibration import load_judge_calibration
from memlab.qa.qa_prompts import JudgePrompt, judge_prompts
from memlab.reporting.markdown import md_escape
from memlab.reporting.qa.qa_section import qa_markdown, qa_section, qa_text
from memlab.runs.run import Run, load_run
from memlab.sweeps.driver import sweep

STRICT = judge_prompts().get("strict")
HOUSE = (
    "Grade the answer against the reference.\n\nQuestion: {question}\nReference: "
    '{gold_answer}\nAnswer: {answer}\n\nReply {"label": "CORRECT"} or {"label": "WRONG"}'
)
HOUSE_EDITED = HOUSE.replace("Grade the answer", "Grade the answer generously")

# Six triples: two right paraphrases, two on-topic wrong values, one off-topic answer and
# one partial list (on topic, wrong).
TRIPLES = [
    ("t1", "paraphrase", "Where does Ana live?", "Lisbon.", "Lisbon", "CORRECT"),
    ("t2", "paraphrase", "Where was Ana born?", "Porto", "It was Porto", "CORRECT"),
    ("t3", "on_topic_wrong", "Where does Ben live?", "Lisbon", "Madrid", "WRONG"),
    ("t4", "on_topic_wrong", "Where did Ben study?", "Rome", "Paris", "WRONG"),
    ("t5", "off_topic", "Where did Ben study?", "Rome", "She likes tea.", "WRONG"),
    ("t6", "partial", "Which countries?", "Portugal and Morocco.", "Portugal.", "WRONG"),
]


class _Agent:
    """Answers every question "It is Lisbon." and judges by rule: ``strict`` CORRECT when the
    gold (without its period) is in the answer; ``house`` CORRECT unless the answer mentions
    tea, and no readable verdict on "Paris"; the edited ``house`` CORRECT always."""

    name = "agent"

    def __init__(self, model: str = "agent-model") -> None:
        self.model = model
        self.house = _prompt(HOUSE)
        self.edited = _prompt(HOUSE_EDITED)

    def complete(self, request: CompletionRequest) -> Completion:
        prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
        if (values := STRICT.parse(prompt)) is not None:
            gold = values["gold_answer"].lower().rstrip(".")
            return _label(gold in values["answer"].lower())
        if (values := self.house.parse(prompt)) is not None:
            if values["answer"] == "Paris":
                return Completion("It is CORRECT or WRONG.")
            return _label("tea" not in values["answer"])
        if self.edited.parse(prompt) is not None:
            return _label(True)
        return Completion("It is Lisbon.")


def _label(correct: bool) -> Completion:
    return Completion(json.dumps({"label": "CORRECT" if correct else "WRONG"}))


def _prompt(text: str) -> JudgePrompt:
    return JudgePrompt(name="house", template=text)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Run:
    grid = Grid.from_mapping(
        {"name": "one", "owners": ["amara"], "base": {"backend": "sim:careful"}}
    )
    runs = tmp_path_factory.mktemp("judge-audit-report")
    return sweep(resolve_dataset("personas"), grid, runs_dir=runs, progress=False)


@pytest.fixture
def calibration(tmp_path: Path) -> Path:
    path = tmp_path / "six.jsonl"
    rows = [
        dict(zip(("id", "kind", "question", "gold", "answer", "verdict"), t, strict=True))
        for t in TRIPLES
    ]
    path.write_text("".join(json.dumps({**r, "why": "-"}) + "\n" for r in rows), "utf-8")
    return path


def _qa(run_path: Path, house: Path, agent: _Agent) -> Run:
    spec = QASpec(
        answer_backend="agent",
        judges=["strict", "house"],
        judge_prompts=[str(house)],
        conditions=["memory"],
    )
    return add_qa(run_path, spec, backend_factory=lambda _: agent, progress=False)


def _rows(run: Run) -> dict[str, dict[str, Any]]:
    section = qa_section([load_run(run.path)])
    assert section is not None
    table: pd.DataFrame = section.audits
    return {str(r["judge"]): dict(r) for _, r in table.iterrows()}


def _shown(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (
        row["audited agreement"],
        row["kappa"],
        row["on-topic wrong accepted"],
        row["no verdict"],
    )


# Counted by hand over TRIPLES under the rules of _Agent:
# strict says CORRECT for t1, t2 only: 6 of 6 agree, kappa 1, no on-topic wrong accepted.
STRICT_SHOWN = ("100.0%", "1.00", "0.0% of 3", "0 of 6")
# house: t4 unreadable; CORRECT for t1 t2 t3 t6, WRONG for t5: agree on t1 t2 t5 = 3 of 5.
# p_o = 3/5, p_e = (4/5)(2/5) + (1/5)(3/5) = 11/25, kappa = (15 - 11) / (25 - 11) = 0.29;
# on-topic wrong graded: t3 t6, both accepted.
HOUSE_SHOWN = ("60.0%", "0.29", "100.0% of 2", "1 of 6")
# edited house: CORRECT for all six: agree on t1 t2 = 2 of 6, p_e = 2/6 = p_o, kappa 0.
EDITED_SHOWN = ("33.3%", "0.00", "100.0% of 3", "0 of 6")


def test_each_judge_shows_its_own_audit_and_an_edited_prompt_is_not_audited(
    swept: Run, tmp_path: Path, calibration: Path
) -> None:
    where = tmp_path / "run"
    shutil.copytree(swept.path, where)
    house = tmp_path / "house.txt"
    house.write_text(HOUSE, encoding="utf-8")
    agent = _Agent()
    run = _qa(where, house, agent)
    command = f"memlab judge audit --run {where}"
    rows = _rows(run)
    assert {j: r["audited agreement"] for j, r in rows.items()} == {
        "strict": "not audited",
        "house": "not audited",
    }
    section = qa_section([run])
    assert section is not None
    markdown = "\n".join(qa_markdown(section))
    assert md_escape(f"judge strict, house not audited: run `{command}`") in markdown

    six = load_judge_calibration(calibration)
    audit_run_judges(run, calibration=six, backend_factory=lambda _: agent)
    rows = _rows(run)
    assert _shown(rows["strict"]) == STRICT_SHOWN
    assert _shown(rows["house"]) == HOUSE_SHOWN
    assert rows["house"]["calibration set"] == f"{calibration} (6 triples)"
    text = qa_text(load_run(where))
    assert "not audited" not in text
    assert "judges audited on the judge calibration set" in text

    # The prompt file edited after the QA step: the audit refuses and writes nothing.
    kept = (where / JUDGE_AUDITS).read_bytes()
    house.write_text(HOUSE_EDITED, encoding="utf-8")
    with pytest.raises(QAError, match="judge prompt 'house' is not the one the QA step used"):
        audit_run_judges(load_run(where), calibration=six, backend_factory=lambda _: agent)
    assert (where / JUDGE_AUDITS).read_bytes() == kept

    # QA again with the edited prompt under the same name: the old audit is not this judge's.
    run = _qa(where, house, agent)
    rows = _rows(run)
    assert rows["house"]["audited agreement"] == "not audited"
    assert _shown(rows["strict"]) == STRICT_SHOWN
    assert f"judge house not audited: run `{command}`" in qa_text(load_run(where))
    audit_run_judges(run, calibration=six, backend_factory=lambda _: agent)
    assert _shown(_rows(run)["house"]) == EDITED_SHOWN
    # Both house prompts' audits are kept (strict's repeated one replaced): 3 entries.
    stored = json.loads((where / JUDGE_AUDITS).read_text(encoding="utf-8"))["audits"]
    assert sorted(e["judge"] for e in stored) == ["house", "house", "strict"]


def test_another_judge_model_is_not_audited(swept: Run, tmp_path: Path, calibration: Path) -> None:
    where = tmp_path / "run"
    shutil.copytree(swept.path, where)
    house = tmp_path / "house.txt"
    house.write_text(HOUSE, encoding="utf-8")
    agent = _Agent()
    run = _qa(where, house, agent)
    audit_run_judges(
        run, calibration=load_judge_calibration(calibration), backend_factory=lambda _: agent
    )
    assert _shown(_rows(run)["strict"]) == STRICT_SHOWN
    # The same judge prompts on another model of the backend.
    run = _qa(where, house, _Agent(model="agent-model-2"))
    assert {j: r["audited agreement"] for j, r in _rows(run).items()} == {
        "strict": "not audited",
        "house": "not audited",
    }


def test_the_command_audits_a_runs_simulated_judges_and_the_report_shows_them(
    swept: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = tmp_path / "run"
    shutil.copytree(swept.path, where)
    profile = tmp_path / "judgy.yaml"
    profile.write_text(
        "name: judgy\nqa: {judge_leniency: {lenient: 1.0, strict: 0.0}}\n", encoding="utf-8"
    )
    spec = {
        "answer_backend": "sim:careful",
        "judge_backend": f"sim:{profile}",
        "conditions": ["memory"],
    }
    add_qa(where, spec, progress=False)
    report = ["report", str(where), "-o", str(tmp_path / "report")]
    assert main(report) == 0
    summary = (tmp_path / "report" / "summary.md").read_text(encoding="utf-8")
    command = f"memlab judge audit --run {where}"
    assert md_escape(f"judge strict, lenient not audited: run `{command}`") in summary
    capsys.readouterr()

    assert main(["judge", "audit", "--run", str(where), "sim:careful"]) == 2
    assert "drop SPEC" in capsys.readouterr().err
    assert not (where / JUDGE_AUDITS).exists()
    assert main(command.split()[1:]) == 0
    assert f"kept in {where / JUDGE_AUDITS}" in capsys.readouterr().out

    # From the bundled set's labels: strict (leniency 0) takes the set's verdict everywhere;
    # lenient (leniency 1) also accepts every on-topic wrong answer.
    triples = load_judge_calibration().triples
    n, on_topic = len(triples), sum(t.on_topic for t in triples)
    assert main(report) == 0
    summary = (tmp_path / "report" / "summary.md").read_text(encoding="utf-8")
    assert "not audited" not in summary
    rows = {
        cells[2]: cells
        for line in summary.splitlines()
        if (cells := [c.strip() for c in line.split("|")])[2:3] in (["strict"], ["lenient"])
        and len(cells) > 6
        and cells[4].endswith("%")
    }
    assert rows["strict"][4:8] == ["100.0%", "1.00", f"0.0% of {on_topic}", f"0 of {n}"]
    assert rows["lenient"][4] == f"{(n - on_topic) / n:.1%}"
    assert rows["lenient"][6] == f"100.0% of {on_topic}"
