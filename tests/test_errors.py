"""Every error class memlab defines derives from the one root the CLI catches."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import memlab
from memlab.errors import MemlabError


def _error_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(memlab.__path__, "memlab."):
        if info.name.startswith("memlab.cli") or info.name == "memlab.__main__":
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            # Private control-flow signals (e.g. jsontext._Unusual) never leave their module.
            public = not obj.__name__.startswith("_")
            if public and issubclass(obj, BaseException) and obj.__module__.startswith("memlab."):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return list(found.values())


def test_every_error_class_derives_from_memlab_error() -> None:
    classes = _error_classes()
    assert len(classes) >= 15  # the walk found the package's errors
    outside = [c.__qualname__ for c in classes if not issubclass(c, MemlabError)]
    assert outside == []
