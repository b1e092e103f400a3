"""How a run shows itself: views registered through :mod:`memlab.plugins`.

A :class:`~memlab.runs.run.Run` in a notebook displays the view registered as ``html``;
memlab.reporting registers it (the headline metrics, what the sweep reused and the key charts)
through memlab's own ``memlab.plugins`` entry point, so the run directory code never imports
the charts. This module imports nothing heavy: registering a view loads no pandas.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memlab import plugins

__all__ = ["RUN_VIEWS"]

RUN_VIEWS: plugins.Registry[Callable[[Any], str]] = plugins.declare(
    "run_view", "run view", check=plugins.callable_entry
)
"""Views of a run by format (``html``): a function of the run returning the text."""
