"""Memory strategies beside DeerFlow's: the tiered memory of semantic facts, episodes,
session summaries and forgetting.

- the store (:mod:`~memlab.memory.store`): :class:`TieredStore`, one SQLite database (WAL,
  one transaction per write) per lane and owner, with :class:`MemoryItem`, :class:`Episode`;
- similarity search (:mod:`~memlab.memory.vectors`): sqlite-vec or NumPy, and
  :class:`HashedEmbedding`, a deterministic embedding for tests and benchmarks;
- forgetting (:mod:`~memlab.memory.forgetting`): the pure rules (:class:`ForgettingRules`)
  and what they did (:class:`ForgettingEvent`);
- the strategies a replay drives (:mod:`~memlab.memory.strategy`): :class:`MemoryStrategy`,
  :class:`DeerFlowStrategy` (today's pipeline) and :class:`TieredStrategy`
  (:mod:`~memlab.memory.tiered`: working memory, session summaries, importance-rated semantic
  memories, episodes, forgetting on the virtual clock).

The store takes its embedding function as an argument; the tiered design opens the one its
lane chooses (:mod:`~memlab.memory.tiered_embedding`) and bounds its calls
(:mod:`~memlab.memory.tiered_bounds`) with ``memlab.backends``.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.memory.items import (
        CorruptStoreError,
        Episode,
        ForgettingEvent,
        ForgettingRules,
        MemoryItem,
    )
    from memlab.memory.options import TieredOptions
    from memlab.memory.store import Embed, TieredStore
    from memlab.memory.strategy import DeerFlowStrategy, MemoryStrategy, Step
    from memlab.memory.tiered import TieredSettings, TieredStrategy
    from memlab.memory.vectors import HashedEmbedding, sqlite_vec_available

_EXPORTS: dict[str, str] = {
    "CorruptStoreError": "memlab.memory.items",
    "Episode": "memlab.memory.items",
    "ForgettingEvent": "memlab.memory.items",
    "ForgettingRules": "memlab.memory.items",
    "MemoryItem": "memlab.memory.items",
    "Embed": "memlab.memory.store",
    "TieredStore": "memlab.memory.store",
    "DeerFlowStrategy": "memlab.memory.strategy",
    "MemoryStrategy": "memlab.memory.strategy",
    "Step": "memlab.memory.strategy",
    "TieredOptions": "memlab.memory.options",
    "TieredSettings": "memlab.memory.tiered",
    "TieredStrategy": "memlab.memory.tiered",
    "HashedEmbedding": "memlab.memory.vectors",
    "sqlite_vec_available": "memlab.memory.vectors",
}

__all__ = [
    "CorruptStoreError",
    "DeerFlowStrategy",
    "Embed",
    "Episode",
    "ForgettingEvent",
    "ForgettingRules",
    "HashedEmbedding",
    "MemoryItem",
    "MemoryStrategy",
    "Step",
    "TieredOptions",
    "TieredSettings",
    "TieredStore",
    "TieredStrategy",
    "sqlite_vec_available",
]

_face_getattr, __dir__ = lazy_face(__name__, _EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "StoreError":  # the tiered store's own error before both stores shared one
        warnings.warn(
            "memlab.memory.StoreError is deprecated: catch memlab.core.StorageError",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module("memlab.core.storage").StorageError
    return _face_getattr(name)
