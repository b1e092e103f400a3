"""The memory-QA options ``memlab qa`` and ``memlab run --qa`` share, and the QA settings
they make: defined once here (the grid's ``qa:`` key is :class:`memlab.grids.qa_spec.QASpec`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlab.cli import _args

if TYPE_CHECKING:
    from memlab.grids.qa_spec import QASpec
    from memlab.qa.qa_prompts import AnswerPrompt, JudgePrompt

__all__ = ["add_qa_options", "given_qa_options", "qa_spec"]

_OPTIONS = {
    "answer_backend": "answer_backend",
    "answer_prompt": "answer_prompt",
    "judge_backend": "judge_backend",
    "answer_max_tokens": "max_tokens",
    "judge_max_tokens": "judge_max_tokens",
}
"""Option destination -> QASpec field, for options that replace a setting."""
_LISTS = {"judges": "judges", "conditions": "conditions"}
"""Comma-separated options -> QASpec field."""
_SOURCES = ("answer_prompts", "judge_prompts")


def add_qa_options(
    parser: argparse.ArgumentParser,
    *,
    max_tokens_flags: Sequence[str],
    answer_backend_help: str = "backend that answers",
) -> None:
    """Add the QA settings' options; ``max_tokens_flags`` name the answers' token limit (a
    command with its own ``--max-tokens`` gives ``--answer-max-tokens`` alone)."""
    from memlab.qa.conditions import CONDITIONS

    parser.add_argument("--answer-backend", metavar="SPEC", help=answer_backend_help)
    parser.add_argument(
        "--answer-prompt",
        metavar="NAME|FILE",
        help="answer prompt: a name, or a prompt file defining one (default: default)",
    )
    parser.add_argument(
        "--judges",
        metavar="NAMES",
        help="comma-separated judge prompts, each a name or a prompt file defining one "
        "(default: strict,lenient)",
    )
    for kind, option in (("answer", "--answer-prompt"), ("judge", "--judges")):
        parser.add_argument(
            f"--{kind}-prompts",
            nargs="+",
            default=[],
            metavar="PATH",
            help=f"{kind} prompt files or directories whose prompts {option} can name",
        )
    parser.add_argument("--judge-backend", metavar="SPEC", help="backend of the judges")
    parser.add_argument(
        "--conditions",
        metavar="NAMES",
        help=f"comma-separated conditions (default: all): {', '.join(CONDITIONS)}",
    )
    parser.add_argument(
        *max_tokens_flags,
        dest="answer_max_tokens",
        type=_args.token_limit,
        metavar="N",
        help="longest answer, in tokens (default: 64)",
    )
    parser.add_argument(
        "--judge-max-tokens",
        type=_args.token_limit,
        metavar="N",
        help="longest judge reply, in tokens (default: 32)",
    )


def given_qa_options(args: argparse.Namespace) -> list[str]:
    """The QA options set on the command line, as flags (e.g. ``--judges``)."""
    given = [name for name in (*_OPTIONS, *_LISTS) if getattr(args, name, None) is not None]
    given += [name for name in _SOURCES if getattr(args, name, None)]
    return [f"--{name.replace('_', '-')}" for name in given]


def qa_spec(
    args: argparse.Namespace,
    grid_spec: QASpec | None,
    grid_dir: Path,
    *,
    default_backend: str | None = None,
) -> QASpec:
    """The QA settings: ``grid_spec`` (a grid's ``qa:`` key, its prompt files relative to
    ``grid_dir``) with the options given replacing its fields; ``default_backend`` answers
    when neither names an answer backend."""
    from pydantic import ValidationError

    from memlab.core.prompts import looks_like_path
    from memlab.grids.qa_spec import QAError, QASpec
    from memlab.qa.qa_prompts import AnswerPrompt, JudgePrompt

    settings: dict[str, Any] = grid_spec.model_dump() if grid_spec is not None else {}
    # The grid's prompt files are relative to its folder; the options' to the working one.
    for key in _SOURCES:
        settings[key] = [str(grid_dir / path) for path in settings.get(key, [])]
        settings[key] += [str(Path(path).absolute()) for path in getattr(args, key)]
    for option, key in _OPTIONS.items():
        if getattr(args, option) is not None:
            settings[key] = getattr(args, option)
    for option, key in _LISTS.items():
        text = getattr(args, option)
        if text is not None:
            settings[key] = [part.strip() for part in text.split(",") if part.strip()]
    if "answer_backend" not in settings and default_backend is not None:
        settings["answer_backend"] = default_backend
    # A prompt given as a file: the file becomes a prompt source, its one prompt the choice.
    if looks_like_path(settings.get("answer_prompt", "")):
        settings["answer_prompt"] = _prompt_file(settings, "answer_prompts", AnswerPrompt)
    settings["judges"] = [
        _prompt_file(settings, "judge_prompts", JudgePrompt, n) if looks_like_path(n) else n
        for n in settings.get("judges", ["strict", "lenient"])
    ]
    if "answer_backend" not in settings:
        raise QAError(
            f"{getattr(args, 'run', 'the run')}: no QA settings: the run's grid has no qa: "
            "key; give --answer-backend SPEC (e.g. local:smollm2)"
        )
    try:
        return QASpec.model_validate(settings)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise QAError(f"qa setting {where}: {first['msg']}") from None


def _prompt_file(
    settings: dict[str, Any],
    key: str,
    kind: type[AnswerPrompt] | type[JudgePrompt],
    path: str | None = None,
) -> str:
    """Add the prompt file ``path`` (default: the answer prompt setting) to the ``key`` sources
    and return the name of the one prompt it defines."""
    from memlab.core.prompt_template import PromptError
    from memlab.core.prompts import TemplateRegistry
    from memlab.grids.qa_spec import QAError

    path = str(Path(path or settings["answer_prompt"]).absolute())
    try:
        variants = TemplateRegistry(kind).load_file(path)
    except PromptError as exc:
        raise QAError(str(exc)) from None
    if len(variants) != 1:
        names = ", ".join(v.name for v in variants)
        raise QAError(
            f"{path}: defines {len(variants)} prompts ({names}); add it with "
            f"--{key.replace('_', '-')} and name one of them"
        )
    settings[key] = [*settings.get(key, []), path]
    return variants[0].name
