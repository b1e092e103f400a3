"""Measuring a fact matcher on a run's own pairs: a labelling sheet drawn from the run.

This module is the sheet (its rows, reading, estimates, judge columns); drawing it from a run
directory is :func:`memlab.postrun.audit.draw_sheet`.

The bundled calibration sets say how a matcher does on writing memlab knows; a run may be
written otherwise. :func:`~memlab.postrun.audit.draw_sheet` (``memlab matcher audit RUN
--sample 60``) collects the
(stored, gold) pairs the run's metrics rest on, from every memory snapshot of every replay,
in two strata by the matcher's verdict:

- ``accepted``: pairs the matcher says match (where false matches live);
- ``rejected``: for each gold fact no stored fact matches, the stored fact nearest to it, and
  for each stored fact that matches no gold fact, the nearest gold fact (nearest by the
  matcher's score, then by shared content words; where missed matches live).

It samples the same number from each stratum (seeded) into a CSV sheet with an empty
``label`` column: ``yes`` when the stored fact states the gold fact, ``no`` otherwise (a
spreadsheet or :func:`memlab.matching.audit_form.labelling_form` in a notebook).
:meth:`AuditSheet.estimate` then gives the matcher's agreement, precision, recall and Cohen's
kappa on the labelled pairs, and, weighting each stratum by its size in the run, estimates of
its agreement, precision and recall over the run's candidate pairs. :func:`judge_sheet` fills
the judge columns with an LLM judge's verdicts. A run's sheet lives at ``RUN/matcher_audit.csv``
by default; reports show its numbers when it has labels.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from memlab.core.base.atomic import atomic_write_text
from memlab.core.base.files import FileReadError, read_text
from memlab.errors import MemlabError
from memlab.matching.calibration import CalibrationPair, KindCounts

if TYPE_CHECKING:
    from memlab.matching.judge import LLMJudgeMatcher

__all__ = [
    "COLUMNS",
    "SHEET_NAME",
    "STRATA",
    "AuditError",
    "AuditRow",
    "AuditSheet",
    "SheetEstimate",
    "agreement_counts",
    "judge_sheet",
    "parse_label",
    "read_sheet",
]

SHEET_NAME = "matcher_audit.csv"
"""The sheet's file name inside a run directory."""
STRATA = ("accepted", "rejected")
COLUMNS = (
    "id",
    "stratum",
    "stratum_size",
    "matcher",
    "verdict",
    "score",
    "reason",
    "lane",
    "owner",
    "session",
    "gold",
    "stored",
    "label",
    "note",
    "judge_lenient",
    "judge_strict",
)
"""The sheet's columns, in order (people fill ``label`` and may write a ``note``)."""
_YES = frozenset({"yes", "y", "true", "1"})
_NO = frozenset({"no", "n", "false", "0"})


class AuditError(MemlabError, ValueError):
    """A sheet that cannot be drawn, read or written (the message names file, line, field)."""


def parse_label(text: str) -> bool | None:
    """``yes``/``no`` (also y/n, true/false, 1/0; any case) as a bool; "" as None.

    Raises:
        ValueError: Anything else.
    """
    value = text.strip().casefold()
    if not value:
        return None
    if value in _YES:
        return True
    if value in _NO:
        return False
    raise ValueError(f"{text!r} is not a label; write yes or no (or leave it empty)")


def _show(value: bool | None) -> str:
    return "" if value is None else "yes" if value else "no"


@dataclass(frozen=True)
class AuditRow:
    """One (stored, gold) pair of the sheet, with the matcher's verdict and the labels."""

    id: str
    stratum: str
    stratum_size: int
    matcher: str
    verdict: bool
    score: float
    reason: str
    lane: str
    owner: str
    session: int
    gold: str
    stored: str
    label: bool | None = None
    note: str = ""
    judge_lenient: bool | None = None
    judge_strict: bool | None = None

    def cells(self) -> list[str]:
        return [
            self.id,
            self.stratum,
            str(self.stratum_size),
            self.matcher,
            _show(self.verdict),
            f"{self.score:.3f}",
            self.reason,
            self.lane,
            self.owner,
            str(self.session),
            self.gold,
            self.stored,
            _show(self.label),
            self.note,
            _show(self.judge_lenient),
            _show(self.judge_strict),
        ]


