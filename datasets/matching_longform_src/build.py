"""Build ``datasets/matching/longform.jsonl``, the long-form matcher calibration set.

Usage::

    .venv/bin/python datasets/matching_longform_src/build.py           # write and print counts
    .venv/bin/python datasets/matching_longform_src/build.py --check  # fail if out of date

How this set differs from ``datasets/matching/pairs.jsonl`` (the ``compact`` style, whose pairs
were written one by one): its pairs are *rendered* from claims (``claims.py``) through
templates (``templates.py``). Gold facts are long and in the first person: a framing or a
hedge, the claim in one of several stance families, then a reason or a consequence. Stored
facts are compressed and in the third person. Every claim yields pairs that state it (label
true) and hard negatives built from the same gold fact (label false): the opposite stance, the
same stance on another thing or another value, or only the reason.

The split is fixed by the claim, before any matcher was tuned on this set: within each group
of claims (negative stances, positive stances, and each kind of written claim) the claim keys
are ordered by SHA-256 and alternate between ``dev`` and ``test``; a claim is rendered only
with the templates of its split, so ``test`` is worded with openers, joiners, hedges and stored
shapes that ``dev`` never shows. Choices within a pool are drawn with a generator seeded by the
claim key, so the file is deterministic.

Each line: ``{"id", "style": "longform", "kind", "claim", "gold", "stored", "label", "split"}``.
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import templates as t
from claims import STANCES, WRITTEN, Stance, Written

from memlab.matching.calibration_build import alternate_splits, digest, number_pairs, run_build

__all__ = ["build"]

OUT = Path(__file__).resolve().parent.parent / "matching" / "longform.jsonl"
STYLE = "longform"
FAMILIES = list(t.GOLD_NEGATIVE)
_NO_USER_PREFIX = ("Averse", "Strong", "Not", "Keen")


def _splits() -> dict[str, str]:
    groups: dict[str, list[str]] = {}
    for stance in STANCES:
        groups.setdefault("positive" if stance.positive else "negative", []).append(stance.key)
    for written in WRITTEN:
        groups.setdefault(written.kind, []).append(written.key)
    splits: dict[str, str] = {}
    for keys in groups.values():
        splits |= alternate_splits(keys)
    return splits


class _Renderer:
    """Template choices for one claim: its split's pools, a generator seeded by its key."""

    def __init__(self, key: str, split: str) -> None:
        self.split = split
        self.rng = random.Random(int(digest(key)[:16], 16))

    def pick(self, pool: list[tuple[str, str]]) -> str:
        return self.rng.choice([text for split, text in pool if split == self.split])

    def gold(self, core: str, *, reason: str = "", cons: str = "", hedge: bool = False) -> str:
        """Framing or hedge, the core, then the reason (or the consequence)."""
        front = self.pick(t.HEDGE if hedge else t.OPENER)
        claim = front + (_lower_first(core) if front else core)
        if reason:
            return self.pick(t.REASON).format(core=claim, reason=reason)
        if cons:
            return self.pick(t.CONSEQUENCE).format(core=claim, cons=cons)
        return claim + "."

    def stored(self, template: str, thing: tuple[str, str, str]) -> str:
        np, vp, ing = thing
        fact = template.format(np=np, vp=vp, ing=ing)
        shape = self.pick(t.STORED_SHAPE)
        if fact.startswith(_NO_USER_PREFIX):
            shape = "{fact}"
        return shape.format(fact=fact, fact_lower=_lower_first(fact))


def _lower_first(text: str) -> str:
    first = text.split(" ", 1)[0]
    if first in ("I", "I'm", "I've", "I'd") or any(c.isupper() for c in first[1:]):
        return text
    return text[:1].lower() + text[1:]


def _stance_rows(stance: Stance, split: str, position: int) -> list[dict[str, Any]]:
    r = _Renderer(stance.key, split)
    if stance.positive:
        gold_cores = [r.pick(t.GOLD_POSITIVE), r.pick(t.GOLD_POSITIVE)]
        stored_same = [r.pick(t.STORED_POSITIVE), r.pick(t.STORED_POSITIVE)]
        flip = r.pick(t.STORED_NEGATIVE[r.rng.choice(FAMILIES)])
        kind = "reasons"
    else:
        # Gold families cycle so that every family appears in both splits; the stored fact
        # always uses another family than its gold fact.
        families = [FAMILIES[(2 * position + k) % len(FAMILIES)] for k in (0, 1)]
        gold_cores = [r.pick(t.GOLD_NEGATIVE[f]) for f in families]
        stored_same = [
            r.pick(t.STORED_NEGATIVE[r.rng.choice([f for f in FAMILIES if f != g])])
            for g in families
        ]
        flip = r.pick(t.STORED_POSITIVE)
        kind = "negative_phrasing"
    np, vp, ing = stance.thing
    cores = [c.format(np=np, vp=vp, ing=ing) for c in gold_cores]
    gold_reason = r.gold(cores[0], reason=stance.reason)
    gold_cons = r.gold(cores[1], cons=stance.cons, hedge=True)
    same_sign = t.STORED_POSITIVE if stance.positive else t.STORED_NEGATIVE[r.rng.choice(FAMILIES)]
    rows = [
        (kind, gold_reason, r.stored(stored_same[0], stance.thing), True),
        (kind, gold_cons, r.stored(stored_same[1], stance.thing), True),
        ("polarity_flip", gold_reason, r.stored(flip, stance.thing), False),
        ("other_value", gold_cons, r.stored(r.pick(same_sign), stance.other), False),
    ]
    if stance.reason_fact:
        rows.append(("reason_only", gold_reason, stance.reason_fact, False))
    return [_row(stance.key, *row, split) for row in rows]


def _written_rows(claim: Written, split: str) -> list[dict[str, Any]]:
    r = _Renderer(claim.key, split)

    def gold(index: int) -> str:
        # Hedges suit preferences ("I guess I hate ..."), not states: written claims get openers.
        return r.gold(claim.cores[index % len(claim.cores)], reason=claim.reason, cons=claim.cons)

    rows = [_row(claim.key, claim.kind, gold(i), s, True, split) for i, s in enumerate(claim.true)]
    rows += [
        _row(claim.key, kind, gold(j), s, False, split) for j, (kind, s) in enumerate(claim.false)
    ]
    return rows


def _row(key: str, kind: str, gold: str, stored: str, label: bool, split: str) -> dict[str, Any]:
    return {"kind": kind, "claim": key, "gold": gold, "stored": stored, "label": label,
            "split": split}


def build() -> list[dict[str, Any]]:
    """Every pair with its id (deterministic)."""
    splits = _splits()
    rows: list[dict[str, Any]] = []
    positions: Counter[tuple[bool, str]] = Counter()
    for stance in STANCES:
        split = splits[stance.key]
        rows += _stance_rows(stance, split, positions[(stance.positive, split)])
        positions[(stance.positive, split)] += 1
    for claim in WRITTEN:
        rows += _written_rows(claim, splits[claim.key])
    return number_pairs(rows, style=STYLE, prefix="long-")


if __name__ == "__main__":
    code, message = run_build(sys.argv[1:], build=build, out=OUT, script=Path(__file__).resolve())
    (sys.stderr if code else sys.stdout).write(message)
    sys.exit(code)
