"""Calibrating a fact matcher against labeled (gold, stored) pairs.

The bundled set ``datasets/matching/pairs.jsonl`` (written for memlab; see
``docs/matching.md``) has one pair per line::

    {"id": "polarity_flip-001", "kind": "polarity_flip", "gold": "I don't enjoy classical
     music at all.", "stored": "Enjoys classical music", "label": false, "split": "dev"}

``label`` is true when a careful reader counts the stored fact as stating the gold fact.
:func:`calibrate` runs a matcher over the pairs and reports its *agreement* with the labels,
its *precision* (accepted pairs that are true) and *recall* (true pairs accepted), the share of
wrong pairs it accepts, and the same counts per kind. Matchers are tuned on ``dev`` and
reported on ``test``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from memlab.core.files import MAX_TEXT_BYTES, FileReadError, read_text
from memlab.core.jsontext import JsonDepthError, loads_json
from memlab.datasets.registry import dataset_dirs
from memlab.errors import MemlabError
from memlab.eval.matching import FactMatcher, matcher_name

__all__ = [
    "PAIRS_FILE",
    "SPLITS",
    "Calibration",
    "CalibrationPair",
    "CalibrationSetError",
    "KindCounts",
    "calibrate",
    "calibration_of",
    "default_pairs_path",
    "load_pairs",
]

PAIRS_FILE = Path("matching") / "pairs.jsonl"
"""Where the calibration set lives under a datasets directory."""

SPLITS = ("dev", "test")

_REQUIRED = {"id": str, "kind": str, "gold": str, "stored": str, "label": bool, "split": str}


class CalibrationSetError(MemlabError, ValueError):
    """A calibration pairs file is missing or has a bad line (the message names it)."""


@dataclass(frozen=True)
class CalibrationPair:
    """One labeled pair (see the module docstring)."""

    id: str
    kind: str
    gold: str
    stored: str
    label: bool
    split: str
    slot: str | None = None


def default_pairs_path() -> Path:
    """The bundled calibration set (searched like the bundled datasets).

    Raises:
        CalibrationSetError: No datasets directory holds ``matching/pairs.jsonl``.
    """
    for directory in dataset_dirs():
        candidate = directory / PAIRS_FILE
        if candidate.is_file():
            return candidate
    searched = ", ".join(str(d) for d in dataset_dirs())
    raise CalibrationSetError(
        f"calibration set {PAIRS_FILE} not found (searched: {searched}); pass --pairs FILE"
    )


def load_pairs(
    path: str | Path | None = None, *, split: str | None = None
) -> list[CalibrationPair]:
    """Read and check a pairs file, keeping ``split`` only (all pairs when None).

    Raises:
        CalibrationSetError: Unreadable file, bad JSON or a missing/mistyped field; the
            message names the file, the line and the field.
    """
    if split is not None and split not in SPLITS:
        raise CalibrationSetError(f"unknown split {split!r}; use one of: {', '.join(SPLITS)}")
    path = Path(path) if path is not None else default_pairs_path()
    try:
        lines = read_text(path, what="pairs file", max_bytes=MAX_TEXT_BYTES).splitlines()
    except FileReadError as exc:
        raise CalibrationSetError(str(exc)) from None
    except OSError as exc:
        raise CalibrationSetError(f"{path}: cannot read the pairs file: {exc.strerror}") from None
    pairs = [_pair(path, number, line) for number, line in enumerate(lines, 1) if line.strip()]
    if not pairs:
        raise CalibrationSetError(f"{path}: no pairs")
    return [p for p in pairs if split is None or p.split == split]


def _pair(path: Path, number: int, line: str) -> CalibrationPair:
    where = f"{path}:{number}"
    try:
        data = loads_json(line)
    except json.JSONDecodeError as exc:
        raise CalibrationSetError(f"{where}: not valid JSON ({exc.msg})") from None
    except JsonDepthError as exc:
        raise CalibrationSetError(f"{where}: {exc}") from None
    if not isinstance(data, dict):
        raise CalibrationSetError(f"{where}: expected a JSON object per line")
    for key, kind in _REQUIRED.items():
        if not isinstance(data.get(key), kind):
            raise CalibrationSetError(
                f"{where}: field {key!r} must be a {kind.__name__}, got {data.get(key)!r}"
            )
    if data["split"] not in SPLITS:
        raise CalibrationSetError(f"{where}: field 'split' must be one of {', '.join(SPLITS)}")
    slot = data.get("slot")
    return CalibrationPair(
        id=data["id"],
        kind=data["kind"],
        gold=data["gold"],
        stored=data["stored"],
        label=data["label"],
        split=data["split"],
        slot=slot if isinstance(slot, str) else None,
    )


@dataclass
class KindCounts:
    """Confusion counts: true pairs accepted/rejected, wrong pairs accepted/rejected."""

    true_accepted: int = 0
    true_rejected: int = 0
    wrong_accepted: int = 0
    wrong_rejected: int = 0

    def add(self, label: bool, accepted: bool) -> None:
        if label:
            if accepted:
                self.true_accepted += 1
            else:
                self.true_rejected += 1
        elif accepted:
            self.wrong_accepted += 1
        else:
            self.wrong_rejected += 1

    @property
    def pairs(self) -> int:
        return self.true_accepted + self.true_rejected + self.wrong_accepted + self.wrong_rejected

    @property
    def agreement(self) -> float:
        """Share of pairs where the matcher agrees with the label."""
        agreed = self.true_accepted + self.wrong_rejected
        return agreed / self.pairs if self.pairs else float("nan")


@dataclass
class Calibration:
    """A matcher's agreement with the labels (see the module docstring)."""

    matcher: str
    split: str
    total: KindCounts = field(default_factory=KindCounts)
    by_kind: dict[str, KindCounts] = field(default_factory=dict)
    errors: list[tuple[CalibrationPair, str]] = field(default_factory=list)

    @property
    def agreement(self) -> float:
        return self.total.agreement

    @property
    def precision(self) -> float:
        """Accepted pairs that are true."""
        accepted = self.total.true_accepted + self.total.wrong_accepted
        return self.total.true_accepted / accepted if accepted else float("nan")

    @property
    def recall(self) -> float:
        """True pairs accepted."""
        true = self.total.true_accepted + self.total.true_rejected
        return self.total.true_accepted / true if true else float("nan")

    @property
    def wrong_accepted_rate(self) -> float:
        """Wrong pairs accepted."""
        wrong = self.total.wrong_accepted + self.total.wrong_rejected
        return self.total.wrong_accepted / wrong if wrong else float("nan")

    def summary(self) -> dict[str, float | int | str]:
        """The headline numbers (what a run's ``environment.json`` records)."""
        return {
            "matcher": self.matcher,
            "split": self.split,
            "pairs": self.total.pairs,
            "agreement": round(self.agreement, 4),
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "wrong_accepted": round(self.wrong_accepted_rate, 4),
        }

    def table(self) -> str:
        """The per-kind confusion table and the totals, as aligned text."""
        header = f"{'kind':<18} {'pairs':>5} {'true acc':>8} {'true rej':>8} "
        header += f"{'wrong acc':>9} {'wrong rej':>9} {'agree':>6}"
        rows = [header]
        for kind, counts in [*sorted(self.by_kind.items()), ("all", self.total)]:
            rows.append(
                f"{kind:<18} {counts.pairs:>5} {counts.true_accepted:>8} "
                f"{counts.true_rejected:>8} {counts.wrong_accepted:>9} "
                f"{counts.wrong_rejected:>9} {counts.agreement:>6.1%}"
            )
        rows.append(
            f"matcher {self.matcher} on {self.split}: agreement {self.agreement:.1%}, "
            f"precision {self.precision:.1%}, recall (true pairs accepted) {self.recall:.1%}, "
            f"wrong pairs accepted {self.wrong_accepted_rate:.1%}"
        )
        return "\n".join(rows)


