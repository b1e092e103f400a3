"""The matcher registry: every built-in fact matcher by name, and the default.

Names (``memlab matcher calibrate --matcher NAME``, ``memlab rescore --matcher NAME``):

- ``default``: :class:`~memlab.eval.default_matcher.DefaultMatcher` with the bundled word
  embeddings when the ``embeddings`` extra is installed (``default-lexical`` otherwise);
- ``default-lexical``: the same without embeddings;
- ``lexical``: :class:`~memlab.eval.matching.LexicalMatcher`, memlab's first matcher;
- ``embeddings``: :class:`~memlab.eval.default_matcher.EmbeddingMatcher`, the embeddings alone;
- ``judge:<backend spec>``: :class:`~memlab.eval.judge.LLMJudgeMatcher` with the lenient and
  strict prompts, e.g. ``judge:openai:gpt-4o-mini``.

Nothing here is a global that the evaluation reads: every call builds a new matcher.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from memlab.backends.base import Backend
from memlab.errors import MemlabError
from memlab.eval.default_matcher import DefaultMatcher, EmbeddingMatcher, optional_embedder
from memlab.eval.embeddings import WordLlamaEmbedder
from memlab.eval.judge import LLMJudgeMatcher
from memlab.eval.matching import FactMatcher, LexicalMatcher

__all__ = ["MATCHERS", "BackendFactory", "MatcherError", "default_matcher", "resolve_matcher"]

BackendFactory = Callable[[str], Backend]
"""Builds a backend from its spec (e.g. ``"openai:gpt-4o-mini"``)."""


class MatcherError(MemlabError, ValueError):
    """A matcher name that does not resolve."""


def default_matcher() -> DefaultMatcher:
    """The matcher runs, reports and rescoring use unless told otherwise.

    :class:`~memlab.eval.default_matcher.DefaultMatcher` with the bundled word embeddings
    when ``memlab[embeddings]`` is installed; its ``name`` says which (``default`` or
    ``default-lexical``).
    """
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
    return LLMJudgeMatcher(backend_factory(argument))


_FACTORIES: Mapping[str, Callable[[str, BackendFactory | None], FactMatcher]] = {
    "default": lambda _arg, _bf: default_matcher(),
    "default-lexical": lambda _arg, _bf: DefaultMatcher(),
    "lexical": lambda _arg, _bf: LexicalMatcher(),
    "embeddings": lambda _arg, _bf: EmbeddingMatcher(WordLlamaEmbedder()),
    "judge": _judge,
}

MATCHERS: Mapping[str, str] = {
    "default": "claims apart from reasons, word forms, polarity/goal/value vetoes, embeddings",
    "default-lexical": "the default matcher without word embeddings",
    "lexical": "gold-token coverage >= 0.6 (memlab's first matcher, for comparison)",
    "embeddings": "cosine similarity of the bundled word embeddings alone",
    "judge:BACKEND": "an LLM asked under a lenient and a strict prompt (costs calls)",
}
"""Matcher names and what they are, for help texts."""


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
    name, _, argument = spec.strip().partition(":")
    factory = _FACTORIES.get(name)
    if factory is None or (argument and name != "judge"):
        known = ", ".join(MATCHERS)
        raise MatcherError(f"unknown matcher {spec!r}; known matchers: {known}")
    return factory(argument, backend_factory)
