"""Calibrating a fact matcher against labeled (gold, stored) pairs.

memlab bundles three calibration sets in three styles (see ``docs/matching.md``), one pair per
line::

    {"id": "polarity_flip-001", "style": "compact", "kind": "polarity_flip",
     "gold": "I don't enjoy classical music at all.", "stored": "Enjoys classical music",
     "label": false, "split": "dev"}

- ``datasets/matching/pairs.jsonl`` (style ``compact``): pairs written one by one, gold facts
  in the short styles labeled datasets use;
- ``datasets/matching/longform.jsonl`` (style ``longform``): pairs rendered from claims,
  long first-person gold facts with reasons against compressed third-person stored facts;
- ``datasets/matching/preferences.jsonl`` (style ``preference``): pairs of long first-person
  preferences with a condition, a reason and a hedge on both sides, against paraphrases and
  against copies with the polarity, the condition or the value changed.

``label`` is true when a careful reader counts the stored fact as stating the gold fact.
:func:`calibrate` runs a matcher over the pairs and reports its *agreement* with the labels,
its *precision* (accepted pairs that are true), *recall* (true pairs accepted), the share of
wrong pairs it accepts and Cohen's kappa, for all pairs, per style and per kind within a
style, so a matcher that wins one style by losing another shows it. Matchers are tuned on
``dev`` and reported on ``test``. A labelling sheet of a run's own pairs
(:mod:`memlab.matching.matcher_audit`, ``.csv``) loads as pairs of style ``run``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from memlab.core.base.files import MAX_TEXT_BYTES, FileReadError, read_text
from memlab.core.base.jsontext import JsonDepthError, loads_json
from memlab.datasets.registry import dataset_dirs
from memlab.errors import MemlabError
from memlab.matching.base import FactMatcher, matcher_name

__all__ = [
    "PAIR_FILES",
    "SPLITS",
    "Calibration",
    "CalibrationPair",
    "CalibrationSetError",
    "KindCounts",
    "bundled_pair_files",
    "calibrate",
    "calibration_of",
    "load_pairs",
]

PAIR_FILES = (
    Path("matching") / "pairs.jsonl",
    Path("matching") / "longform.jsonl",
    Path("matching") / "preferences.jsonl",
)
"""The bundled calibration sets, under a datasets directory."""

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
    style: str = "compact"


def bundled_pair_files() -> list[Path]:
    """The bundled calibration sets (searched like the bundled datasets).

    Raises:
        CalibrationSetError: A datasets directory lacks one of :data:`PAIR_FILES`.
    """
    found = []
    for name in PAIR_FILES:
        for directory in dataset_dirs():
            if (directory / name).is_file():
                found.append(directory / name)
                break
        else:
            searched = ", ".join(str(d) for d in dataset_dirs())
            raise CalibrationSetError(
                f"calibration set {name} not found (searched: {searched}); pass --pairs FILE"
            )
    return found


def load_pairs(
    path: str | Path | None = None, *, split: str | None = None
) -> list[CalibrationPair]:
    """Read and check a pairs file (every bundled set when ``path`` is None), keeping
    ``split`` only (all pairs when None). A ``.csv`` file is read as a labelling sheet
    (:func:`memlab.matching.matcher_audit.read_sheet`): its labelled rows, split ``run``.

    Raises:
        CalibrationSetError: Unreadable file, bad JSON or a missing/mistyped field; the
            message names the file, the line and the field.
    """
    if split is not None and split not in SPLITS:
        raise CalibrationSetError(f"unknown split {split!r}; use one of: {', '.join(SPLITS)}")
    if path is None:
        pairs = [p for file in bundled_pair_files() for p in _read_jsonl(file)]
    elif Path(path).suffix.casefold() == ".csv":
        from memlab.matching.matcher_audit import read_sheet  # the sheet module reads pairs too

        return read_sheet(path).pairs()
    else:
        pairs = _read_jsonl(Path(path))
    return [p for p in pairs if split is None or p.split == split]


def _read_jsonl(path: Path) -> list[CalibrationPair]:
    try:
        lines = read_text(path, what="pairs file", max_bytes=MAX_TEXT_BYTES).splitlines()
    except FileReadError as exc:
        raise CalibrationSetError(str(exc)) from None
    except OSError as exc:
        raise CalibrationSetError(f"{path}: cannot read the pairs file: {exc.strerror}") from None
    pairs = [_pair(path, number, line) for number, line in enumerate(lines, 1) if line.strip()]
    if not pairs:
        raise CalibrationSetError(f"{path}: no pairs")
    return pairs


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
    slot, style = data.get("slot"), data.get("style", path.stem)
    if not isinstance(style, str) or not style:
        raise CalibrationSetError(f"{where}: field 'style' must be a non-empty string")
    return CalibrationPair(
        id=data["id"],
        kind=data["kind"],
        gold=data["gold"],
        stored=data["stored"],
        label=data["label"],
        split=data["split"],
        slot=slot if isinstance(slot, str) else None,
        style=style,
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

    @property
    def precision(self) -> float:
        """Accepted pairs that are true."""
        accepted = self.true_accepted + self.wrong_accepted
        return self.true_accepted / accepted if accepted else float("nan")

    @property
    def recall(self) -> float:
        """True pairs accepted."""
        true = self.true_accepted + self.true_rejected
        return self.true_accepted / true if true else float("nan")

    @property
    def wrong_accepted_rate(self) -> float:
        """Wrong pairs accepted."""
        wrong = self.wrong_accepted + self.wrong_rejected
        return self.wrong_accepted / wrong if wrong else float("nan")

    @property
    def kappa(self) -> float:
        """Cohen's kappa between the verdicts and the labels: agreement beyond what their
        marginal rates give by chance (NaN when chance agreement is 1)."""
        n = self.pairs
        if not n:
            return float("nan")
        accepted = (self.true_accepted + self.wrong_accepted) / n
        true = (self.true_accepted + self.true_rejected) / n
        chance = accepted * true + (1 - accepted) * (1 - true)
        return (self.agreement - chance) / (1 - chance) if chance < 1 else float("nan")

    def summary(self) -> dict[str, float | int]:
        """Pairs, agreement, precision, recall, wrong pairs accepted and kappa (rounded)."""
        return {
            "pairs": self.pairs,
            "agreement": _round(self.agreement),
            "precision": _round(self.precision),
            "recall": _round(self.recall),
            "wrong_accepted": _round(self.wrong_accepted_rate),
            "kappa": _round(self.kappa),
        }


def _round(value: float) -> float:
    return round(value, 4) if value == value else value


@dataclass
class Calibration:
    """A matcher's agreement with the labels, overall, per style and per (style, kind)."""

    matcher: str
    split: str
    total: KindCounts = field(default_factory=KindCounts)
    by_style: dict[str, KindCounts] = field(default_factory=dict)
    by_kind: dict[tuple[str, str], KindCounts] = field(default_factory=dict)
    errors: list[tuple[CalibrationPair, str]] = field(default_factory=list)

    @property
    def agreement(self) -> float:
        return self.total.agreement

    @property
    def precision(self) -> float:
        return self.total.precision

    @property
    def recall(self) -> float:
        return self.total.recall

    @property
    def wrong_accepted_rate(self) -> float:
        return self.total.wrong_accepted_rate

    def worst_style(self) -> tuple[str, KindCounts]:
        """The style with the lowest agreement (what a report quotes beside the total)."""
        return min(self.by_style.items(), key=lambda item: item[1].agreement)

    def summary(self) -> dict[str, object]:
        """The headline numbers and those of each style (what ``--json`` prints)."""
        return {
            "matcher": self.matcher,
            "split": self.split,
            **self.total.summary(),
            "by_style": {
                style: {
                    **counts.summary(),
                    "by_kind": {
                        kind: vars(c) for (s, kind), c in sorted(self.by_kind.items()) if s == style
                    },
                }
                for style, counts in sorted(self.by_style.items())
            },
        }

    def table(self) -> str:
        """Per style: the per-kind confusion table and the style's totals; then all pairs."""
        header = f"{'style / kind':<28} {'pairs':>5} {'true acc':>8} {'true rej':>8} "
        header += f"{'wrong acc':>9} {'wrong rej':>9} {'agree':>6} {'kappa':>6}"
        rows = [header]
        for style, counts in sorted(self.by_style.items()):
            for (s, kind), kind_counts in sorted(self.by_kind.items()):
                if s == style:
                    rows.append(_row(f"{style} / {kind}", kind_counts))
            rows.append(_row(f"{style} (all kinds)", counts))
        rows.append(_row("all", self.total))
        for style, counts in sorted(self.by_style.items()):
            rows.append(_headline(f"{style}:", counts))
        rows.append(_headline(f"matcher {self.matcher} on {self.split}:", self.total))
        return "\n".join(rows)


