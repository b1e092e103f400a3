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


# Control-flow signals that must pass through a library catching every ``Exception`` (GEPA
# catches its reflection's): each carries the MemlabError it stands for, and the memlab
# function that called the library raises that error in its place.
SIGNALS = {"memlab.reporting.tuning.tune_reflect.ReflectionRefused"}


def test_every_error_class_derives_from_memlab_error() -> None:
    classes = _error_classes()
    assert len(classes) >= 15  # the walk found the package's errors
    outside = [
        c.__qualname__
        for c in classes
        if not issubclass(c, MemlabError) and f"{c.__module__}.{c.__qualname__}" not in SIGNALS
    ]
    assert outside == []


def test_a_signal_is_no_exception_and_carries_a_memlab_error() -> None:
    signals = [c for c in _error_classes() if f"{c.__module__}.{c.__qualname__}" in SIGNALS]
    assert len(signals) == len(SIGNALS)  # each one still exists
    for signal in signals:
        assert not issubclass(signal, Exception)  # else the library would swallow it
        error = MemlabError("why")
        assert signal(error).error is error  # type: ignore[attr-defined]
