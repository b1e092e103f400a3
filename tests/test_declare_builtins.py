"""A registry declared with its built-ins (``declare(..., builtins=...)``) and one entry type."""

from __future__ import annotations

import pytest

from memlab import plugins
from memlab.memory.designs import MEMORY_DESIGNS
from memlab.memory.policies import INJECTION_POLICIES
from memlab.qa.conditions import CONDITIONS, QA_CONDITIONS


@pytest.fixture(autouse=True)
def _own_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    # Kinds declared here vanish after each test (memlab's own stay declared).
    monkeypatch.setattr(plugins, "_registries", dict(plugins.registries()))


def test_builtins_are_registered_in_order_as_memlab_s() -> None:
    made = plugins.declare(
        "test_colour", "colour", entry_type=str, builtins={"red": "#f00", "blue": "#00f"}
    )
    assert list(made.builtins()) == ["red", "blue"]
    assert made["blue"] == "#00f"
    assert made.origin("red") == "memlab"
    assert plugins.registry("test_colour") is made


def test_a_refused_builtin_declares_nothing() -> None:
    with pytest.raises(plugins.RegistrationError, match="an entry is a str, got int"):
        plugins.declare("test_size", "size", entry_type=str, builtins={"big": 3})
    with pytest.raises(plugins.PluginError, match="no registry of 'test_size'"):
        plugins.registry("test_size")
    # Nothing half-declared is left behind: the kind can be declared again, correctly.
    assert list(plugins.declare("test_size", "size", entry_type=str, builtins={"big": "3"})) == [
        "big"
    ]


def test_entry_type_checks_later_registrations_too() -> None:
    made = plugins.declare("test_shape", "shape", entry_type=(int, float))
    made.register("one", 1)
    made.register("half", 0.5)
    with pytest.raises(plugins.RegistrationError, match="an entry is a int or float, got str"):
        made.register("word", "x")


def test_check_and_entry_type_together_are_refused() -> None:
    with pytest.raises(TypeError, match="check or entry_type"):
        plugins.declare("test_both", "both", check=plugins.callable_entry, entry_type=str)


def test_memlab_s_registries_keep_their_builtins_in_order() -> None:
    # The names and their order as the docs list them (docs/memory-designs.md, memory QA).
    assert list(MEMORY_DESIGNS.builtins()) == ["deerflow", "tiered", "procedural"]
    assert list(INJECTION_POLICIES.builtins()) == [
        "confidence",
        "recency",
        "relevance",
        "relevance_embeddings",
    ]
    assert list(QA_CONDITIONS.builtins()) == list(CONDITIONS)
    assert CONDITIONS == ("memory", "none", "full_context", "gold_memory")
