"""The tiered memory's parameters as a lane sets them (the grid key ``tiered``).

:class:`TieredOptions` holds the numbers of the tiered design a grid may change, each with
the seed's value as its default and its range (every size that scales a replay's work or
memory has an upper bound, and a boolean is never a number); unknown keys are refused. Only
the options that differ from the defaults are written anywhere
(:meth:`TieredOptions.changed`), so a lane at the defaults keeps its point id,
``config.json`` and cache keys byte for byte. A replay reads them as
:class:`~memlab.memory.tiers.tiered.TieredSettings` (:func:`memlab.sweeps.plan.tiered_settings`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memlab.memory.storage.items import ForgettingRules
from memlab.memory.tiers.tiered_bounds import TieredBounds, TieredMaxTokens
from memlab.memory.tiers.tiered_embedding import EmbeddingOptions, normalize_embedding

__all__ = ["TieredOptions"]


class TieredOptions(BaseModel):
    """Typed options of the tiered memory; the defaults are the seed's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    working_tokens: int = Field(4000, ge=1, le=1_000_000, strict=True)
    """Most tokens the working memory (the context window) holds before it evicts."""
    summary_tokens: int = Field(2000, ge=1, le=100_000, strict=True)
    """Most tokens a session summary keeps (a longer one is cut)."""
    importance_threshold: float = Field(0.7, ge=0.0, le=1.0, strict=True)
    """Key points rated *above* it become semantic memories."""
    recall_k: int = Field(3, ge=0, le=100, strict=True)
    """Semantic memories recalled for each user message (they do not decay while recalled)."""
    recall_refreshes: bool = Field(True, strict=True)
    """Whether a recall restarts the recalled memories' decay (the seed's behaviour); when
    false a memory decays from its creation whether it is recalled or not."""
    decay_per_day: float = Field(0.05, ge=0.0, lt=1.0, strict=True)
    """Share of importance lost per idle day."""
    delete_below: float = Field(0.1, ge=0.0, le=1.0, strict=True)
    """A memory whose importance falls below it is deleted."""
    merge_above: float = Field(0.9, ge=0.0, le=1.0, strict=True)
    """Cosine similarity above which two memories merge."""
    compress_after_days: float = Field(30.0, ge=0.0, le=36_500.0, strict=True)
    """Age in days after which a memory may be compressed."""
    compress_min: int = Field(10, ge=1, le=10_000, strict=True)
    """How many such memories there must be before one LLM call compresses them."""

    schema_bounds: TieredBounds | None = None
    """Length limits of the tiered calls' schemas in ``json_schema`` mode (``None``: the
    contracts as they are); see :mod:`memlab.memory.tiers.tiered_bounds`."""
    max_tokens: TieredMaxTokens | None = None
    """Most tokens each kind of call's reply may take (``auto``: its worst case under
    ``schema_bounds``, the default once they are set); ``None``: the lane's ``max_tokens``."""

    embedding: EmbeddingOptions | None = None
    """The embedding recall and merge use: ``hashed`` (``None``, the default), ``wordllama``
    or an OpenAI-compatible endpoint; see :mod:`memlab.memory.tiers.tiered_embedding`."""

    @field_validator("embedding", mode="before")
    @classmethod
    def _embedding_shorthand(cls, value: Any) -> Any:
        return normalize_embedding(value)

    def changed(self) -> dict[str, Any]:
        """The options that differ from the defaults (what a lane's dumps write)."""
        return self.model_dump(mode="json", exclude_defaults=True)

    def rules(self) -> ForgettingRules:
        """The store's forgetting rules."""
        return ForgettingRules(
            decay_per_day=self.decay_per_day,
            delete_below=self.delete_below,
            merge_above=self.merge_above,
            compress_after_days=self.compress_after_days,
            compress_min=self.compress_min,
        )
