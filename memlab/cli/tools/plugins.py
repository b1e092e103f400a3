"""``memlab plugins``: every registry's entries and who registered them (memlab or a plugin)."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from memlab import plugins

__all__ = ["COMMANDS", "register"]

COMMANDS: dict[str, str] = {
    "plugins": "list the backends, matchers, metrics, ... memlab knows and who registered them",
}
"""The commands this module adds, with their line in `memlab --help`."""

# The modules that declare the registries (see memlab.plugins); imported to list them all.
_DECLARING_MODULES = (
    "memlab.backends.registry",
    "memlab.backends.scripted",
    "memlab.core.jsondoc.merge",
    "memlab.core.jsondoc.parsing",
    "memlab.core.prompts",
    "memlab.qa.qa_prompts",
    "memlab.core.tiered_prompts",
    "memlab.datasets.registry",
    "memlab.memory.designs",
    "memlab.memory.policies",
    "memlab.qa.conditions",
    "memlab.matching.matchers",
    "memlab.matching.judge",
    "memlab.simulation.profile",
    "memlab.scoring.metric_specs",
    "memlab.runs.views",
)


def register(subparsers: Any) -> None:
    """Add the ``plugins`` command."""
    p = subparsers.add_parser(
        "plugins",
        help=COMMANDS["plugins"],
        description="List every registry (backends, scripts, merge strategies, parse presets, "
        "prompts, memory designs, injection policies, QA conditions, datasets, matchers, judge "
        "prompts, simulated-model profiles, metrics, run views, ...) with its entries; an entry "
        "an installed plugin registered names the plugin. Plugins are "
        "packages with entry points in the 'memlab.plugins' group (see docs/architecture.md). "
        "A plugin that failed to load and each registration refused (a bad name, a wrong "
        "type, a built-in's name) are listed last, one line each, and the exit code is 1.",
        epilog="examples:\n  memlab plugins\n  memlab plugins backend",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("kind", nargs="?", help="list only this kind (e.g. backend, metric)")
    p.set_defaults(func=_list)


def _list(args: argparse.Namespace) -> int:
    for module in _DECLARING_MODULES:
        importlib.import_module(module)
    found = plugins.registries()
    if args.kind is not None and args.kind not in found:
        raise plugins.PluginError(
            f"no registry of {args.kind!r} entries; kinds: {', '.join(found)}"
        )
    for kind, registry in found.items():
        if args.kind is not None and kind != args.kind:
            continue
        print(f"{kind} ({registry.what}):")
        for name, entry in registry.items():
            origin = registry.origin(name)
            about = getattr(entry, "description", None) or getattr(entry, "title", None)
            line = f"  {name:<24} {about}" if isinstance(about, str) else f"  {name}"
            print(line + ("" if origin == "memlab" else f"  [{origin}]"))
    problems = plugins.plugin_warnings()
    for problem in problems:  # each also logged as a warning, where it happened
        print(problem)
    return 1 if problems else 0
