"""Memory strategies beside DeerFlow's: the tiered memory of semantic facts, episodes,
session summaries and forgetting.

- the store (:mod:`~memlab.memory.storage.store`): :class:`TieredStore`, one SQLite database (WAL,
  one transaction per write) per lane and owner, with its rows
  (:mod:`~memlab.memory.storage.items`: ``MemoryItem``, ``Episode``);
- similarity search (:mod:`~memlab.memory.storage.vectors`): sqlite-vec or NumPy, and
  ``HashedEmbedding``, a deterministic embedding for tests and benchmarks;
- forgetting (:mod:`~memlab.memory.storage.forgetting`): the pure rules (``ForgettingRules``) and
  what they did (``ForgettingEvent``, both in :mod:`~memlab.memory.storage.items`);
- the strategies a replay drives (:mod:`~memlab.memory.strategy`): :class:`MemoryStrategy`,
  ``DeerFlowStrategy`` (today's pipeline) and ``TieredStrategy``
  (:mod:`~memlab.memory.tiers.tiered`: working memory, session summaries, importance-rated semantic
  memories, episodes, forgetting on the virtual clock).

The store takes its embedding function as an argument; the tiered design opens the one its
lane chooses (:mod:`~memlab.memory.tiers.tiered_embedding`) and bounds its calls
(:mod:`~memlab.memory.tiers.tiered_bounds`) with ``memlab.backends``.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.memory.storage.store import TieredStore as TieredStore
    from memlab.memory.strategy import MemoryStrategy as MemoryStrategy
    from memlab.memory.strategy import Step as Step
    from memlab.memory.tiers.options import TieredOptions as TieredOptions
    from memlab.memory.tiers.tiered import TieredSettings as TieredSettings
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
