"""Injection policies by name: the registry of a lane's ``injection_policy`` setting.

A policy decides which stored facts reach the agent first under the injection budget: it
turns the facts on offer and the query (the next session's first human message, or the
question) into a ranking (:data:`~memlab.core.pipeline.injection.FactRank`). Built-ins:

- ``confidence``: highest confidence first (the pipeline's own order; the default);
- ``recency``: newest ``createdAt`` first;
- ``relevance``: most relevant first to the query, by the lexical
  :func:`memlab.core.jsondoc.similarity.relevance_score`;
- ``relevance_embeddings``: the same by cosine similarity of word embeddings.

Ties keep the confidence order. A policy that ranks by embeddings declares ``embeds``; the
caller passes the embedder in (:func:`memlab.scoring.qa.injection_audit.policy_embedder` builds
the bundled one), so this module needs no embedding library. A plugin adds a policy with
``INJECTION_POLICIES.register("name", InjectionPolicy(...))`` (:mod:`memlab.plugins`); grids
then name it in ``injection_policy``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from memlab import plugins
from memlab.core.jsondoc.document import parse_utc
from memlab.core.jsondoc.similarity import relevance_score
from memlab.core.pipeline.injection import FactRank, by_confidence

__all__ = [
    "DEFAULT_POLICY",
    "INJECTION_POLICIES",
    "InjectionPolicy",
    "TextEmbedder",
    "UnknownPolicyError",
    "fact_content",
    "injection_policy",
]

DEFAULT_POLICY = "confidence"
"""The policy of a lane that names none: the pipeline's own order."""


class TextEmbedder(Protocol):
    """What a policy that ``embeds`` is given: a ``name`` and ``embed(texts)`` returning an
    array of shape (n, dim) of unit vectors (:class:`memlab.matching.embeddings.Embedder`)."""

    name: str

    def embed(self, texts: Sequence[str]) -> Any:
        """The vectors of ``texts``, one row each."""


Facts = Sequence[Mapping[str, Any]]
Rank = Callable[[Facts, str, "TextEmbedder | None"], FactRank]
"""``rank(facts, query, embedder) -> FactRank``: a policy's ranking of the facts on offer."""


@dataclass(frozen=True)
class InjectionPolicy:
    """One injection policy, registered by name (see the module docstring).

    Attributes:
        description: One line for listings (``memlab plugins``).
        rank: ``rank(facts, query, embedder)``: the ranking of ``facts`` for ``query``
            (higher first); ``embedder`` is ``None`` unless the policy ``embeds``.
        embeds: It ranks by text embeddings: the caller passes an embedder, and the
            embedder's name enters the lanes' identity.
    """

    description: str
    rank: Rank
    embeds: bool = False


class UnknownPolicyError(plugins.PluginError, ValueError):
    """An ``injection_policy`` setting names no registered policy."""


def _unknown(name: str, known: Sequence[str]) -> UnknownPolicyError:
    return UnknownPolicyError(
        f"unknown injection policy {name!r}; known policies: {', '.join(known)} (or register "
        "one with INJECTION_POLICIES.register in a memlab.plugins entry point)"
        + plugins.failure_hint()
    )


def injection_policy(name: str) -> InjectionPolicy:
    """The policy called ``name``.

    Raises:
        UnknownPolicyError: No policy has that name (the message lists the known ones).
    """
    return INJECTION_POLICIES.lookup(name)


def fact_content(fact: Mapping[str, Any]) -> str:
    """A fact's ``content`` ("" when it is missing or not a string)."""
    content = fact.get("content")
    return content if isinstance(content, str) else ""


def _created(fact: Mapping[str, Any]) -> float:
    moment = parse_utc(fact.get("createdAt"))
    return moment.timestamp() if moment is not None else float("-inf")


def _by_confidence(facts: Facts, query: str, embedder: TextEmbedder | None) -> FactRank:
    return by_confidence


def _by_recency(facts: Facts, query: str, embedder: TextEmbedder | None) -> FactRank:
    return _created


def _by_relevance(facts: Facts, query: str, embedder: TextEmbedder | None) -> FactRank:
    return lambda fact: relevance_score(fact_content(fact), query)


def _by_embeddings(facts: Facts, query: str, embedder: TextEmbedder | None) -> FactRank:
    if embedder is None:
        raise ValueError("the relevance_embeddings policy needs an embedder")
    texts = [fact_content(f) for f in facts]
    vectors = np.asarray(embedder.embed([query, *texts]), dtype=float)
    scores = dict(zip(texts, (vectors[1:] @ vectors[0]).tolist(), strict=True))
    return lambda fact: float(scores.get(fact_content(fact), 0.0))


INJECTION_POLICIES: plugins.Registry[InjectionPolicy] = plugins.declare(
    "injection_policy",
    "injection policy",
    unknown=_unknown,
    entry_type=InjectionPolicy,
    builtins={
        DEFAULT_POLICY: InjectionPolicy(
            "highest confidence first (the pipeline's own order)", _by_confidence
        ),
        "recency": InjectionPolicy("newest createdAt first", _by_recency),
        "relevance": InjectionPolicy(
            "most relevant to the query first (lexical relevance)", _by_relevance
        ),
        "relevance_embeddings": InjectionPolicy(
            "most relevant to the query first (word embeddings; needs memlab[embeddings])",
            _by_embeddings,
            embeds=True,
        ),
    },
)
"""Every injection policy by the name a lane's ``injection_policy`` setting gives."""
