"""mem0's F1 where QA scores are shown: each answer's row, the accuracy table, the report.

One owner with two answerable questions written here, answered by a scripted agent (an
instrument of this test). The expected scores are worked by hand from each score's formula:

=====================  ===============  ===================  ==========  ========
answer / gold          LoCoMo token F1  mem0's F1 (sets)     mem0 BLEU-1
=====================  ===============  ===================  ==========  ========
"The dogs ran." /      "the" dropped,   {the, dogs, ran} vs  tokens the dogs ran .
"dog running"          stems dog ran    {dog, running}:      vs dog running: none
                       vs dog run: 1    nothing shared: 0    shared: 0
                       shared, P=R=1/2:
                       0.5
"Munich." / "Munich"   1.0              "." is a space:      munich . vs munich:
                                        {munich}: 1.0        BP 1 (2 > 1), P 1/2:
                                                             0.5
=====================  ===============  ===================  ==========  ========

Means over the two questions: token F1 0.75, mem0's F1 0.5, BLEU-1 0.25. A table written
before mem0's F1 was recorded shows none ("-"), never 0.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd
import pytest

from memlab.core.pipeline.llm import Completion, CompletionRequest
from memlab.grids.grid import Grid
from memlab.grids.qa_spec import QASpec
from memlab.postrun.qa_step import add_qa
from memlab.qa.qa_prompts import judge_prompts
from memlab.reporting.qa.qa_section import qa_section, qa_text
from memlab.runs.run import Run
from memlab.scoring.qa.qa_metrics import accuracy_table
from memlab.sweeps.driver import sweep

STRICT = judge_prompts().get("strict")
QUESTIONS = {
    "What was the dog doing?": ("dog running", "The dogs ran."),
    "Which city did I move to?": ("Munich", "Munich."),
}


def _owner() -> dict[str, Any]:
    start = "2025-03-01T10:00:00Z"
    session = {
        "thread_id": "ann/s0",
        "started_at": start,
        "messages": [
            {
                "role": "human",
                "content": "I moved to Munich; my dog loves running.",
                "timestamp": start,
            },
            {"role": "ai", "content": "Lovely!", "timestamp": start},
        ],
        "labels": {"facts": [{"id": "f1", "content": "Moved to Munich", "category": "context"}]},
    }
    questions = [
        {
            "id": f"q{i}",
            "question": text,
            "answer": gold,
            "category": "single-hop",
            "kind": "answerable",
            "after_session": 0,
        }
        for i, (text, (gold, _)) in enumerate(QUESTIONS.items())
    ]
    return {"user_id": "ann", "sessions": [session], "questions": questions}


class _Agent:
    """Answers each question of QUESTIONS with its scripted answer; judges CORRECT always."""

    name, model = "agent", "agent-model"

    def complete(self, request: CompletionRequest) -> Completion:
        prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
        if STRICT.parse(prompt) is not None:
            return Completion(json.dumps({"label": "CORRECT"}))
        return Completion(next(a for q, (_, a) in QUESTIONS.items() if q in prompt))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    where = tmp_path_factory.mktemp("mem0-scores")
    dataset = where / "ann.jsonl"
    dataset.write_text(json.dumps(_owner()) + "\n", encoding="utf-8")
    grid = Grid.from_mapping({"name": "ann", "base": {"backend": "sim:careful"}})
    swept = sweep(dataset, grid, runs_dir=where / "runs", progress=False)
    spec = QASpec(answer_backend="agent", judges=["strict"], conditions=["memory"])
    return add_qa(swept, spec, backend_factory=lambda _: _Agent(), progress=False)


def test_each_answer_records_mem0s_f1_beside_locomos(run: Run) -> None:
    rows = run.qa_answers.set_index("question_id")
    assert rows.loc["q0", "f1"] == pytest.approx(0.5)
    assert rows.loc["q0", "mem0_f1"] == 0.0
    assert rows.loc["q0", "bleu1"] == 0.0
    assert rows.loc["q1", "f1"] == pytest.approx(1.0)
    assert rows.loc["q1", "mem0_f1"] == pytest.approx(1.0)
    assert rows.loc["q1", "bleu1"] == pytest.approx(0.5)
    # not audited: no original key to score against
    assert rows["mem0_f1_original"].isna().all()


def test_the_accuracy_table_and_the_report_show_mem0s_f1(run: Run) -> None:
    (row,) = accuracy_table(run.qa_answers).to_dict("records")
    assert row["f1"] == pytest.approx(0.75)
    assert row["mem0_f1"] == pytest.approx(0.5)
    assert row["bleu1"] == pytest.approx(0.25)
    section = qa_section([run])
    assert section is not None
    (shown,) = section.accuracy.to_dict("records")
    # one owner: no interval
    assert (shown["token F1"], shown["BLEU-1"], shown["mem0 F1"]) == ("75.0%", "25.0%", "50.0%")
    assert "mem0 F1" in qa_text(run)


def test_a_table_written_before_mem0s_f1_shows_none(run: Run) -> None:
    older = run.qa_answers.assign(mem0_f1=None, mem0_f1_original=None)
    (row,) = accuracy_table(older).to_dict("records")
    assert math.isnan(row["mem0_f1"]) and math.isnan(row["mem0_f1_lo"])
    assert row["f1"] == pytest.approx(0.75)
    # A failed answer (no text, no score) in a new table still scores 0, as it counts wrong.
    failed = run.qa_answers.iloc[[0]].assign(
        question_id="q2", answer=None, error="refused", f1=None, bleu1=None, mem0_f1=None
    )
    (row,) = accuracy_table(pd.concat([run.qa_answers, failed])).to_dict("records")
    assert row["mem0_f1"] == pytest.approx(1 / 3)
