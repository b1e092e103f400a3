"""Applying a validated LLM update to a memory document: pluggable merge strategies.

:class:`BaselineMerge` is the DeerFlow-compatible rule set. On a deep copy of the current
memory, in this order:

1. each of the six summary sections is replaced with ``{summary, updatedAt: now}`` only when
   ``shouldUpdate`` is ``true`` and ``summary`` is a non-empty string (whitespace-only summaries
   count as non-empty, as in DeerFlow);
2. facts whose id is listed in ``factsToRemove`` are removed (exact match; unknown ids are
   ignored and reported);
3. each new fact with ``confidence >= threshold`` is added unless its
   ``content.strip().casefold()`` equals that of a stored fact or of an earlier fact of the same
   batch;
4. if more than ``max_facts`` facts remain, they are stable-sorted by confidence (descending)
   and only the first ``max_facts`` are kept. The list is oldest-first before sorting, so ties
   keep the older fact.

The other strategies change step 3 (:class:`NearDuplicateMerge`) or step 4
(:class:`CategoryCapMerge`, :class:`TimeDecayMerge`). The update is expected to have passed
contract validation; a structurally invalid fact raises :class:`ValueError` naming it.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Protocol, TypedDict

from memlab import plugins
from memlab.core.jsondoc.contract import MemoryUpdateDict, NewFactDict, updated_sections
from memlab.core.jsondoc.document import (
    MemoryDocument,
    StoredFact,
    copy_document,
    normalize_fact_text,
    parse_utc,
    random_fact_ids,
    utc_iso,
    utc_now,
)
from memlab.core.jsondoc.similarity import NEAR_DUPLICATE_THRESHOLD, near_duplicate_score

__all__ = [
    "MERGE_STRATEGIES",
    "ApplyResult",
    "BaselineMerge",
    "CategoryCapMerge",
    "MergeRecord",
    "MergeStrategy",
    "NearDuplicateMerge",
    "TimeDecayMerge",
    "apply_updates",
    "get_merge_strategy",
]

_ID_ATTEMPTS = 1000


class MergeRecord(TypedDict):
    """One near-duplicate merge (:class:`NearDuplicateMerge`)."""

    keptId: str
    keptContent: str
    droppedContent: str
    similarity: float
    replaced: bool


@dataclass
class ApplyResult:
    """The new document plus what each step did.

    Fact entries in ``added`` are the stored fact dicts; a fact admitted in step 3 and then
    dropped by the cap appears in both ``added`` and ``evicted``.

    Attributes:
        memory: The new memory document (the input is never modified).
        added: Stored facts created from ``newFacts``.
        skipped_below_threshold: Proposed facts whose confidence was below the threshold.
        skipped_duplicate: Proposed facts whose normalised content was already stored.
        removed: Stored facts removed through ``factsToRemove``.
        unknown_removals: Ids in ``factsToRemove`` that matched no stored fact.
        evicted: Stored facts dropped by the cap.
        sections_updated: Replaced sections, e.g. ``"user.workContext"``.
        merged: Near-duplicate merges (strategies that merge; empty for the baseline).
        echoed: Proposed facts and summaries that echo the prompt template's own text
            (:mod:`memlab.core.jsondoc.echo`): a fact as proposed, with the ``id`` it was stored
            under when it was added; a summary as ``{"content": summary, "section":
            "user.workContext"}``. Set by the updater, which knows the prompt; the strategy merges
            them like any other text.
    """

    memory: MemoryDocument
    added: list[StoredFact] = field(default_factory=list)
    skipped_below_threshold: list[NewFactDict] = field(default_factory=list)
    skipped_duplicate: list[NewFactDict] = field(default_factory=list)
    removed: list[StoredFact] = field(default_factory=list)
    unknown_removals: list[str] = field(default_factory=list)
    evicted: list[StoredFact] = field(default_factory=list)
    sections_updated: list[str] = field(default_factory=list)
    merged: list[MergeRecord] = field(default_factory=list)
    echoed: list[dict[str, Any]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Return the length of every bookkeeping list, keyed by field name."""
        return {f.name: len(getattr(self, f.name)) for f in fields(self) if f.name != "memory"}

    def to_record(self) -> dict[str, Any]:
        """The bookkeeping in brief, JSON-ready: which facts each step touched.

        Stored facts as ``{id, content, confidence}``, proposals as ``{content, confidence}``,
        ``unknown_removals`` and ``merged`` as they are. Operation scoring
        (:mod:`memlab.scoring.operations`) replays memory changes from it.
        """

        def brief(
            facts: Sequence[Mapping[str, Any]], keys: tuple[str, ...]
        ) -> list[dict[str, Any]]:
            return [{k: f.get(k) for k in keys} for f in facts if _is_mapping(f)]

        stored = ("id", "content", "confidence")
        proposed = ("content", "confidence")
        return {
            "added": brief(self.added, stored),
            "removed": brief(self.removed, stored),
            "evicted": brief(self.evicted, stored),
            "skipped_below_threshold": brief(self.skipped_below_threshold, proposed),
            "skipped_duplicate": brief(self.skipped_duplicate, proposed),
            "unknown_removals": list(self.unknown_removals),
            "merged": [dict(m) for m in self.merged],
            "sections_updated": list(self.sections_updated),
            "echoed": [
                {k: e[k] for k in ("id", "content", "confidence", "section") if k in e}
                for e in self.echoed
                if _is_mapping(e)
            ],
        }


