"""The options of intervals and paired tests, without the numerics that use them.

Command-line parsing reads the defaults from here without importing numpy;
:mod:`memlab.scoring.inference.stats` computes with them.
"""

from __future__ import annotations

from dataclasses import dataclass

from memlab.errors import MemlabError

__all__ = ["DEFAULT_RESAMPLES", "DEFAULT_SEED", "MAX_RESAMPLES", "StatOptions", "StatsError"]

DEFAULT_RESAMPLES = 2000
MAX_RESAMPLES = 100_000
"""Upper bound of ``resamples``: 50 times the default, a few seconds per comparison."""
DEFAULT_SEED = 20250101
"""Fixed so that a run's intervals and p-values are the same every time they are computed."""


class StatsError(MemlabError, ValueError):
    """Invalid statistics options or inputs."""


@dataclass(frozen=True)
class StatOptions:
    """How intervals and tests are computed.

    Attributes:
        resamples: Bootstrap and permutation resamples (0 turns intervals and tests off: their
            columns are NaN).
        seed: Seed of the random resamples.
        level: Confidence level of the intervals of single configurations and of secondary
            (exploratory) comparisons.
        alpha: Family-wise significance level of the primary comparisons (Holm).
        power: Power at which the minimum detectable effect is stated.
    """

    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    level: float = 0.95
    alpha: float = 0.05
    power: float = 0.80

    def __post_init__(self) -> None:
        if isinstance(self.resamples, bool) or not isinstance(self.resamples, int):
            raise StatsError(f"resamples must be a whole number, got {self.resamples!r}")
        if not 0 <= self.resamples <= MAX_RESAMPLES:
            raise StatsError(
                f"resamples must be from 0 (off) to {MAX_RESAMPLES}, got {self.resamples} "
                f"(default {DEFAULT_RESAMPLES})"
            )
        for name in ("level", "alpha", "power"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 < value < 1):
                raise StatsError(f"{name} must be a number between 0 and 1, got {value!r}")
