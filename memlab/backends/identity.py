"""What a backend answers with, as data: the "backend" part of a lane's identity.

A lane's results depend on which model produced them. :func:`backend_identity` describes a
backend without calling it: its name and model id, plus whatever the backend adds through an
optional ``identity()`` method (the local backend adds its GGUF file's size and content hash,
the OpenAI-compatible backend the host it talks to). Wrappers such as the response cache
delegate to the backend they wrap.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any

from memlab.core.base.files import open_regular
from memlab.core.pipeline.llm import Backend

__all__ = ["backend_identity", "file_digest"]

_digests: dict[tuple[str, int, int], str] = {}
_digests_lock = threading.Lock()


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's content, computed once per (path, size, mtime) in this process.

    Model files are large (hundreds of MB) and every sweep asks for them, so the digest is
    memoised; a changed file has a new size or mtime and is hashed again.
    """
    resolved = Path(path).resolve()
    stat = resolved.stat()
    key = (str(resolved), stat.st_size, stat.st_mtime_ns)
    with _digests_lock:
        cached = _digests.get(key)
    if cached is not None:
        return cached
    with open_regular(resolved, what="model file") as handle:  # never a FIFO or a device
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    with _digests_lock:
        _digests[key] = digest
    return digest


def backend_identity(backend: Backend) -> dict[str, Any]:
    """Describe ``backend``: ``name``, ``model`` and the backend's own ``identity()`` fields."""
    inner = getattr(backend, "backend", None)  # CachedBackend and other wrappers
    if inner is not None and inner is not backend and hasattr(inner, "complete"):
        return backend_identity(inner)
    described: dict[str, Any] = {"name": backend.name, "model": backend.model}
    identity = getattr(backend, "identity", None)
    if callable(identity):
        described.update(identity())
    return described
