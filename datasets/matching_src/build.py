"""Build ``datasets/matching/pairs.jsonl``, the matcher calibration set, from this folder.

Usage::

    .venv/bin/python datasets/matching_src/build.py           # write the JSONL and print counts
    .venv/bin/python datasets/matching_src/build.py --check  # fail if the JSONL is out of date

Each line is one labeled pair: ``{"id", "style", "kind", "slot"?, "gold", "stored", "label",
"split"}`` (``style`` is ``compact``: these pairs were written one by one; the ``longform`` set
beside it is rendered from claims by ``datasets/matching_longform_src/build.py``)
(``label`` true = a careful reader counts the stored fact as stating the gold fact). The split
is fixed by the gold text, not by any matcher: within each kind the distinct gold facts are
ordered by their SHA-256 and alternate between ``dev`` and ``test`` (a gold fact placed by an
earlier kind keeps its split), so every kind is in both splits and no gold fact is in both.
Tune matchers on ``dev``; report on ``test``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kinds_contrast import OTHER_VALUE, PARTIAL, POLARITY_FLIP, UNRELATED
from kinds_same import NEGATIVE_RESTATED, PARAPHRASE, PERSON
from kinds_styles import CHINESE, LOCOMO

from memlab.matching.calibration_build import alternate_splits, number_pairs, run_build

__all__ = ["build"]

OUT = Path(__file__).resolve().parent.parent / "matching" / "pairs.jsonl"
STYLE = "compact"


def _entries() -> list[dict[str, Any]]:
    """Every pair with its kind (and slot), in authoring order."""
    rows: list[dict[str, Any]] = []
    rows += [{"kind": "paraphrase", "gold": g, "stored": s, "label": True} for g, s in PARAPHRASE]
    rows += [{"kind": "person", "gold": g, "stored": s, "label": True} for g, s in PERSON]
    rows += [{"kind": "partial", "gold": g, "stored": s, "label": lab} for g, s, lab in PARTIAL]
    rows += [
        {"kind": "polarity_flip", "gold": g, "stored": s, "label": False} for g, s in POLARITY_FLIP
    ]
    rows += [
        {"kind": "other_value", "slot": slot, "gold": g, "stored": s, "label": False}
        for slot, g, s in OTHER_VALUE
    ]
    rows += [{"kind": "unrelated", "gold": g, "stored": s, "label": False} for g, s in UNRELATED]
    rows += [
        {"kind": "negative_restated", "gold": g, "stored": s, "label": True}
        for g, s in NEGATIVE_RESTATED
    ]
    rows += [{"kind": "chinese", "gold": g, "stored": s, "label": lab} for g, s, lab in CHINESE]
    rows += [{"kind": "locomo", "gold": g, "stored": s, "label": lab} for g, s, lab in LOCOMO]
    return rows


def build() -> list[dict[str, Any]]:
    """The pairs with ids and splits (deterministic)."""
    rows = _entries()
    splits: dict[str, str] = {}
    for kind in dict.fromkeys(r["kind"] for r in rows):
        # A gold fact already placed by an earlier kind keeps its split.
        splits |= alternate_splits({r["gold"] for r in rows if r["kind"] == kind} - set(splits))
    return number_pairs(({**r, "split": splits[r["gold"]]} for r in rows), style=STYLE)


if __name__ == "__main__":
    code, message = run_build(sys.argv[1:], build=build, out=OUT, script=Path(__file__).resolve())
    (sys.stderr if code else sys.stdout).write(message)
    sys.exit(code)
