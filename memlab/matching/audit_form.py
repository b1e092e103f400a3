"""A notebook form for labelling a matcher audit sheet (needs ``ipywidgets``).

::

    from memlab.matching.audit_form import labelling_form
    form = labelling_form("runs/demo/matcher_audit.csv")
    form.widget          # display it: gold fact, stored fact, "states it" / "does not" / skip

Each answer is written to the sheet at once (atomically), so closing the notebook loses
nothing; the form starts at the first unlabelled row. The matcher's verdict is hidden unless
``show_verdict=True``, so it cannot sway the label.
"""

from __future__ import annotations

from dataclasses import replace
from html import escape
from pathlib import Path
from typing import Any

from memlab.errors import MemlabError
from memlab.matching.matcher_audit import AuditSheet, read_sheet

__all__ = ["FormUnavailableError", "LabellingForm", "labelling_form"]


class FormUnavailableError(MemlabError, RuntimeError):
    """``ipywidgets`` is not installed."""


class LabellingForm:
    """The form over one sheet (see the module docstring).

    Attributes:
        sheet: The sheet as labelled so far (also on disk).
        index: The row shown.
        widget: The ipywidgets box to display.
    """

    def __init__(self, path: str | Path, *, show_verdict: bool = False) -> None:
        try:
            import ipywidgets as widgets
        except ImportError as exc:
            raise FormUnavailableError(
                "the labelling form needs ipywidgets: pip install ipywidgets "
                "(or label the CSV sheet in a spreadsheet)"
            ) from exc
        self.sheet: AuditSheet = read_sheet(path)
        self.show_verdict = show_verdict
        unlabelled = [i for i, row in enumerate(self.sheet.rows) if row.label is None]
        self.index = unlabelled[0] if unlabelled else 0
        self._progress = widgets.HTML()
        self._pair = widgets.HTML()
        self._note = widgets.Text(placeholder="note (optional)")
        self.yes = widgets.Button(description="states it", button_style="success")
        self.no = widgets.Button(description="does not", button_style="danger")
        self.skip = widgets.Button(description="skip")
        self.back = widgets.Button(description="back")
        self.yes.on_click(lambda _b: self.answer(True))
        self.no.on_click(lambda _b: self.answer(False))
        self.skip.on_click(lambda _b: self.move(1))
        self.back.on_click(lambda _b: self.move(-1))
        buttons = widgets.HBox([self.yes, self.no, self.skip, self.back])
        self.widget: Any = widgets.VBox([self._progress, self._pair, self._note, buttons])
        self._show()

    def answer(self, label: bool) -> None:
        """Label the row shown, save the sheet, show the next row."""
        row = self.sheet.rows[self.index]
        self.sheet.rows[self.index] = replace(row, label=label, note=self._note.value or row.note)
        self.sheet.write()
        self.move(1)

    def move(self, step: int) -> None:
        self.index = min(max(self.index + step, 0), len(self.sheet.rows) - 1)
        self._show()

    def _show(self) -> None:
        rows = self.sheet.rows
        row = rows[self.index]
        done = sum(1 for r in rows if r.label is not None)
        self._progress.value = (
            f"<b>pair {self.index + 1} of {len(rows)}</b> &middot; {done} labelled"
        )
        said = "match" if row.verdict else "no match"
        verdict = (
            f"<p><i>matcher: {said} ({escape(row.reason)})</i></p>" if self.show_verdict else ""
        )
        current = "" if row.label is None else f"<p>your label: {'yes' if row.label else 'no'}</p>"
        self._pair.value = (
            "<p>Does the <b>stored</b> fact state the <b>gold</b> fact?</p>"
            f"<p><b>gold</b>: {escape(row.gold)}</p><p><b>stored</b>: {escape(row.stored)}</p>"
            f"{verdict}{current}"
        )
        self._note.value = row.note


def labelling_form(path: str | Path, *, show_verdict: bool = False) -> LabellingForm:
    """A :class:`LabellingForm` over the sheet at ``path``."""
    return LabellingForm(path, show_verdict=show_verdict)