class MergeStrategy(Protocol):
    """A way of applying a validated update to a memory document."""

    name: str

    def apply(
        self,
        current_memory: MemoryDocument,
        update: MemoryUpdateDict,
        *,
        thread_id: str | None,
        threshold: float,
        max_facts: int,
        now: datetime,
        new_id: Callable[[], str],
    ) -> ApplyResult:
        """Return the new document and bookkeeping; never mutates the inputs."""
        ...


def _confidence(fact: Mapping[str, Any]) -> float:
    """A stored fact's confidence as a float (0 when missing or not a number)."""
    value = fact.get("confidence", 0)
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return 0.0
    return float(value)


def _is_mapping(value: object) -> bool:
    # Stored facts are dicts; the ABC check for other mappings is slow in these loops.
    return type(value) is dict or isinstance(value, Mapping)


def _content_key(fact: Mapping[str, Any]) -> str | None:
    content = fact.get("content")
    return normalize_fact_text(content) if isinstance(content, str) else None


def _content_keys(facts: list[StoredFact]) -> set[str]:
    return {k for f in facts if _is_mapping(f) and (k := _content_key(f)) is not None}


class BaselineMerge:
    """The DeerFlow-compatible merge (see the module docstring for the exact rules)."""

    name = "baseline"

    def params(self) -> dict[str, Any]:
        """Return the strategy's parameters (for reports)."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"

    def apply(
        self,
        current_memory: MemoryDocument,
        update: MemoryUpdateDict,
        *,
        thread_id: str | None,
        threshold: float,
        max_facts: int,
        now: datetime,
        new_id: Callable[[], str],
    ) -> ApplyResult:
        """Apply ``update`` to a deep copy of ``current_memory``.

        Raises:
            ValueError: Bad ``threshold``/``max_facts``, naive ``now``, an invalid proposed fact
                or removal id, or an id generator that keeps returning taken ids.
        """
        return self.apply_in_place(
            copy_document(current_memory),
            update,
            thread_id=thread_id,
            threshold=threshold,
            max_facts=max_facts,
            now=now,
            new_id=new_id,
        )

    def apply_in_place(
        self,
        memory: MemoryDocument,
        update: MemoryUpdateDict,
        *,
        thread_id: str | None,
        threshold: float,
        max_facts: int,
        now: datetime,
        new_id: Callable[[], str],
    ) -> ApplyResult:
        """Like :meth:`apply`, but changes ``memory`` itself (``result.memory is memory``).

        For a caller that owns a private copy already, such as the function a store's
        ``modify`` runs; after a ``ValueError`` the document may be half changed.
        """
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be within 0.0-1.0, got {threshold!r}")
        if isinstance(max_facts, bool) or not isinstance(max_facts, int) or max_facts < 1:
            raise ValueError(f"max_facts must be an integer >= 1, got {max_facts!r}")
        now_iso = utc_iso(now)
        update = copy_document(update)
        result = ApplyResult(memory=memory)
        self._apply_sections(memory, update, now_iso, result)
        facts = memory.setdefault("facts", [])
        if not isinstance(facts, list):
            raise ValueError(f"memory 'facts' must be a list, got {type(facts).__name__}")
        self._apply_removals(memory, update, result)
        self._apply_additions(memory, update, thread_id, threshold, now_iso, new_id, result)
        self._enforce_cap(memory, max_facts, now, result)
        return result

    # -- step 1 ------------------------------------------------------------------------------
    @staticmethod
    def _apply_sections(
        memory: MemoryDocument, update: MemoryUpdateDict, now_iso: str, result: ApplyResult
    ) -> None:
        for group, name, summary in updated_sections(update):
            target = memory.get(group)
            if not isinstance(target, dict):
                target = {}
                memory[group] = target  # type: ignore[literal-required]  # user|history
            target[name] = {"summary": summary, "updatedAt": now_iso}
            result.sections_updated.append(f"{group}.{name}")

    # -- step 2 ------------------------------------------------------------------------------
    @staticmethod
    def _apply_removals(
        memory: MemoryDocument, update: MemoryUpdateDict, result: ApplyResult
    ) -> None:
        ids = update.get("factsToRemove") or []
        if not isinstance(ids, list):
            raise ValueError(f"factsToRemove must be a list of fact ids, got {ids!r}")
        for index, given in enumerate(ids):
            if not isinstance(given, str):
                raise ValueError(f"factsToRemove/{index}: fact ids are strings, got {given!r}")
        if not ids:
            return
        wanted = set(ids)
        kept = []
        found: set[str] = set()
        for fact in memory["facts"]:
            fact_id = fact.get("id") if _is_mapping(fact) else None
            if isinstance(fact_id, str) and fact_id in wanted:
                result.removed.append(fact)
                found.add(fact_id)
            else:
                kept.append(fact)
        memory["facts"] = kept
        for fact_id in dict.fromkeys(ids):
            if fact_id not in found:
                result.unknown_removals.append(fact_id)

    # -- step 3 ------------------------------------------------------------------------------
    def _apply_additions(
        self,
        memory: MemoryDocument,
        update: MemoryUpdateDict,
        thread_id: str | None,
        threshold: float,
        now_iso: str,
        new_id: Callable[[], str],
        result: ApplyResult,
    ) -> None:
        proposals = update.get("newFacts") or []
        if not isinstance(proposals, list):
            raise ValueError(f"newFacts must be a list, got {type(proposals).__name__}")
        facts: list[StoredFact] = memory["facts"]
        keys = _content_keys(facts)
        taken_ids = {f.get("id") for f in facts if _is_mapping(f)}
        for index, proposal in enumerate(proposals):
            content, confidence = _check_proposal(index, proposal)
            if confidence < threshold:
                result.skipped_below_threshold.append(proposal)
                continue
            key = normalize_fact_text(content)
            if key in keys:
                result.skipped_duplicate.append(proposal)
                continue
            if self._merge_into_existing(facts, proposal, thread_id, result):
                keys = _content_keys(facts)
                continue
            entry = _stored_fact(proposal, _fresh_id(new_id, taken_ids), now_iso, thread_id)
            facts.append(entry)
            keys.add(key)
            taken_ids.add(entry["id"])
            result.added.append(entry)

    def _merge_into_existing(
        self,
        facts: list[StoredFact],
        proposal: NewFactDict,
        thread_id: str | None,
        result: ApplyResult,
    ) -> bool:
        """Hook for strategies that merge near-duplicates; True when ``proposal`` was absorbed."""
        return False

    # -- step 4 ------------------------------------------------------------------------------
    def _enforce_cap(
        self, memory: MemoryDocument, max_facts: int, now: datetime, result: ApplyResult
    ) -> None:
        facts = memory["facts"]
        if len(facts) <= max_facts:
            return
        ranked = sorted(facts, key=lambda f: self._rank(f, now), reverse=True)
        memory["facts"] = ranked[:max_facts]
        result.evicted.extend(ranked[max_facts:])

    def _rank(self, fact: Mapping[str, Any], now: datetime) -> float:
        """Eviction score: higher is kept first. The baseline ranks by confidence."""
        return _confidence(fact)


def _check_proposal(index: int, proposal: object) -> tuple[str, float]:
    where = f"newFacts/{index}"
    if not isinstance(proposal, Mapping):
        raise ValueError(f"{where}: a new fact must be an object, got {proposal!r}")
    content = proposal.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ValueError(f"{where}/content: must be a non-empty string, got {content!r}")
    confidence = proposal.get("confidence")
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not math.isfinite(confidence)
    ):
        raise ValueError(f"{where}/confidence: must be a number in 0-1, got {confidence!r}")
    return content, float(confidence)


def _stored_fact(
    proposal: NewFactDict, fact_id: str, now_iso: str, thread_id: str | None
) -> StoredFact:
    entry: StoredFact = {
        "id": fact_id,
        "content": str(proposal["content"]).strip(),
        "category": proposal.get("category", "context"),
        "confidence": proposal["confidence"],
        "createdAt": now_iso,
        "source": thread_id or "unknown",
    }
    source_error = proposal.get("sourceError")
    if isinstance(source_error, str) and source_error.strip():
        entry["sourceError"] = source_error.strip()
    return entry


def _fresh_id(new_id: Callable[[], str], taken: set[Any]) -> str:
    for _ in range(_ID_ATTEMPTS):
        candidate = new_id()
        if candidate not in taken:
            return candidate
    raise ValueError(f"fact id generator returned only taken ids in {_ID_ATTEMPTS} attempts")


class NearDuplicateMerge(BaselineMerge):
    """Baseline plus merging of near-duplicate facts.

    A new fact whose :func:`~memlab.core.jsondoc.similarity.near_duplicate_score` with a stored fact
    (or an earlier fact of the batch) is ``>= similarity`` (default
    :data:`~memlab.core.jsondoc.similarity.NEAR_DUPLICATE_THRESHOLD`, the threshold the duplicate
    metrics use) is not added. When its confidence is higher, the most similar
    stored fact takes its text, category, confidence, source and sourceError (keeping its id
    and ``createdAt``); otherwise the stored fact is kept as is. Each case is recorded in
    ``merged`` as ``{"keptId", "keptContent", "droppedContent", "similarity", "replaced"}``.
    """

    name = "near_duplicate"

    def __init__(self, similarity: float = NEAR_DUPLICATE_THRESHOLD) -> None:
        if not 0.0 < similarity <= 1.0:
            raise ValueError(f"similarity must be within (0, 1], got {similarity!r}")
        self.similarity = similarity

    def params(self) -> dict[str, Any]:
        return {"similarity": self.similarity}

    def _merge_into_existing(
        self,
        facts: list[StoredFact],
        proposal: NewFactDict,
        thread_id: str | None,
        result: ApplyResult,
    ) -> bool:
        new_content = str(proposal["content"]).strip()
        best: StoredFact | None = None
        best_score = -1.0
        for fact in facts:
            content = fact.get("content") if _is_mapping(fact) else None
            if not isinstance(content, str):
                continue
            score = near_duplicate_score(new_content, content)
            if score > best_score:
                best, best_score = fact, score
        if best is None or best_score < self.similarity:
            return False
        replaced = float(proposal["confidence"]) > _confidence(best)
        old_content = best.get("content")
        if replaced:
            best["content"] = new_content
            best["category"] = proposal.get("category", best.get("category", "context"))
            best["confidence"] = proposal["confidence"]
            best["source"] = thread_id or "unknown"
            best.pop("sourceError", None)
            source_error = proposal.get("sourceError")
            if isinstance(source_error, str) and source_error.strip():
                best["sourceError"] = source_error.strip()
        result.merged.append(
            {
                "keptId": best.get("id"),
                "keptContent": best.get("content"),
                "droppedContent": old_content if replaced else new_content,
                "similarity": best_score,
                "replaced": replaced,
            }
        )
        return True


class CategoryCapMerge(BaselineMerge):
    """Baseline, but each category keeps at most ``per_category`` facts before the global cap.

    Within an over-full category the highest-confidence facts are kept (ties keep the older);
    the surviving facts keep their order, then the baseline global cap applies.
    """

    name = "category_cap"

    def __init__(self, per_category: int = 20) -> None:
        if isinstance(per_category, bool) or not isinstance(per_category, int) or per_category < 1:
            raise ValueError(f"per_category must be an integer >= 1, got {per_category!r}")
        self.per_category = per_category

    def params(self) -> dict[str, Any]:
        return {"per_category": self.per_category}

    def _enforce_cap(
        self, memory: MemoryDocument, max_facts: int, now: datetime, result: ApplyResult
    ) -> None:
        by_category: dict[str, list[int]] = {}
        for position, fact in enumerate(memory["facts"]):
            category = fact.get("category") if _is_mapping(fact) else None
            by_category.setdefault(str(category), []).append(position)
        dropped: set[int] = set()
        for positions in by_category.values():
            if len(positions) > self.per_category:
                ranked = sorted(
                    positions, key=lambda p: _confidence(memory["facts"][p]), reverse=True
                )
                dropped.update(ranked[self.per_category :])
        if dropped:
            facts = memory["facts"]
            result.evicted.extend(facts[p] for p in sorted(dropped))
            memory["facts"] = [f for p, f in enumerate(facts) if p not in dropped]
        super()._enforce_cap(memory, max_facts, now, result)


class TimeDecayMerge(BaselineMerge):
    """Baseline, but the cap ranks facts by ``confidence * 0.5 ** (age_days / half_life_days)``.

    Age is measured from the fact's ``createdAt`` to ``now`` (never negative); a fact without a
    parsable ``createdAt`` is treated as new. Stored confidences are not changed.
    """

    name = "time_decay"

    def __init__(self, half_life_days: float = 30.0) -> None:
        if not half_life_days > 0 or not math.isfinite(half_life_days):
            raise ValueError(f"half_life_days must be a positive number, got {half_life_days!r}")
        self.half_life_days = float(half_life_days)

    def params(self) -> dict[str, Any]:
        return {"half_life_days": self.half_life_days}

    def _rank(self, fact: Mapping[str, Any], now: datetime) -> float:
        created = parse_utc(fact.get("createdAt"))
        age_days = 0.0 if created is None else max(0.0, (now - created).total_seconds() / 86400)
        decay: float = 0.5 ** (age_days / self.half_life_days)
        return _confidence(fact) * decay


def _unknown_strategy(name: str, known: Sequence[str]) -> ValueError:
    return ValueError(
        f"unknown merge strategy {name!r}; known strategies: {', '.join(sorted(known))}"
        + plugins.failure_hint()
    )


MERGE_STRATEGIES: plugins.Registry[Callable[..., MergeStrategy]] = plugins.declare(
    "merge",
    "merge strategy",
    unknown=_unknown_strategy,
    check=plugins.callable_entry,
    builtins={
        strategy.name: strategy
        for strategy in (BaselineMerge, NearDuplicateMerge, CategoryCapMerge, TimeDecayMerge)
    },
)
"""Merge strategy factories by name (a lane's ``merge``; its ``merge_params`` are their
keyword arguments). Plugins add theirs with ``MERGE_STRATEGIES.register(name, factory)``."""


def get_merge_strategy(name: str, **params: Any) -> MergeStrategy:
    """Build the registered strategy ``name`` with ``params``.

    Raises:
        ValueError: Unknown name (the message lists the known ones) or bad parameters.
    """
    factory = MERGE_STRATEGIES.lookup(name)
    try:
        inspect.signature(factory).bind(**params)
    except TypeError as exc:
        raise ValueError(
            f"bad parameters for merge strategy {name!r}: {exc}; "
            f"accepted: {inspect.signature(factory)}"
        ) from None
    return factory(**params)


def apply_updates(
    current_memory: MemoryDocument,
    update: MemoryUpdateDict,
    *,
    thread_id: str | None = None,
    threshold: float = 0.7,
    max_facts: int = 100,
    now: datetime | None = None,
    new_id: Callable[[], str] | None = None,
    strategy: MergeStrategy | None = None,
) -> ApplyResult:
    """Apply ``update`` to ``current_memory`` with ``strategy`` (default: the baseline).

    ``now`` defaults to the current UTC time and ``new_id`` to random uuid4-based ids.
    """
    chosen = strategy if strategy is not None else BaselineMerge()
    return chosen.apply(
        current_memory,
        update,
        thread_id=thread_id,
        threshold=threshold,
        max_facts=max_facts,
        now=now if now is not None else utc_now(),
        new_id=new_id if new_id is not None else random_fact_ids(),
    )
