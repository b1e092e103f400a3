"""What a call costs, from the prices its backend declares.

A backend's :class:`~memlab.backends.registry.BackendPlugin` declares, per model id prefix,
USD per million prompt and completion tokens (``prices``) and, where the provider bills the
prompt tokens it served from its own prompt cache at a lower rate, USD per million of those
(``cached_prompt_prices``). The longest declared prefix of the model id names its price. The
dry run (:mod:`memlab.backends.costs.estimate`) and the spending limit
(:mod:`memlab.backends.costs.spend`) both price calls here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from memlab.backends.registry import find_backend_plugin

__all__ = ["ModelPrice", "call_cost", "model_price"]

_V = TypeVar("_V")

_PER = 1_000_000.0


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens of one model.

    Attributes:
        prompt: A prompt token.
        completion: A completion token.
        cached_prompt: A prompt token the provider served from its prompt cache (``None``:
            billed as any prompt token).
    """

    prompt: float
    completion: float
    cached_prompt: float | None = None


def _longest(table: Mapping[str, _V], model: str) -> _V | None:
    found = [prefix for prefix in table if model.startswith(prefix)]
    return table[max(found, key=len)] if found else None


def model_price(spec: str, model: str) -> ModelPrice | None:
    """The price of ``model`` served by the backend of ``spec``; ``None`` when its backend
    declares none for it (a local model, a test double, an unknown prefix or model)."""
    plugin = find_backend_plugin(spec)
    if plugin is None or plugin.simulated:
        return None
    rates = _longest(plugin.prices, model)
    if rates is None:
        return None
    return ModelPrice(rates[0], rates[1], _longest(plugin.cached_prompt_prices, model))


def call_cost(
    price: ModelPrice | None,
    prompt_tokens: float,
    completion_tokens: float,
    cached_prompt_tokens: float = 0.0,
) -> float:
    """USD for one call (or a sum of calls): ``cached_prompt_tokens`` of the prompt tokens at
    the cached price when one is declared, the rest at the prompt price; 0 without a price."""
    if price is None:
        return 0.0
    cached = min(max(cached_prompt_tokens, 0.0), prompt_tokens)
    cached_rate = price.prompt if price.cached_prompt is None else price.cached_prompt
    return (
        (prompt_tokens - cached) * price.prompt
        + cached * cached_rate
        + completion_tokens * price.completion
    ) / _PER
