"""The answer-key ceiling: a perfect answerer (right by the audit) scores 1 - (answers the
audit changed / questions) against the original key, overall and per category, on a run of
the audited key and on one of the original key that records the audit; a judge that also
accepts the key's wrong answers scores above that ceiling, and the table says so.

The rows are built by hand: 10 questions of one owner, 3 of them changed by the audit (2 of
the 6 single-hop, 1 of the 4 temporal), answered perfectly; a strict judge says CORRECT
against the original key only where the audit left the answer, a lenient one everywhere. The
expected ceilings are counted by hand: overall 1 - 3/10 = 70%, single-hop 1 - 2/6, temporal
1 - 1/4.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from memlab.scoring.qa.qa_metrics import key_ceiling, robust_verdicts

# category -> (questions, answers the audit changed)
CATEGORIES = {"single-hop": (6, 2), "temporal": (4, 1)}
CEILING = {"all": 0.7, "single-hop": 4 / 6, "temporal": 3 / 4}
QUESTIONS = {"all": 10, "single-hop": 6, "temporal": 4}
CHANGED = {"all": 3, "single-hop": 2, "temporal": 1}


def _rows(key: str) -> pd.DataFrame:
    """The answers of a run of the ``audited`` key or of the ``original`` key."""
    rows: list[dict[str, Any]] = []
    for category, (count, changed) in CATEGORIES.items():
        for k in range(count):
            moved = k < changed
            if key == "audited":  # the file's answers are the audit's; "original" beside
                strict = {"answer": True, **({"original": False} if moved else {})}
                lenient = {"answer": True, **({"original": True} if moved else {})}
            else:  # the file's answers are LoCoMo's: the perfect answer misses them
                strict, lenient = {"answer": not moved}, {"answer": True}
            rows.append(
                {
                    "lane_id": "lane",
                    "sample": 0,
                    "user_id": "o1",
                    "session_index": 0,
                    "question_id": f"{category}.{k}",
                    "category": category,
                    "kind": "answerable",
                    "audited": moved,
                    "answer_changed": moved and key == "audited",
                    "audit_differs": moved,
                    "condition": "memory",
                    "abstained": False,
                    "f1": 1.0,
                    "bleu1": 1.0,
                    "f1_original": 0.0 if moved and key == "audited" else None,
                    "bleu1_original": 0.0 if moved and key == "audited" else None,
                    "verdicts": {"strict": strict, "lenient": lenient},
                }
            )
    # An adversarial question the audit changed stays out of the headline and its ceiling.
    extra = dict(rows[0], question_id="adv", kind="adversarial", category="adversarial")
    return pd.DataFrame([*rows, extra])


@pytest.mark.parametrize("key", ["audited", "original"])
def test_the_ceiling_overall_and_per_category_on_either_key(key: str) -> None:
    table = key_ceiling(_rows(key)).set_index(["judge", "key", "category"])
    keys = {"audited", "original"} if key == "audited" else {"original"}
    assert set(table.index.get_level_values("key")) == keys
    assert set(table.index.get_level_values("category")) == set(CEILING)
    for category, ceiling in CEILING.items():
        strict = table.loc[("strict", "original", category)]
        lenient = table.loc[("lenient", "original", category)]
        assert strict["questions"] == QUESTIONS[category]
        assert strict["changed"] == CHANGED[category]
        assert strict["ceiling"] == pytest.approx(ceiling)
        # The perfect answerer meets the original key's ceiling exactly, never above it.
        assert strict["accuracy"] == pytest.approx(ceiling)
        assert not strict["over_ceiling"]
        # A judge that accepts the key's wrong answers too scores above it.
        assert lenient["accuracy"] == pytest.approx(1.0)
        assert lenient["over_ceiling"]
        if key == "audited":
            audited = table.loc[("strict", "audited", category)]
            assert audited["ceiling"] == 1.0 and audited["accuracy"] == pytest.approx(1.0)
            assert not audited["over_ceiling"]


def test_rows_from_before_the_audit_was_recorded_beside_the_original_key() -> None:
    rows = _rows("audited").drop(columns="audit_differs")  # an audited run written earlier
    table = key_ceiling(rows).set_index(["judge", "key", "category"])
    assert table.loc[("strict", "original", "all"), "ceiling"] == pytest.approx(0.7)


def test_no_audited_question_means_no_ceiling_table() -> None:
    for key in ("audited", "original"):
        rows = _rows(key)
        rows["audited"] = False
        assert key_ceiling(rows).empty


def test_a_difference_is_robust_to_the_judge_only_under_every_judge() -> None:
    keys = {"baseline_run": "a", "baseline_lane": "base", "run": "b"}

    def table(verdicts: dict[str, str]) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {**keys, "lane": lane, "metric": "qa_accuracy", "verdict": v}
                for lane, v in verdicts.items()
            ]
        )

    strict = table({"x": "better", "y": "better", "z": "no significant difference", "w": "worse"})
    lenient = table(
        {
            "x": "better",
            "y": "no significant difference",
            "z": "no significant difference",
            "w": "worse",
        }
    )
    merged = robust_verdicts({"strict": strict, "lenient": lenient}).set_index("lane")
    assert merged["judge_robust"].to_dict() == {
        "x": "robust to the judge: better",
        "y": "depends on the judge",
        "z": "no difference under any judge",
        "w": "robust to the judge: worse",
    }
    assert merged.loc["y", "verdict:strict"] == "better"
    assert merged.loc["y", "verdict:lenient"] == "no significant difference"
