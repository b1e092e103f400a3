"""Fact matching: deciding whether a stored fact states a gold fact, and how well that works.

Every recall, precision and retracted-held number rests on a matcher
(:class:`FactMatcher`). The built-ins are resolved by name through
:func:`resolve_matcher` (``default``, ``default-lexical``, ``lexical``, ``embeddings``,
``judge:<backend>``); :func:`calibrate` measures one against the labeled pairs of
``datasets/matching/pairs.jsonl``. Word embeddings (:class:`WordLlamaEmbedder`, the
``embeddings`` extra) also count paraphrased duplicates (:class:`EmbeddingDuplicates`).

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.matching.base import FactMatcher, LexicalMatcher, MatchResult
    from memlab.matching.calibration import Calibration, calibrate, load_pairs
    from memlab.matching.default_matcher import DefaultMatcher, EmbeddingMatcher
    from memlab.matching.embeddings import (
        Embedder,
        EmbeddingDuplicates,
        EmbeddingsUnavailableError,
        WordLlamaEmbedder,
    )
    from memlab.matching.judge import LLMJudgeMatcher
    from memlab.matching.matcher_audit import AuditSheet, judge_sheet, read_sheet
    from memlab.matching.matchers import MATCHERS, MatcherPlugin, default_matcher, resolve_matcher

_EXPORTS: dict[str, str] = {
    "FactMatcher": "memlab.matching.base",
    "LexicalMatcher": "memlab.matching.base",
    "MatchResult": "memlab.matching.base",
    "Calibration": "memlab.matching.calibration",
    "calibrate": "memlab.matching.calibration",
    "load_pairs": "memlab.matching.calibration",
    "DefaultMatcher": "memlab.matching.default_matcher",
    "EmbeddingMatcher": "memlab.matching.default_matcher",
    "Embedder": "memlab.matching.embeddings",
    "EmbeddingDuplicates": "memlab.matching.embeddings",
    "EmbeddingsUnavailableError": "memlab.matching.embeddings",
    "WordLlamaEmbedder": "memlab.matching.embeddings",
    "LLMJudgeMatcher": "memlab.matching.judge",
    "AuditSheet": "memlab.matching.matcher_audit",
    "judge_sheet": "memlab.matching.matcher_audit",
    "read_sheet": "memlab.matching.matcher_audit",
    "MATCHERS": "memlab.matching.matchers",
    "MatcherPlugin": "memlab.matching.matchers",
    "default_matcher": "memlab.matching.matchers",
    "resolve_matcher": "memlab.matching.matchers",
}

__all__ = [
    "MATCHERS",
    "AuditSheet",
    "Calibration",
    "DefaultMatcher",
    "Embedder",
    "EmbeddingDuplicates",
    "EmbeddingMatcher",
    "EmbeddingsUnavailableError",
    "FactMatcher",
    "LLMJudgeMatcher",
    "LexicalMatcher",
    "MatchResult",
    "MatcherPlugin",
    "WordLlamaEmbedder",
    "calibrate",
    "default_matcher",
    "judge_sheet",
    "load_pairs",
    "read_sheet",
    "resolve_matcher",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