@dataclass(frozen=True)
class SheetEstimate:
    """What a labelled sheet says about its matcher.

    Attributes:
        sample: The verdicts recorded in the sheet against the labels, over labelled rows.
        by_stratum: The same per stratum.
        sizes: Candidate pairs per stratum in the run.
    """

    sample: KindCounts
    by_stratum: dict[str, KindCounts]
    sizes: dict[str, int]

    def _share_true(self, stratum: str) -> float:
        counts = self.by_stratum.get(stratum, KindCounts())
        true = counts.true_accepted + counts.true_rejected
        return true / counts.pairs if counts.pairs else float("nan")

    @property
    def run_precision(self) -> float:
        """Estimated share of the run's accepted pairs that are true."""
        return self._share_true("accepted")

    @property
    def run_recall(self) -> float:
        """Estimated share of the run's true candidate pairs that the matcher accepts."""
        accepted = self.sizes.get("accepted", 0) * self.run_precision
        missed = self.sizes.get("rejected", 0) * self._share_true("rejected")
        return accepted / (accepted + missed) if accepted + missed else float("nan")

    @property
    def run_agreement(self) -> float:
        """Estimated agreement over the run's candidate pairs (strata weighted by size)."""
        total = sum(self.sizes.get(s, 0) for s in self.by_stratum)
        weighted = sum(self.sizes.get(s, 0) * c.agreement for s, c in self.by_stratum.items())
        return weighted / total if total else float("nan")

    def summary(self) -> dict[str, object]:
        return {
            **self.sample.summary(),
            "run_agreement": round(self.run_agreement, 4),
            "run_precision": round(self.run_precision, 4),
            "run_recall": round(self.run_recall, 4),
            "strata": {
                s: {"size": self.sizes.get(s, 0), **c.summary()}
                for s, c in sorted(self.by_stratum.items())
            },
        }


@dataclass
class AuditSheet:
    """A labelling sheet (see the module docstring)."""

    rows: list[AuditRow] = field(default_factory=list)
    path: Path | None = None

    @property
    def matcher(self) -> str:
        """The matcher whose verdicts the sheet records."""
        return self.rows[0].matcher if self.rows else ""

    def labelled(self) -> list[AuditRow]:
        return [row for row in self.rows if row.label is not None]

    def pairs(self) -> list[CalibrationPair]:
        """The labelled rows as calibration pairs (style ``run``, kind = stratum)."""
        return [
            CalibrationPair(
                id=row.id,
                kind=row.stratum,
                gold=row.gold,
                stored=row.stored,
                label=bool(row.label),
                split="run",
                style="run",
            )
            for row in self.labelled()
        ]

    def estimate(self) -> SheetEstimate:
        """The recorded verdicts against the labels (see :class:`SheetEstimate`)."""
        sample = KindCounts()
        by_stratum: dict[str, KindCounts] = {}
        sizes: dict[str, int] = {}
        for row in self.rows:
            sizes[row.stratum] = row.stratum_size
            if row.label is None:
                continue
            sample.add(row.label, row.verdict)
            by_stratum.setdefault(row.stratum, KindCounts()).add(row.label, row.verdict)
        return SheetEstimate(sample, by_stratum, sizes)

    def render(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(row.cells() for row in self.rows)
        return buffer.getvalue()

    def write(self, path: str | Path | None = None, *, force: bool = True) -> Path:
        """Write the sheet atomically (to ``path``, default where it was read from).

        Raises:
            AuditError: ``force`` is false and a file is already there.
        """
        target = Path(path) if path is not None else self.path
        if target is None:
            raise AuditError("the sheet has no path; give one")
        if not force and target.exists():
            raise AuditError(
                f"{target} exists (it may hold labels); pass --force to replace it or -o "
                "to write elsewhere"
            )
        atomic_write_text(target, self.render())
        self.path = target
        return target


def read_sheet(path: str | Path, *, inside: str | Path | None = None) -> AuditSheet:
    """Read and check a labelling sheet.

    ``inside``: a directory the sheet must stay in with no symbolic link on the way (a run
    directory: its sheet is read like every other run file).

    Raises:
        AuditError: Unreadable file, a missing column, or a bad cell; the message names the
            file, the line and the column.
    """
    path = Path(path)
    try:
        text = read_text(path, what="labelling sheet", inside=inside).removeprefix("\ufeff")
    except FileReadError as exc:  # a FIFO, a device, too large, not UTF-8
        raise AuditError(str(exc)) from None
    except OSError as exc:
        raise AuditError(f"{path}: cannot read the sheet: {exc.strerror}") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS[:13] if c not in (reader.fieldnames or [])]
    if missing:
        raise AuditError(f"{path}:1: missing column(s) {', '.join(missing)}")
    rows = [_row(path, reader.line_num, record) for record in reader]
    if not rows:
        raise AuditError(f"{path}: no rows")
    return AuditSheet(rows, path)


