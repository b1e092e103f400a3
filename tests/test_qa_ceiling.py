"""The answer-key ceiling: with an audited key, a perfect answerer scores 1 - (changed answers /
questions) against the original key; a judge that also accepts the key's wrong answers scores
above that ceiling, and the report warns.

The rows are built by hand: a perfect answerer (right by the audited key), graded by a strict
judge (CORRECT against the original key only where the audit left the answer) and by a lenient
one (CORRECT against both keys); the expected values follow from how many answers each category
had changed.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from memlab.scoring.qa_metrics import key_ceiling, robust_verdicts

# category -> (questions per owner, answers the audit changed per owner)
CATEGORIES = {"single-hop": (10, 2), "temporal": (5, 0), "multi-hop": (4, 1)}
OWNERS = ("o1", "o2", "o3")


def _rows() -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for owner in OWNERS:
        for category, (count, changed) in CATEGORIES.items():
            for k in range(count):
                moved = k < changed
                strict = {"answer": True, **({"original": False} if moved else {})}
                lenient = {"answer": True, **({"original": True} if moved else {})}
                rows.append(
                    {
                        "lane_id": "lane",
                        "sample": 0,
                        "user_id": owner,
                        "session_index": 0,
                        "question_id": f"{owner}.{category}.{k}",
                        "category": category,
                        "kind": "answerable",
                        "audited": moved,
                        "answer_changed": moved,
                        "condition": "memory",
                        "abstained": False,
                        "f1": 1.0,
                        "bleu1": 1.0,
                        "f1_original": 0.0 if moved else None,
                        "bleu1_original": 0.0 if moved else None,
                        "verdicts": {"strict": strict, "lenient": lenient},
                    }
                )
    # An adversarial question the audit changed stays out of the headline and its ceiling.
    extra = dict(rows[0], question_id="o1.adv", kind="adversarial", category="adversarial")
    return pd.DataFrame([*rows, extra])


def test_ceiling_per_category_and_the_warning_above_it() -> None:
    table = key_ceiling(_rows()).set_index(["judge", "category"])
    assert set(table.index.get_level_values("category")) == set(CATEGORIES)
    for category, (count, changed) in CATEGORIES.items():
        ceiling = 1 - changed / count
        strict, lenient = table.loc[("strict", category)], table.loc[("lenient", category)]
        assert strict["ceiling_original"] == pytest.approx(ceiling)
        assert strict["changed"] == changed * len(OWNERS)
        assert strict["accuracy_audited"] == pytest.approx(1.0)
        # The perfect answerer meets the original key's ceiling exactly, never above it.
        assert strict["accuracy_original"] == pytest.approx(ceiling)
        assert strict["over_ceiling"] == ""
        # A judge that accepts the key's wrong answers too scores above it where answers changed.
        assert lenient["accuracy_original"] == pytest.approx(1.0)
        assert lenient["over_ceiling"] == ("original" if changed else "")


def test_no_audited_question_means_no_ceiling_table() -> None:
    rows = _rows()
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
