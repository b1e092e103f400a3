"""Near-duplicate facts by sentence embeddings (optional; ``pip install 'memlab[embeddings]'``).

The lexical near-duplicate measure (:func:`memlab.matching.base.count_duplicates`) misses
paraphrases that share few words ("User is allergic to peanuts" / "User has a peanut
allergy"). :class:`EmbeddingDuplicates` counts a stored fact as a duplicate when the cosine
similarity of its embedding to an earlier fact's is at least ``threshold``.

Any object with an ``embed(texts) -> array (n, dim)`` method and a ``name`` is an
:class:`Embedder`. The built-in :class:`WordLlamaEmbedder` uses the model that ships inside the
``wordllama`` package (no download, about 0.5 s to load, microseconds per fact on a CPU). It
averages word vectors, so it ignores word order and negation: "likes spicy food" and
"dislikes spicy food" score about 0.9. Treat its counts as *possible* duplicates. With the
default threshold 0.8, paraphrases scored 0.83 to 0.98 and unrelated facts at most 0.5 on a
small hand-made set; see ``tests/test_embeddings.py``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from memlab.backends.remote.embeddings import EmbeddingsUnavailableError, WordLlamaEmbedder

__all__ = [
    "Embedder",
    "EmbeddingDuplicates",
    "EmbeddingsUnavailableError",
    "WordLlamaEmbedder",
]

logger = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.8


class Embedder(Protocol):
    """Turns texts into vectors; rows of the result correspond to ``texts``."""

    name: str

    def embed(self, texts: Sequence[str]) -> Any:
        """Return an array-like of shape ``(len(texts), dim)``."""
        ...


@dataclass
class EmbeddingDuplicates:
    """Counts stored facts that nearly repeat an earlier one, by embedding cosine similarity.

    Vectors are cached per text, so scoring every session snapshot of a run embeds each
    distinct fact once.

    Attributes:
        embedder: Any :class:`Embedder`.
        threshold: Cosine similarity from which two facts count as duplicates.
    """

    embedder: Embedder
    threshold: float = DEFAULT_THRESHOLD
    _vectors: dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        if not -1.0 <= self.threshold <= 1.0:
            raise ValueError(
                f"threshold must be a cosine similarity in [-1, 1], got {self.threshold}"
            )

    @property
    def name(self) -> str:
        """The embedder's name and the threshold, for reports."""
        return f"{self.embedder.name} >= {self.threshold:g}"

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length vectors of ``texts`` (rows), embedding only texts not seen before."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
            if missing:
                embedded = np.asarray(self.embedder.embed(missing), dtype=np.float64)
                if embedded.ndim != 2 or embedded.shape[0] != len(missing):
                    raise ValueError(
                        f"embedder {self.embedder.name!r} returned shape {embedded.shape} "
                        f"for {len(missing)} texts; expected ({len(missing)}, dim)"
                    )
                # An empty text can come back as NaN; a zero vector matches nothing instead.
                embedded = np.nan_to_num(embedded, nan=0.0, posinf=0.0, neginf=0.0)
                norms = np.linalg.norm(embedded, axis=1, keepdims=True)
                embedded = embedded / np.where(norms == 0, 1.0, norms)
                self._vectors.update(zip(missing, embedded, strict=True))
            if not texts:
                return np.zeros((0, 0))
            return np.stack([self._vectors[t] for t in texts])

    def duplicate_flags(self, contents: Sequence[str]) -> list[bool]:
        """For each fact, whether an earlier fact in ``contents`` is this close to it."""
        if len(contents) < 2:
            return [False] * len(contents)
        vectors = self.vectors(contents)
        similarity = vectors @ vectors.T
        # Row i looks at facts 0..i-1 only: the first of a pair is kept, later ones count.
        earlier = (similarity >= self.threshold) & np.tri(len(contents), k=-1, dtype=bool)
        # A repeated text is a duplicate whatever its vector (as in the lexical levels).
        seen: set[str] = set()
        flags = []
        for text, row in zip(contents, earlier, strict=True):
            flags.append(text in seen or bool(row.any()))
            seen.add(text)
        return flags

    def count(self, contents: Sequence[str]) -> int:
        """How many facts nearly repeat an earlier one."""
        return sum(self.duplicate_flags(contents))

    def pairs(self, contents: Sequence[str]) -> list[tuple[int, int, float]]:
        """Every pair ``(i, j, similarity)`` with ``i < j`` at or above the threshold."""
        if len(contents) < 2:
            return []
        vectors = self.vectors(contents)
        similarity = vectors @ vectors.T
        rows, cols = np.nonzero(np.triu(similarity >= self.threshold, k=1))
        return [(int(i), int(j), float(similarity[i, j])) for i, j in zip(rows, cols, strict=True)]
