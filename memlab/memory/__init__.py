"""Memory strategies beside DeerFlow's: the tiered memory of semantic facts, episodes,
session summaries and forgetting.

- the store (:mod:`~memlab.memory.store`): :class:`TieredStore`, one SQLite database (WAL,
  one transaction per write) per lane and owner, with its rows
  (:mod:`~memlab.memory.items`: ``MemoryItem``, ``Episode``);
- similarity search (:mod:`~memlab.memory.vectors`): sqlite-vec or NumPy, and
  ``HashedEmbedding``, a deterministic embedding for tests and benchmarks;
- forgetting (:mod:`~memlab.memory.forgetting`): the pure rules (``ForgettingRules``) and
  what they did (``ForgettingEvent``, both in :mod:`~memlab.memory.items`);
- the strategies a replay drives (:mod:`~memlab.memory.strategy`): :class:`MemoryStrategy`,
  ``DeerFlowStrategy`` (today's pipeline) and ``TieredStrategy``
  (:mod:`~memlab.memory.tiered`: working memory, session summaries, importance-rated semantic
  memories, episodes, forgetting on the virtual clock).

The store takes its embedding function as an argument; the tiered design opens the one its
lane chooses (:mod:`~memlab.memory.tiered_embedding`) and bounds its calls
(:mod:`~memlab.memory.tiered_bounds`) with ``memlab.backends``.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.memory.options import TieredOptions as TieredOptions
    from memlab.memory.store import TieredStore as TieredStore
    from memlab.memory.strategy import MemoryStrategy as MemoryStrategy
    from memlab.memory.strategy import Step as Step
    from memlab.memory.tiered import TieredSettings as TieredSettings
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)