def _row(label: str, c: KindCounts) -> str:
    # Kappa says nothing about a group whose labels are all one way: shown as "-".
    one_way = c.true_accepted + c.true_rejected in (0, c.pairs)
    kappa = "-" if one_way or c.kappa != c.kappa else f"{c.kappa:.2f}"
    return (
        f"{label:<28} {c.pairs:>5} {c.true_accepted:>8} {c.true_rejected:>8} "
        f"{c.wrong_accepted:>9} {c.wrong_rejected:>9} {c.agreement:>6.1%} {kappa:>6}"
    )


def _headline(label: str, c: KindCounts) -> str:
    return (
        f"{label} agreement {c.agreement:.1%}, precision {c.precision:.1%}, recall (true "
        f"pairs accepted) {c.recall:.1%}, wrong pairs accepted {c.wrong_accepted_rate:.1%}, "
        f"kappa {c.kappa:.2f}"
    )


def calibrate(
    matcher: FactMatcher, pairs: Iterable[CalibrationPair], *, split: str | None = None
) -> Calibration:
    """Run ``matcher`` over ``pairs`` and count its agreement with the labels.

    Args:
        matcher: Any :class:`~memlab.matching.base.FactMatcher`.
        pairs: Labeled pairs, e.g. ``load_pairs(split="test")``.
        split: Name to report (default: the pairs' split, or ``"all"`` when mixed).
    """
    pairs = list(pairs)
    result = Calibration(matcher=matcher_name(matcher), split=split or _split_name(pairs))
    warm = getattr(matcher, "warm", None)
    if callable(warm):  # read and embed every text in one batch first
        warm(text for pair in pairs for text in (pair.gold, pair.stored))
    for pair in pairs:
        accepted = matcher.covers(pair.stored, pair.gold)
        result.total.add(pair.label, accepted)
        result.by_style.setdefault(pair.style, KindCounts()).add(pair.label, accepted)
        result.by_kind.setdefault((pair.style, pair.kind), KindCounts()).add(pair.label, accepted)
        if accepted != pair.label:
            result.errors.append((pair, "accepted" if accepted else "rejected"))
    return result


def _split_name(pairs: Sequence[CalibrationPair]) -> str:
    splits = {p.split for p in pairs}
    return splits.pop() if len(splits) == 1 else "all"


@lru_cache(maxsize=16)
def calibration_of(name: str, split: str = "test") -> Calibration | None:
    """The calibration of the registry matcher ``name`` on the bundled sets, or None when
    ``name`` does not resolve offline (a judge, a changed parameter, a missing extra).

    Cached per process: reports ask once per run for the same few names.
    """
    from memlab.matching.matchers import resolve_matcher  # the registry builds matchers

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
