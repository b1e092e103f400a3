"""One definition per concept, read from the source with ``ast``.

- every registry (``plugins.declare`` or ``builtin_templates`` at module level) has a name no
  other module gives a registry, so ``from ... import NAME`` always means one thing;
- the simulated model's mark is written once (``memlab.backends.registry``), every table,
  chart and title gets it from there;
- no module imports another module's private (``_name``) name.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import memlab

PACKAGE = Path(memlab.__file__).resolve().parent
_REGISTRY_FACTORIES = {"declare", "builtin_templates"}


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return out


def _registry_names(tree: ast.Module) -> list[str]:
    names = []
    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if not isinstance(value, ast.Call):
            continue
        func = value.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called not in _REGISTRY_FACTORIES:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names += [t.id for t in targets if isinstance(t, ast.Name) and not t.id.startswith("_")]
    return names


def test_registry_names_are_unique() -> None:
    owners: dict[str, list[str]] = defaultdict(list)
    for module, tree in _modules().items():
        for name in _registry_names(tree):
            owners[name].append(module)
    assert len(owners) >= 10, "the scan finds the registries"
    assert {name: mods for name, mods in owners.items() if len(mods) > 1} == {}


def _strings(tree: ast.Module) -> list[str]:
    """The string constants of a module, docstrings left out."""
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_the_simulated_mark_is_built_in_one_place() -> None:
    builders = {
        module
        for module, tree in _modules().items()
        if any("[simulated]" in text for text in _strings(tree))
    }
    assert builders == {"memlab.backends.registry"}


def test_mark_simulated() -> None:
    from memlab.backends.registry import mark_simulated

    assert mark_simulated("max_facts=10", True) == "[simulated] max_facts=10"
    assert mark_simulated("[simulated] max_facts=10", True) == "[simulated] max_facts=10"
    assert mark_simulated("max_facts=10", False) == "max_facts=10"


def _private_imports(module: str, tree: ast.Module) -> list[str]:
    """``from X import _y`` of ``module`` where X is another memlab module (not a package's
    own private helper module: ``memlab._lazy`` and ``memlab.cli._args`` are modules, whose
    public names may be imported)."""
    package = module if _is_package(module) else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        source = node.module or ""
        if node.level:  # relative import
            base = package.split(".")
            source = ".".join(base[: len(base) - node.level + 1] + ([source] if source else []))
        if not source.startswith("memlab") or source == module:
            continue
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                if _is_module(f"{source}.{alias.name}"):
                    continue  # a private module imported from its package
                found.append(f"{module}: from {source} import {alias.name}")
    return found


def _is_package(module: str) -> bool:
    return (PACKAGE.parent / module.replace(".", "/") / "__init__.py").exists()


def _is_module(module: str) -> bool:
    path = PACKAGE.parent / module.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def test_no_private_name_is_imported_across_modules() -> None:
    found = [line for module, tree in _modules().items() for line in _private_imports(module, tree)]
    assert found == []


def test_the_qa_options_are_add_qas_keyword_arguments() -> None:
    """QAOptions is the one list of the QA step's settings: add_qa takes each field as a
    keyword argument with the same default, and sweep every one it forwards (its pool is
    smaller by default: replays hold a model each)."""
    import dataclasses
    import inspect

    from memlab.postrun.qa_step import QAOptions, add_qa
    from memlab.sweeps.driver import sweep

    # The spending limit and the rate limiters are shared by a sweep's replays and its QA
    # step: the options carry them as objects (spend, rates), the calls take their settings
    # (max_cost in dollars, rate_limit); the batched decoding likewise (local_batch).
    taken_as = {"spend": "max_cost", "rates": "rate_limit", "batch": "local_batch"}
    fields = {taken_as.get(f.name, f.name): f.default for f in dataclasses.fields(QAOptions)}
    add_qa_kwargs = {
        p.name: p.default
        for p in inspect.signature(add_qa).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert add_qa_kwargs == fields
    sweep_params = inspect.signature(sweep).parameters
    forwarded = {name: default for name, default in fields.items() if name != "prompts_dir"}
    assert {name: sweep_params[name].default for name in forwarded} == {
        **forwarded,
        "max_workers": 4,
    }
