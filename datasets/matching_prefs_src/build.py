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

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from items import ITEMS, Item

__all__ = ["build", "main"]

OUT = Path(__file__).resolve().parent.parent / "matching" / "preferences.jsonl"
STYLE = "preference"
NEGATIVES = ("polarity_flip", "other_condition", "other_value")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _splits() -> dict[str, str]:
    keys = sorted((item.key for item in ITEMS), key=_digest)
    return {key: "dev" if position % 2 == 0 else "test" for position, key in enumerate(keys)}


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
    splits = _splits()
    if len(splits) != len(ITEMS):
        raise SystemExit("duplicate item key")
    rows = [row for n, item in enumerate(ITEMS) for row in _rows(item, n, splits[item.key])]
    seen: set[tuple[str, str]] = set()
    counters: Counter[str] = Counter()
    out = []
    for row in rows:
        pair = (row["gold"], row["stored"])
        if pair in seen:
            raise SystemExit(f"duplicate pair: {pair}")
        seen.add(pair)
        counters[row["kind"]] += 1
        out.append({"id": f"pref-{row['kind']}-{counters[row['kind']]:03d}", "style": STYLE, **row})
    return out


def render(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(argv: list[str]) -> int:
    rows = build()
    text = render(rows)
    if "--check" in argv:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(
                f"{OUT} is out of date; run datasets/matching_prefs_src/build.py", file=sys.stderr
            )
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    table = Counter((r["kind"], r["split"]) for r in rows)
    labels = Counter(r["label"] for r in rows)
    print(f"{len(rows)} pairs ({labels[True]} true, {labels[False]} false) -> {OUT}")
    for kind in dict.fromkeys(r["kind"] for r in rows):
        print(f"  {kind:<16} dev {table[(kind, 'dev')]:>3}  test {table[(kind, 'test')]:>3}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
