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
earlier kind keeps its split), so every kind is in both splits and no gold fact is in both. Tune matchers on ``dev``; report on ``test``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from kinds_contrast import OTHER_VALUE, PARTIAL, POLARITY_FLIP, UNRELATED
from kinds_same import NEGATIVE_RESTATED, PARAPHRASE, PERSON
from kinds_styles import CHINESE, LOCOMO

__all__ = ["build", "main"]

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


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build() -> list[dict[str, Any]]:
    """The pairs with ids and splits (deterministic)."""
    rows = _entries()
    seen: set[tuple[str, str]] = set()
    splits: dict[str, str] = {}
    for kind in dict.fromkeys(r["kind"] for r in rows):
        # A gold fact already placed by an earlier kind keeps its split.
        golds = sorted({r["gold"] for r in rows if r["kind"] == kind} - set(splits), key=_digest)
        for position, gold in enumerate(golds):
            splits[gold] = "dev" if position % 2 == 0 else "test"
    counters: Counter[str] = Counter()
    out = []
    for row in rows:
        key = (row["gold"], row["stored"])
        if key in seen:
            raise SystemExit(f"duplicate pair: {key}")
        seen.add(key)
        counters[row["kind"]] += 1
        out.append(
            {
                "id": f"{row['kind']}-{counters[row['kind']]:03d}",
                "style": STYLE,
                **row,
                "split": splits[row["gold"]],
            }
        )
    return out


def render(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(argv: list[str]) -> int:
    rows = build()
    text = render(rows)
    if "--check" in argv:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is out of date; run datasets/matching_src/build.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    table = Counter((r["kind"], r["split"], r["label"]) for r in rows)
    print(f"{len(rows)} pairs -> {OUT}")
    for kind in dict.fromkeys(r["kind"] for r in rows):
        cells = [
            f"{split} {table[(kind, split, True)]}+/{table[(kind, split, False)]}-"
            for split in ("dev", "test")
        ]
        print(f"  {kind:18} " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
