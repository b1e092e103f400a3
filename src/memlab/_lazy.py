"""Package faces that import each exported name on first use (PEP 562).

A face lists where each of its names lives; ``import memlab.scoring`` then loads nothing but
the face, and ``memlab.scoring.summarize`` imports :mod:`memlab.scoring.metrics` when it is
first read. A command or a notebook thereby pays only for the modules it uses (pandas,
matplotlib and numpy load with the first name that needs them). The faces' ``TYPE_CHECKING``
imports tell type checkers and IDEs what each name is.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_face"]


def lazy_face(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the face of ``package``.

    Besides the exported names, the package's modules are reachable as attributes before
    anyone imported them (``memlab.reporting.charts`` after ``import memlab``), as with a
    face that imports them eagerly.

    Args:
        package: The package's name (``__name__`` of its ``__init__``).
        exports: Exported name -> the module that defines it.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}"):
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
