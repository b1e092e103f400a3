"""Text embeddings below the packages that use them: the word-embedding model bundled with
``wordllama`` (offline; ``pip install 'memlab[embeddings]'``), and an OpenAI-compatible
``/v1/embeddings`` endpoint through the response cache.

:class:`WordLlamaEmbedder` is what fact matching (:mod:`memlab.matching.embeddings`) and the
tiered memory's recall both load. :class:`CachedEndpointEmbedding` asks an
:class:`~memlab.backends.remote.openai_compat.OpenAICompatibleEmbeddings` endpoint for vectors and
keeps them in a lane's response cache as requests of their own kind, ``embeddings``
(:meth:`memlab.backends.caching.cache.CachedBackend.serve`): the entry's completion text is the
vectors as JSON, so a second replay asks the endpoint nothing and a read-only cache replays
offline. The API key never reaches an entry (the cache redacts every entry it writes).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from memlab.backends.caching.cache import CachedBackend
from memlab.backends.remote.openai_compat import OpenAICompatibleEmbeddings
from memlab.core.pipeline.llm import BackendError, Completion
from memlab.errors import MemlabError

__all__ = [
    "CachedEndpointEmbedding",
    "EmbeddingsUnavailableError",
    "WordLlamaEmbedder",
]

logger = logging.getLogger(__name__)


class EmbeddingsUnavailableError(MemlabError, RuntimeError):
    """The optional embedding model is not installed."""


class WordLlamaEmbedder:
    """Embeddings from the model bundled in the ``wordllama`` package (offline).

    Args:
        dim: Vector size, one the bundled model offers (64, 128 or 256).

    Raises:
        EmbeddingsUnavailableError: ``wordllama`` is not installed or its bundled files are
            missing.
    """

    _models: ClassVar[dict[int, Any]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.name = f"wordllama-l2_supercat-{dim}"
        self._model = self._load(dim)

    @classmethod
    def _load(cls, dim: int) -> Any:
        with cls._lock:
            if dim in cls._models:
                return cls._models[dim]
            try:
                wordllama = _import_wordllama()
            except ImportError as exc:
                raise EmbeddingsUnavailableError(
                    "near-duplicates by embeddings need the optional extra: "
                    "pip install 'memlab[embeddings]'"
                ) from exc
            package = Path(wordllama.__file__).parent
            try:
                # Files are looked up in the package itself; downloads stay off, so a missing
                # file is an error instead of a request to the network.
                model = wordllama.WordLlama.load(
                    trunc_dim=None if dim == 256 else dim,
                    cache_dir=package,
                    disable_download=True,
                )
            except (FileNotFoundError, ValueError) as exc:
                raise EmbeddingsUnavailableError(
                    f"cannot load the model bundled with wordllama from {package}: {exc}. "
                    "Reinstall it with pip install --force-reinstall 'memlab[embeddings]'"
                ) from exc
            logger.info("loaded the wordllama embedding model (dim %d) from %s", dim, package)
            cls._models[dim] = model
            return model

    def embed(self, texts: Sequence[str]) -> Any:
        """Return unit-length vectors, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with np.errstate(invalid="ignore", divide="ignore"):  # empty texts: 0/0 when normed
            return self._model.embed(list(texts), norm=True)


def _import_wordllama() -> Any:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import wordllama

    # wordllama calls logging.basicConfig(level=INFO) when imported; undo that so the
    # application's own logging setup stays as it was.
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    return wordllama


@dataclass(frozen=True)
class CachedEndpointEmbedding:
    """An ``embed(texts) -> array (n, dim)`` function backed by an embeddings endpoint,
    each request kept in ``cache`` (``None``: asked every time).

    Attributes:
        endpoint: The OpenAI-compatible embeddings endpoint.
        cache: The lane's response cache (its directory and mode), or ``None``.
    """

    endpoint: OpenAICompatibleEmbeddings
    cache: CachedBackend | None = None

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if self.cache is None:
            return np.asarray(self.endpoint.embed(texts), dtype=np.float32)
        request = {"backend": self.endpoint.name, **self.endpoint.identity(), "input": texts}
        completion = self.cache.serve("embeddings", request, lambda: self._fetch(texts))
        try:
            vectors = json.loads(completion.text)
            matrix = np.asarray(vectors, dtype=np.float32)
        except (ValueError, TypeError) as exc:
            raise BackendError(
                f"the cached embeddings for {len(texts)} text(s) cannot be read ({exc}); "
                f"delete the entry from {self.cache.cache_dir} and replay"
            ) from None
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise BackendError(
                f"the cached embeddings hold shape {matrix.shape} for {len(texts)} text(s); "
                f"delete the entry from {self.cache.cache_dir} and replay"
            )
        return matrix

    def _fetch(self, texts: list[str]) -> Completion:
        vectors = self.endpoint.embed(texts)
        return Completion(
            text=json.dumps(vectors, separators=(",", ":")),
            finish_reason="stop",
            model=self.endpoint.model,
            backend=self.endpoint.name,
        )