def calibrate(
    matcher: FactMatcher, pairs: Iterable[CalibrationPair], *, split: str | None = None
) -> Calibration:
    """Run ``matcher`` over ``pairs`` and count its agreement with the labels.

    Args:
        matcher: Any :class:`~memlab.eval.matching.FactMatcher`.
        pairs: Labeled pairs, e.g. ``load_pairs(split="test")``.
        split: Name to report (default: the pairs' split, or ``"all"`` when mixed).
    """
    pairs = list(pairs)
    result = Calibration(matcher=matcher_name(matcher), split=split or _split_name(pairs))
    for pair in pairs:
        accepted = matcher.covers(pair.stored, pair.gold)
        result.total.add(pair.label, accepted)
        result.by_kind.setdefault(pair.kind, KindCounts()).add(pair.label, accepted)
        if accepted != pair.label:
            result.errors.append((pair, "accepted" if accepted else "rejected"))
    return result


def _split_name(pairs: Sequence[CalibrationPair]) -> str:
    splits = {p.split for p in pairs}
    return splits.pop() if len(splits) == 1 else "all"


@lru_cache(maxsize=16)
def calibration_of(name: str, split: str = "test") -> Calibration | None:
    """The calibration of the registry matcher ``name`` on the bundled set, or None when
    ``name`` does not resolve offline (a judge, a changed parameter, a missing extra).

    Cached per process: reports ask once per run for the same few names.
    """
    from memlab.eval.matchers import resolve_matcher  # the registry builds matchers

    if name.startswith("judge"):
        return None
    try:
        matcher = resolve_matcher(name)
        pairs = load_pairs(split=split)
    except MemlabError:
        return None
    if getattr(matcher, "name", name) != name:  # e.g. "default" without the embeddings extra
        return None
    return calibrate(matcher, pairs, split=split)