def _row(path: Path, line: int, record: dict[str, str]) -> AuditRow:
    def cell(column: str) -> str:
        return record.get(column) or ""

    def fail(column: str, problem: str) -> AuditError:
        return AuditError(f"{path}:{line}: column {column!r}: {problem}")

    try:
        values = {c: parse_label(cell(c)) for c in ("label", "judge_lenient", "judge_strict")}
        verdict = parse_label(cell("verdict"))
    except ValueError as exc:
        raise fail("label/verdict", str(exc)) from exc
    if cell("stratum") not in STRATA:
        raise fail("stratum", f"must be one of {', '.join(STRATA)}, got {cell('stratum')!r}")
    if verdict is None:
        raise fail("verdict", "empty (the matcher's verdict, yes or no)")
    numbers = {}
    for column, kind in (("stratum_size", int), ("session", int), ("score", float)):
        try:
            numbers[column] = kind(cell(column))
        except ValueError:
            raise fail(column, f"not a number: {cell(column)!r}") from None
    if not cell("gold").strip() or not cell("stored").strip():
        raise fail("gold/stored", "empty")
    return AuditRow(
        id=cell("id"),
        stratum=cell("stratum"),
        stratum_size=int(numbers["stratum_size"]),
        matcher=cell("matcher"),
        verdict=verdict,
        score=float(numbers["score"]),
        reason=cell("reason"),
        lane=cell("lane"),
        owner=cell("owner"),
        session=int(numbers["session"]),
        gold=cell("gold"),
        stored=cell("stored"),
        label=values["label"],
        note=cell("note"),
        judge_lenient=values["judge_lenient"],
        judge_strict=values["judge_strict"],
    )


def judge_sheet(sheet: AuditSheet, judge: LLMJudgeMatcher) -> AuditSheet:
    """The sheet with the judge's verdicts under its lenient and strict prompts filled in."""
    rows = []
    for row in sheet.rows:
        verdicts = {p: judge.under(p).covers(row.stored, row.gold) for p in judge.prompts}
        rows.append(
            replace(
                row,
                judge_lenient=verdicts.get("lenient", row.judge_lenient),
                judge_strict=verdicts.get("strict", row.judge_strict),
            )
        )
    return AuditSheet(rows, sheet.path)


def agreement_counts(sheet: AuditSheet, column: str, against: str) -> KindCounts:
    """Counts of ``against`` (verdicts) against ``column`` (labels) over rows having both;
    columns: ``label``, ``verdict``, ``judge_lenient``, ``judge_strict``."""
    counts = KindCounts()
    for row in sheet.rows:
        truth, verdict = getattr(row, column), getattr(row, against)
        if truth is not None and verdict is not None:
            counts.add(truth, verdict)
    return counts
