"""Injection audit: what the next session's agent would receive from memory, per lane.

After each session the replay renders the memory the user returns to with the pipeline's
injection (:func:`memlab.core.pipeline.injection.render_injection`) under the settings the pipeline
reads (``MemoryConfig.injection_enabled``, ``max_injection_tokens``, ``token_counting``) and the
lane's injection policy, and records the tokens used, the facts injected and the facts the
budget dropped. Scoring then asks which active gold facts reach the agent
(``injected_gold_coverage``).

The policies (the order in which stored facts are offered to the budget: ``confidence``,
``recency``, ``relevance``, ``relevance_embeddings``, or one a plugin registers) are entries of
:data:`memlab.memory.policies.INJECTION_POLICIES`; this module gives a policy that ``embeds``
the bundled word embeddings (needs ``memlab[embeddings]``).

Ties keep the confidence order. A disabled injection gives the agent nothing: 0 tokens,
nothing injected, coverage 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from memlab.core.pipeline.config import MemoryConfig
from memlab.core.pipeline.injection import Injection, by_confidence, render_injection
from memlab.datasets.models import Session
from memlab.matching.embeddings import Embedder, WordLlamaEmbedder
from memlab.memory.design import Injector, Reader
from memlab.memory.policies import INJECTION_POLICIES, fact_content, injection_policy
from memlab.scoring.count_specs import count_columns

__all__ = [
    "INJECTION_COUNTS",
    "POLICIES",
    "audit_injection",
    "inject",
    "injection_counts",
    "next_query",
    "policy_embedder",
    "policy_identity",
    "policy_injector",
]

POLICIES: tuple[str, ...] = tuple(INJECTION_POLICIES.builtins())
"""The injection policies memlab ships, in the order reports list them (plugins may register
more: :data:`memlab.memory.policies.INJECTION_POLICIES`)."""


INJECTION_COUNTS = count_columns(by="injection")
"""Session-row counts of the audit, summed over an owner's sessions (declared in
:data:`memlab.scoring.count_specs.COUNT_SPECS`)."""


def policy_embedder(policy: str) -> Embedder | None:
    """The embedder a policy needs: the bundled word embeddings for one that ``embeds``,
    ``None`` for the others.

    Raises:
        UnknownPolicyError: No policy has that name.
        EmbeddingsUnavailableError: A policy that embeds without the embeddings extra.
    """
    return WordLlamaEmbedder() if injection_policy(policy).embeds else None


def policy_identity(policy: str) -> dict[str, Any]:
    """What a policy's audit depends on: its name, and the embedding model when it has one."""
    embedder = policy_embedder(policy)
    return {"name": policy, **({"embedder": embedder.name} if embedder is not None else {})}


def next_query(session: Session) -> str:
    """The first human message of ``session`` (what ``relevance`` ranks facts against)."""
    return next((m.text for m in session.messages if m.role == "human"), "")


def inject(
    memory: Mapping[str, Any],
    config: MemoryConfig,
    policy: str,
    query: str,
    embedder: Embedder | None = None,
    *,
    history_last: bool = False,
) -> Injection:
    """What an agent starting with ``query`` receives from ``memory`` under ``config`` and
    ``policy`` (an empty injection when the config disables injection); ``history_last``:
    the memory design's layout (see :func:`~memlab.core.pipeline.injection.render_injection`)."""
    if not config.injection_enabled:
        return Injection("", 0)
    raw = memory.get("facts")
    facts = [f for f in raw if isinstance(f, Mapping)] if isinstance(raw, list) else []
    # Ties of the other policies keep the pipeline's order: confidence, highest first.
    ordered = sorted(facts, key=by_confidence, reverse=True)
    return render_injection(
        {**memory, "facts": ordered},
        config.max_injection_tokens,
        token_counting=config.token_counting,
        rank=injection_policy(policy).rank(ordered, query, embedder),
        history_last=history_last,
    )


def policy_injector(
    config: MemoryConfig,
    policy: str,
    embedder: Embedder | None = None,
    *,
    history_last: bool = False,
    read: Reader | None = None,
) -> Injector:
    """:func:`inject` with the lane's settings fixed: ``(memory, query) -> Injection``, the
    read path memory QA renders a lane's memory through (the query is the question);
    ``read``: the memory design's read path around it
    (:attr:`memlab.memory.design.MemoryDesign.read`)."""

    def injector(memory: Mapping[str, Any], query: str) -> Injection:
        return inject(memory, config, policy, query, embedder, history_last=history_last)

    return injector if read is None else read(injector)


def audit_injection(
    memory: Mapping[str, Any],
    config: MemoryConfig,
    policy: str,
    query: str,
    embedder: Embedder | None = None,
    *,
    history_last: bool = False,
    read: Reader | None = None,
) -> dict[str, Any]:
    """What an agent starting with ``query`` receives from ``memory`` under ``config``
    (``history_last`` as for :func:`inject`, ``read`` as for :func:`policy_injector`).

    Returns a JSON-ready record: ``enabled``, ``policy``, ``tokens`` (of the injected text,
    counted with the config's counter), ``facts`` (facts offered), ``injected`` and
    ``dropped`` (fact ids, in ranked order).
    """
    raw = memory.get("facts")
    facts = [f for f in raw if isinstance(f, Mapping)] if isinstance(raw, list) else []
    record: dict[str, Any] = {"enabled": config.injection_enabled, "policy": policy}
    if not config.injection_enabled:
        return {**record, "tokens": 0, "facts": len(facts), "injected": [], "dropped": []}
    injector = policy_injector(config, policy, embedder, history_last=history_last, read=read)
    injection = injector(memory, query)
    return {
        **record,
        "tokens": injection.tokens,
        "facts": len(injection.injected) + len(injection.dropped),
        "injected": [f.get("id") for f in injection.injected],
        "dropped": [f.get("id") for f in injection.dropped],
    }


def injection_counts(
    audit: Mapping[str, Any] | None,
    snapshot: Mapping[str, Any],
    active: Mapping[str, str],
    covers: Callable[[str, str], bool],
) -> dict[str, int]:
    """Session-row counts of one audit (zeros when the session has none: the last one).

    ``gold_injected``: active gold facts (``active``: id -> text) stated by an injected fact;
    ``gold_injectable``: the active gold facts; ``injection_tokens``, ``injection_facts``
    (offered) and ``injection_dropped`` (left out by the budget).
    """
    if audit is None:
        return dict.fromkeys(INJECTION_COUNTS, 0)
    facts = [f for f in snapshot.get("facts", []) if isinstance(f, dict)]
    contents = {f.get("id"): fact_content(f) for f in facts}
    injected = [contents[i] for i in audit.get("injected", []) if i in contents]
    reached = sum(1 for gold in active.values() if any(covers(c, gold) for c in injected))
    return {
        "injections": 1,
        "injection_tokens": int(audit.get("tokens", 0)),
        "injection_facts": int(audit.get("facts", 0)),
        "injection_dropped": len(audit.get("dropped", [])),
        "gold_injected": reached,
        "gold_injectable": len(active),
    }
