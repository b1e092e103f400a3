"""Parse outcomes and schema violations per lane, counted from a call table whose text
columns are of pandas' string type (as a run's tables are read)."""

from __future__ import annotations

import pandas as pd

from memlab.scoring.metrics import failure_table, violation_table


def _calls() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "lane_id": pd.Series(["a", "a", "b", "b"], dtype="str"),
            "reply": pd.Series(["r", None, "r", "r"], dtype="str"),
            "parse_ok": [True, False, False, True],
            "parse_rung": pd.Series(["strict", "strict", "repair", "repair"], dtype="str"),
            "parse_category": pd.Series([None, None, "bad_json", None], dtype=object),
            "violations": [
                [],
                [],
                [{"pointer": "/facts/3/text", "keyword": "type"}],
                [{"pointer": "/facts/12/text", "keyword": "type"}, {"keyword": "required"}],
            ],
        }
    )


def test_failure_table_counts_each_replied_call_by_outcome() -> None:
    table = failure_table(_calls())
    # Lane a: one reply parsed strictly (the call without a reply is not counted);
    # lane b: one reply refused as bad JSON, one parsed after repair.
    assert table.loc["a"].to_dict() == {"bad_json": 0, "ok:repair": 0, "ok:strict": 1}
    assert table.loc["b"].to_dict() == {"bad_json": 1, "ok:repair": 1, "ok:strict": 0}


def test_violation_table_counts_pointers_with_list_indexes_folded() -> None:
    table = violation_table(_calls())
    rows = {(r.lane_id, r.pointer, r.keyword): r.count for r in table.itertuples()}
    assert rows == {("b", "/facts/*/text", "type"): 2, ("b", "/", "required"): 1}
