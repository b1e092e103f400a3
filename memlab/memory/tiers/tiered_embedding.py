"""The embedding the tiered store recalls and merges with (the grid key ``tiered.embedding``).

- ``hashed`` (the default): :class:`~memlab.memory.storage.vectors.HashedEmbedding` of 256
  dimensions, hashed words, no model: the same vectors on every machine; texts sharing words
  are similar, paraphrases are not. A lane at the default keeps its id and identity.
- ``wordllama``: the word-embedding model bundled with ``wordllama`` (offline; ``pip install
  'memlab[embeddings]'``), averaged word vectors of 64, 128 or 256 dimensions (``dim``).
- ``{kind: openai, model: NAME, base_url: URL}``: an OpenAI-compatible ``/v1/embeddings``
  endpoint (``base_url`` defaults to ``OPENAI_BASE_URL``, the key is ``OPENAI_API_KEY``, never
  a grid value), through the lane's response cache as requests of kind ``embeddings``.

Every choice but the default enters the lane's point id and identity
(``identity["strategy"]["embedding"]``).
"""

from __future__ import annotations

import os
from typing import Any, Literal
from urllib.parse import urlsplit

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memlab.backends.caching.cache import CachedBackend
from memlab.backends.remote.embeddings import (
    CachedEndpointEmbedding,
    EmbeddingsUnavailableError,
    WordLlamaEmbedder,
)
from memlab.backends.remote.openai_compat import OpenAICompatibleEmbeddings
from memlab.core.pipeline.llm import Backend
from memlab.memory.storage.store import Embed
from memlab.memory.storage.vectors import HashedEmbedding

__all__ = [
    "HASHED",
    "EmbeddingOptions",
    "embedding_identity",
    "embedding_problem",
    "normalize_embedding",
    "open_embedding",
]

HASHED = HashedEmbedding(dim=256)
"""The default embedding (hashed words, no model)."""


class EmbeddingOptions(BaseModel):
    """A non-default embedding of the tiered store (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["wordllama", "openai"]
    dim: Literal[64, 128, 256] | None = None
    """``wordllama`` only: the vectors' size (256 when left out)."""
    model: str | None = Field(None, min_length=1, max_length=200)
    """``openai`` only (required): the embedding model's name."""
    base_url: str | None = Field(None, min_length=1, max_length=2000)
    """``openai`` only: the endpoint (``OPENAI_BASE_URL`` when left out)."""

    @model_validator(mode="after")
    def _fits_its_kind(self) -> EmbeddingOptions:
        if self.kind == "wordllama" and (self.model or self.base_url):
            raise ValueError("wordllama takes only dim (model and base_url are for openai)")
        if self.kind == "openai":
            if self.model is None:
                raise ValueError("kind openai needs model: the embedding model's name")
            if self.dim is not None:
                raise ValueError("dim is for wordllama; an endpoint's model sets its size")
            if self.base_url is not None and "@" in urlsplit(self.base_url).netloc:
                raise ValueError(
                    "base_url must not carry user:password@ (it would be written to the "
                    "run's files); set OPENAI_BASE_URL instead"
                )
        return self


def normalize_embedding(value: Any) -> Any:
    """A grid's ``tiered.embedding`` value as :class:`EmbeddingOptions` input (``None`` for
    the default ``hashed``): ``"wordllama"`` and ``"openai:MODEL"`` are short for
    ``{kind: wordllama}`` and ``{kind: openai, model: MODEL}``."""
    if value == "hashed" or value == {"kind": "hashed"}:
        return None
    if value == "wordllama":
        return {"kind": "wordllama"}
    if isinstance(value, str) and value.startswith("openai:"):
        return {"kind": "openai", "model": value.removeprefix("openai:")}
    return value


def embedding_identity(options: EmbeddingOptions | None) -> dict[str, Any]:
    """What the store's vectors depend on (part of a tiered lane's identity)."""
    if options is None:
        return {"name": "hashed-words", "dim": HASHED.dim}
    if options.kind == "wordllama":
        dim = options.dim or 256
        return {"name": f"wordllama-l2_supercat-{dim}", "dim": dim}
    url = options.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com"
    parts = urlsplit(url)
    host = parts.hostname or ""
    return {
        "name": "openai-embeddings",
        "model": options.model,
        "host": f"{host}:{parts.port}" if parts.port else host,
    }


def embedding_problem(options: EmbeddingOptions | None) -> str | None:
    """Why ``options`` cannot be opened on this machine (``None``: it can), checked before a
    sweep replays anything: the ``wordllama`` model must load (it then stays loaded)."""
    if options is None or options.kind != "wordllama":
        return None
    try:
        open_embedding(options)
    except EmbeddingsUnavailableError as exc:
        return str(exc)
    return None


def open_embedding(options: EmbeddingOptions | None, backend: Backend | None = None) -> Embed:
    """The embedding function ``options`` name; an endpoint's requests go through
    ``backend``'s response cache when it is one.

    Raises:
        EmbeddingsUnavailableError: ``wordllama`` without the optional extra.
        BackendError: ``openai`` with neither a URL nor a key.
    """
    if options is None:
        return HASHED
    if options.kind == "wordllama":
        try:
            embedder = WordLlamaEmbedder(options.dim or 256)
        except EmbeddingsUnavailableError as exc:
            why = (
                "needs the optional extra: pip install 'memlab[embeddings]'"
                if isinstance(exc.__cause__, ImportError)
                else f"cannot be loaded here: {exc}"
            )
            raise EmbeddingsUnavailableError(f"tiered.embedding wordllama {why}") from None
        return lambda texts: np.asarray(embedder.embed(list(texts)), dtype=np.float32)
    endpoint = OpenAICompatibleEmbeddings(str(options.model), base_url=options.base_url)
    cache = backend if isinstance(backend, CachedBackend) else None
    return CachedEndpointEmbedding(endpoint, cache)
