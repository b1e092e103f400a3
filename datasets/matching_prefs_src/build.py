"""Build ``datasets/matching/preferences.jsonl``, the long-preference matcher calibration set.

Usage::

    .venv/bin/python datasets/matching_prefs_src/build.py           # write and print counts
    .venv/bin/python datasets/matching_prefs_src/build.py --check  # fail if out of date

How this set differs from the other two: both facts of a pair are long first-person
preferences with a condition, a reason and a hedge, as a user says them and as a memory that
keeps the user's words stores them. Every item (``items.py``, written one by one) yields eight
pairs: four that state the same preference (label true, kind ``paraphrase``: the gold fact
against each paraphrase, one paraphrase against the other, a paraphrase against the gold
fact) and four that do not (label false): the polarity reversed (``polarity_flip``), the
condition changed (``other_condition``) and the value changed (``other_value``), each against
the gold fact, and one of the three, in turn, against the first paraphrase.

The split is fixed by the item, before any matcher was tuned on this set: the item keys are
ordered by SHA-256 and alternate between ``dev`` and ``test``, so no sentence appears in both.

Each line: ``{"id", "style": "preference", "kind", "item", "gold", "stored", "label", "split"}``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from items import ITEMS, Item

from memlab.matching.calibration_build import alternate_splits, number_pairs, run_build

__all__ = ["build"]

OUT = Path(__file__).resolve().parent.parent / "matching" / "preferences.jsonl"
STYLE = "preference"
NEGATIVES = ("polarity_flip", "other_condition", "other_value")


def _rows(item: Item, position: int, split: str) -> list[dict[str, Any]]:
    first, second = item.same
    wrong = dict(zip(NEGATIVES, (item.flip, item.condition, item.value), strict=True))
    extra = NEGATIVES[position % len(NEGATIVES)]
    pairs = [
        ("paraphrase", item.gold, first, True),
        ("paraphrase", item.gold, second, True),
        ("paraphrase", first, second, True),
        ("paraphrase", second, item.gold, True),
        *((kind, item.gold, stored, False) for kind, stored in wrong.items()),
        (extra, first, wrong[extra], False),
    ]
    return [
        {
            "kind": kind,
            "item": item.key,
            "gold": gold,
            "stored": stored,
            "label": label,
            "split": split,
        }
        for kind, gold, stored, label in pairs
    ]


def build() -> list[dict[str, Any]]:
    """Every pair with its id (deterministic)."""
    splits = alternate_splits(item.key for item in ITEMS)
    rows = [row for n, item in enumerate(ITEMS) for row in _rows(item, n, splits[item.key])]
    return number_pairs(rows, style=STYLE, prefix="pref-")


if __name__ == "__main__":
    code, message = run_build(sys.argv[1:], build=build, out=OUT, script=Path(__file__).resolve())
    (sys.stderr if code else sys.stdout).write(message)
    sys.exit(code)
