"""The ``rate_limit:`` key of a grid: the pace of the calls to rate-limited model endpoints.

Example (in a grid file; every OpenAI-compatible endpoint and model the sweep calls is paced
at 500 requests and 200,000 tokens a minute, one model at 60 requests)::

    rate_limit:
      requests_per_minute: 500
      tokens_per_minute: 200000
      backends:
        "openai:gpt-4o": {requests_per_minute: 60}   # its tokens: the 200,000 above

A backend's entry sets what it names; what it leaves out comes from the grid-wide values.
``--rpm``/``--tpm`` (and :func:`memlab.sweep`'s ``rate_limit``) override the grid: each one
given replaces that value everywhere, the backends' entries included. Limits are pacing, not
content: they never enter lane ids, cache keys or a run's results, and a server's
``x-ratelimit-*`` headers can only lower them (:mod:`memlab.backends.remote.rate_limit`).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memlab.backends.remote.rate_limit import RateLimit

__all__ = ["RateLimitSpec", "RateLimitValues", "limits_with_override"]

PerMinute = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class RateLimitValues(BaseModel):
    """Requests and tokens a minute (``None``: not limited by this setting)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    requests_per_minute: PerMinute | None = None
    tokens_per_minute: PerMinute | None = None

    def limit(self, fallback: RateLimit | None = None) -> RateLimit:
        """These values as a :class:`RateLimit`, a value left out taken from ``fallback``."""
        base = fallback or RateLimit()
        rpm = self.requests_per_minute
        tpm = self.tokens_per_minute
        return RateLimit(base.rpm if rpm is None else rpm, base.tpm if tpm is None else tpm)


class RateLimitSpec(RateLimitValues):
    """Grid-wide limits and each backend spec's own (see the module docstring)."""

    backends: dict[Annotated[str, Field(min_length=1)], RateLimitValues] = Field(
        default_factory=dict
    )
    """Limits by backend spec (``"openai:gpt-4o-mini"``), over the grid-wide values."""

    @field_validator("backends")
    @classmethod
    def _some_limit(cls, backends: dict[str, RateLimitValues]) -> dict[str, RateLimitValues]:
        for spec, values in backends.items():
            if values.requests_per_minute is None and values.tokens_per_minute is None:
                raise ValueError(
                    f"{spec}: set requests_per_minute or tokens_per_minute, or remove the entry"
                )
        return backends

    def limits(self) -> dict[str, RateLimit]:
        """Limits by backend spec, ``"*"`` for every other spec (the form of
        :class:`~memlab.backends.remote.rate_limit.RateLimiters`)."""
        grid_wide = self.limit()
        out = {spec: values.limit(grid_wide) for spec, values in self.backends.items()}
        if grid_wide != RateLimit():
            out["*"] = grid_wide
        return out


def limits_with_override(
    spec: RateLimitSpec | None, override: RateLimit | None
) -> dict[str, RateLimit]:
    """The grid's limits with ``override`` (``--rpm``/``--tpm``) replacing each value it sets,
    everywhere."""
    limits = spec.limits() if spec is not None else {}
    if override is None:
        return limits
    out = {
        key: RateLimit(
            limit.rpm if override.rpm is None else override.rpm,
            limit.tpm if override.tpm is None else override.tpm,
        )
        for key, limit in limits.items()
    }
    grid_wide = out.get("*", RateLimit())
    out["*"] = RateLimit(
        grid_wide.rpm if override.rpm is None else override.rpm,
        grid_wide.tpm if override.tpm is None else override.tpm,
    )
    return out
