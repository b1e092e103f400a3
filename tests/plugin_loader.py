"""The plugin loader's process-wide state, replaced for a test and put back afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from memlab import plugins

__all__ = ["fresh_plugin_loader"]


@contextmanager
def fresh_plugin_loader() -> Iterator[list[Any]]:
    """The loader as if nothing was loaded yet, reading the entry points put in the list
    yielded. Everything loading them records (state, failures, warnings) is the test's own and
    is put back on exit: a broken plugin a test plants is never reported to a later test."""
    found: list[Any] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plugins, "_state", "new")
        patch.setattr(plugins, "_failures", {})
        patch.setattr(plugins, "_warnings", [])
        patch.setattr(plugins, "_entry_points", lambda: list(found))
        yield found
