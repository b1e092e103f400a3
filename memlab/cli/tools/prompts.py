"""``memlab prompts``: list, show, diff and check prompt variants and prompt files."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memlab.cli import _args

if TYPE_CHECKING:
    from memlab.core.jsondoc.document import MemoryDocument
    from memlab.core.prompts import PromptRegistry

# The prompt machinery (pydantic models, tiktoken) is imported by the commands when they run,
# so `memlab --help` and argument errors stay fast.

__all__ = ["COMMANDS", "SAMPLE_CONVERSATION", "register", "sample_memory"]

COMMANDS: dict[str, str] = {
    "prompts": "list, show, diff and check prompt variants",
}
"""The commands this module adds, with their line in `memlab --help`."""

SAMPLE_CONVERSATION = (
    "User: I moved to Lisbon last month and started a job as a data engineer.\n\n"
    "Assistant: Congratulations! How are you finding Lisbon?\n\n"
    "User: Great, though I still can't stand the hills on my bike commute."
)
"""The conversation ``memlab prompts check`` renders a template with."""


def sample_memory() -> MemoryDocument:
    """A small memory document (two facts) that ``check`` renders a template with."""
    from memlab.core.jsondoc.document import create_empty_memory

    now = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
    memory = create_empty_memory(now)
    memory["facts"] = [
        {
            "id": "fact_0a1b2c3d",
            "content": "Works as a data engineer",
            "category": "context",
            "confidence": 0.9,
            "createdAt": "2025-01-06T09:00:00Z",
            "source": "sample",
        },
        {
            "id": "fact_4e5f6a7b",
            "content": "Commutes by bike",
            "category": "behavior",
            "confidence": 0.8,
            "createdAt": "2025-01-06T09:00:00Z",
            "source": "sample",
        },
    ]
    return memory


_EXAMPLES = {
    "": "memlab prompts check prompts/mine.txt\n  memlab prompts diff default prompts/mine.txt",
    "list": "memlab prompts list --prompts prompts/",
    "show": "memlab prompts show concise",
    "diff": "memlab prompts diff default prompts/mine.txt",
    "check": "memlab prompts check prompts/mine.txt --show\n"
    "  memlab prompts check prompts/mine.txt --bounds summary_chars=60,max_new_facts=3",
}


def _epilog(name: str) -> dict[str, Any]:
    return {
        "epilog": f"example:\n  {_EXAMPLES[name]}",
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


def register(subparsers: Any) -> None:
    """Add the ``prompts`` command group."""
    parser = subparsers.add_parser(
        "prompts",
        help=COMMANDS["prompts"],
        description="Prompt variants are templates with {current_memory} and {conversation}. "
        "NAME is a built-in variant (default, concise), a variant of a --prompts file, or a "
        "prompt file path.",
        **_epilog(""),
    )
    parser.set_defaults(func=lambda _args: _help(parser))
    sub = parser.add_subparsers(dest="prompts_command", metavar="SUBCOMMAND")
    listing = sub.add_parser(
        "list", help="list the known variants with size and content hash", **_epilog("list")
    )
    _sources(listing)
    listing.set_defaults(func=_list)
    show = sub.add_parser("show", help="print a variant's template", **_epilog("show"))
    show.add_argument("name", help="variant name or prompt file")
    _sources(show)
    show.set_defaults(func=_show)
    diff = sub.add_parser("diff", help="unified diff of two templates", **_epilog("diff"))
    diff.add_argument("a", help="variant name or prompt file")
    diff.add_argument("b", help="variant name or prompt file")
    _sources(diff)
    diff.set_defaults(func=_diff)
    check = sub.add_parser(
        "check",
        help="validate a prompt file and render it against a sample memory and conversation",
        **_epilog("check"),
    )
    check.add_argument("file", help="prompt file (.txt, .yaml, .json)")
    check.add_argument("--show", action="store_true", help="also print the rendered sample prompt")
    _args.add_bounds_options(check)
    check.set_defaults(func=_check)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _sources(parser: argparse.ArgumentParser) -> None:
    _args.add_prompts_option(parser, "also load these prompt files or directories")


def _registry(args: argparse.Namespace) -> PromptRegistry:
    from memlab.core.prompts import PromptRegistry

    registry = PromptRegistry()
    for path in args.prompts:
        registry.load_path(path)
    return registry


def _list(args: argparse.Namespace) -> int:
    registry = _registry(args)
    rows = [("name", "sha256", "chars", "source", "description")]
    for name in registry.names():
        variant = registry.get(name)
        rows.append(
            (
                name,
                variant.sha256[:8],
                str(len(variant.template)),
                variant.source,
                variant.description,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        padded = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
        print("  ".join([*padded, row[4]]).rstrip())
    return 0


def _show(args: argparse.Namespace) -> int:
    from memlab.core.prompts import resolve_prompt

    variant = resolve_prompt(args.name, _registry(args))
    print(variant.template, end="" if variant.template.endswith("\n") else "\n")
    return 0


def _diff(args: argparse.Namespace) -> int:
    from memlab.core.prompts import resolve_prompt, template_diff

    registry = _registry(args)
    a, b = resolve_prompt(args.a, registry), resolve_prompt(args.b, registry)
    text = template_diff(a, b)
    print(text or f"{a.name} and {b.name} have the same template ({a.sha256[:8]})", end="")
    return 0


def _check(args: argparse.Namespace) -> int:
    from memlab.core.pipeline.injection import get_token_counter
    from memlab.core.prompts import PromptRegistry

    loaded = PromptRegistry(builtins=False).load_path(args.file)
    counter = get_token_counter("tiktoken")
    for variant in loaded:
        rendered = variant.render(sample_memory(), SAMPLE_CONVERSATION)
        print(
            f"OK {variant.where}: prompt {variant.name!r} ({variant.sha256[:8]}), "
            f"{len(variant.template)} template chars; rendered with the sample memory and "
            f"conversation: {len(rendered)} chars, {counter.count(rendered)} tokens (cl100k_base)"
        )
        if args.show:
            print(rendered)
    print(_args.reply_bound_line(args.bounds, args.backend))
    return 0
