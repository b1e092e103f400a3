"""memlab.reporting's entries in the registries of lower layers, registered through memlab's
own ``memlab.plugins`` entry point: the HTML view of a run (a notebook's display of
:class:`~memlab.runs.run.Run`). Importing this module loads neither pandas nor matplotlib."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab.runs.views import RUN_VIEWS

if TYPE_CHECKING:
    from memlab.runs.run import Run

__all__ = ["register", "run_html"]


def run_html(run: Run) -> str:
    """The run in a notebook (see :func:`memlab.reporting.display.run_html`)."""
    from memlab.reporting.display import run_html as render  # loads matplotlib when shown

    return render(run)


def register() -> None:
    """Register the run's HTML view (called once per process by memlab's plugin loader)."""
    RUN_VIEWS.register("html", run_html)
