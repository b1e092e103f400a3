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
    from memlab.matching.base import FactMatcher as FactMatcher
    from memlab.matching.base import MatchResult as MatchResult
    from memlab.matching.calibration import Calibration as Calibration
    from memlab.matching.calibration import calibrate as calibrate
    from memlab.matching.calibration import load_pairs as load_pairs
    from memlab.matching.default_matcher import DefaultMatcher as DefaultMatcher
    from memlab.matching.embeddings import Embedder as Embedder
    from memlab.matching.embeddings import EmbeddingDuplicates as EmbeddingDuplicates
    from memlab.matching.embeddings import EmbeddingsUnavailableError as EmbeddingsUnavailableError
    from memlab.matching.embeddings import WordLlamaEmbedder as WordLlamaEmbedder
    from memlab.matching.judge import LLMJudgeMatcher as LLMJudgeMatcher
    from memlab.matching.matcher_audit import AuditSheet as AuditSheet
    from memlab.matching.matcher_audit import judge_sheet as judge_sheet
    from memlab.matching.matcher_audit import read_sheet as read_sheet
    from memlab.matching.matchers import MatcherPlugin as MatcherPlugin
    from memlab.matching.matchers import resolve_matcher as resolve_matcher
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
