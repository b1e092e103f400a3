"""The matcher registry: every built-in fact matcher by name, and the default.

Names (``memlab matcher calibrate --matcher NAME``, ``memlab rescore --matcher NAME``):

- ``default``: :class:`~memlab.matching.default_matcher.DefaultMatcher` with the bundled word
  embeddings when the ``embeddings`` extra is installed (``default-lexical`` otherwise);
- ``default-lexical``: the same without embeddings;
- ``lexical``: :class:`~memlab.matching.base.LexicalMatcher`, memlab's first matcher;
- ``embeddings``: :class:`~memlab.matching.default_matcher.EmbeddingMatcher`, the embeddings alone;
- ``judge:<backend spec>``: :class:`~memlab.matching.judge.LLMJudgeMatcher` with the lenient and
  strict prompts, e.g. ``judge:openai:gpt-4o-mini``.

Plugins add matchers to :data:`MATCHERS` (see :mod:`memlab.plugins`). Nothing here is a
global that the evaluation reads: every call builds a new matcher.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memlab import plugins
from memlab.errors import MemlabError

if TYPE_CHECKING:
    from memlab.core.pipeline.llm import Backend
    from memlab.matching.base import FactMatcher
    from memlab.matching.default_matcher import DefaultMatcher

# The matchers' modules (numpy, the word lists) load when a matcher is built: help texts and
# `memlab matcher list` read the registry only.

__all__ = [
    "MATCHERS",
    "BackendFactory",
    "MatcherError",
    "MatcherPlugin",
    "default_matcher",
    "matcher_help",
    "resolve_matcher",
]

BackendFactory = Callable[[str], "Backend"]
"""Builds a backend from its spec (e.g. ``"openai:gpt-4o-mini"``)."""


class MatcherError(MemlabError, ValueError):
    """A matcher name that does not resolve."""


def default_matcher() -> DefaultMatcher:
    """The matcher runs, reports and rescoring use unless told otherwise.

    :class:`~memlab.matching.default_matcher.DefaultMatcher` with the bundled word embeddings
    when ``memlab[embeddings]`` is installed; its ``name`` says which (``default`` or
    ``default-lexical``).
    """
    from memlab.matching.default_matcher import DefaultMatcher, optional_embedder

    return DefaultMatcher(embedder=optional_embedder())


def _judge(argument: str, backend_factory: BackendFactory | None) -> FactMatcher:
    if not argument:
        raise MatcherError(
            "the judge matcher needs a backend: judge:<backend spec>, e.g. "
            "judge:openai:gpt-4o-mini or judge:local:smollm2"
        )
    if backend_factory is None:
        from memlab.backends.registry import resolve_backend

        backend_factory = resolve_backend
    from memlab.matching.judge import LLMJudgeMatcher

    return LLMJudgeMatcher(backend_factory(argument))


def _default_lexical(_arg: str, _bf: BackendFactory | None) -> FactMatcher:
    from memlab.matching.default_matcher import DefaultMatcher

    return DefaultMatcher()


def _lexical(_arg: str, _bf: BackendFactory | None) -> FactMatcher:
    from memlab.matching.base import LexicalMatcher

    return LexicalMatcher()


def _embeddings(_arg: str, _bf: BackendFactory | None) -> FactMatcher:
    from memlab.matching.default_matcher import EmbeddingMatcher
    from memlab.matching.embeddings import WordLlamaEmbedder

    return EmbeddingMatcher(WordLlamaEmbedder())


@dataclass(frozen=True)
class MatcherPlugin:
    """A matcher by name: how to build it and what it is.

    Attributes:
        factory: ``factory(argument, backend_factory) -> FactMatcher``; ``argument`` is the
            text after ``NAME:`` ("" when the spec has none).
        description: One line for help texts and ``memlab matcher list``.
        argument: What follows ``NAME:`` (``"BACKEND"`` for the judge); "" when the matcher
            takes no argument.
    """

    factory: Callable[[str, BackendFactory | None], FactMatcher]
    description: str
    argument: str = ""


def _unknown(name: str, known: Sequence[str]) -> MatcherError:
    usages = ", ".join(matcher_help())
    return MatcherError(f"unknown matcher {name!r}; known matchers: {usages}")


MATCHERS: plugins.Registry[MatcherPlugin] = plugins.declare(
    "matcher",
    "matcher",
    unknown=_unknown,
    entry_type=MatcherPlugin,
    builtins={
        "default": MatcherPlugin(
            lambda _arg, _bf: default_matcher(),
            "claims apart from reasons, word forms, polarity/goal/value vetoes, embeddings",
        ),
        "default-lexical": MatcherPlugin(
            _default_lexical, "the default matcher without word embeddings"
        ),
        "lexical": MatcherPlugin(
            _lexical, "gold-token coverage >= 0.6 (memlab's first matcher, for comparison)"
        ),
        "embeddings": MatcherPlugin(
            _embeddings, "cosine similarity of the bundled word embeddings alone"
        ),
        "judge": MatcherPlugin(
            _judge, "an LLM asked under a lenient and a strict prompt (costs calls)", "BACKEND"
        ),
    },
)
"""Every matcher by name, built-ins and plugins (``MATCHERS.register(name, MatcherPlugin())``)."""


def matcher_help(*, plugins: bool = True) -> dict[str, str]:
    """How to name each matcher (``judge:BACKEND``) -> what it is, for help texts.

    Args:
        plugins: Also the plugins' matchers (loading the plugins); without, memlab's own.
    """
    entries = MATCHERS.items() if plugins else MATCHERS.builtins().items()
    return {
        f"{name}:{plugin.argument}" if plugin.argument else name: plugin.description
        for name, plugin in entries
    }


def resolve_matcher(spec: str, *, backend_factory: BackendFactory | None = None) -> FactMatcher:
    """Build the matcher named ``spec`` (``name`` or ``name:argument``).

    Args:
        spec: A name from :data:`MATCHERS`, e.g. ``"default"`` or ``"judge:openai:gpt-4o"``.
        backend_factory: Builds the judge's backend from its spec (default: the backend
            registry). Pass one that wraps a ``CachedBackend`` to cache the verdicts.

    Raises:
        MatcherError: Unknown name (the message lists the known ones).
        EmbeddingsUnavailableError: ``embeddings`` without the optional extra.
    """
    name, argument = plugins.split_spec(spec)
    plugin = MATCHERS.lookup(name)
    if argument and not plugin.argument:
        raise _unknown(spec, list(MATCHERS))
    return plugin.factory(argument, backend_factory)
