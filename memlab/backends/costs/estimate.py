"""What a run would cost, found without calling a model: the dry run's tallies.

A dry run builds every request a run would send, in the run's own code, and asks
:class:`CacheProbe` whether the response cache holds it, with the key the cache computes
(:func:`memlab.backends.caching.cache.request_key`); it reads entries without marking them used. A
hit is served by the cache in the real run: it costs nothing and its reply is what the run
continues with. A miss is a model call: :class:`Tally` counts it with its prompt's characters,
its ``max_tokens`` and the length of the stand-in reply the dry run continued with.

Tokens are estimated, never counted by a tokenizer:

- prompt tokens: the prompt's characters divided by the characters per token of the cache
  hits of the same backend and model (their prompts against the prompt tokens the provider
  reported), else by :data:`DEFAULT_CHARS_PER_TOKEN`;
- completion tokens, expected: the mean of those hits' completion tokens, else the stand-in
  reply's characters at the same rate; worst case: each request's ``max_tokens``;
- the provider's cached prompt tokens: the share of prompt tokens the hits reported as cached.

:func:`~memlab.backends.costs.pricing.call_cost` prices them with the backend's declared prices.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memlab.backends.caching.cache import decode_entry, entry_path, read_entry_file, request_key
from memlab.backends.costs.pricing import ModelPrice, call_cost, model_price
from memlab.backends.costs.spend import prompt_chars
from memlab.backends.registry import SIMULATED_MARK
from memlab.core.pipeline.llm import Completion, CompletionRequest

__all__ = ["DEFAULT_CHARS_PER_TOKEN", "CacheProbe", "Estimate", "Tally"]

DEFAULT_CHARS_PER_TOKEN = 4.0
"""Characters per token when no cached reply of the model says otherwise (English text)."""


class CacheProbe:
    """Looks requests up in a response cache directory, read-only (``None``: no cache)."""

    def __init__(self, cache_dir: str | os.PathLike[str] | None) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None

    def lookup(self, backend: str, model: str, request: CompletionRequest) -> Completion | None:
        """The cached completion of ``request`` to ``backend``/``model``, or ``None``."""
        if self.cache_dir is None:
            return None
        key = request_key(backend, model, request)
        try:
            raw = read_entry_file(entry_path(self.cache_dir, key), self.cache_dir)
        except OSError:  # absent, or unreadable: the real run would call the model
            return None
        return decode_entry(raw, key)[1]


@dataclass
class Tally:
    """The requests of one step (``"replay"``, ``"qa answers"``, ...) to one backend spec.

    Attributes:
        step: What sends them.
        spec: The backend spec.
        model: The model id that answers.
        simulated: The simulated model (an instrument: its calls cost nothing and are made by
            the dry run itself).
    """

    step: str
    spec: str
    model: str
    simulated: bool = False
    hits: int = 0
    calls: int = 0
    miss_chars: int = 0
    stand_in_chars: int = 0
    worst_completion: int = 0
    hit_chars: int = 0
    hit_prompt_tokens: int = 0
    hit_completion_tokens: int = 0
    hit_cached_prompt_tokens: int = 0
    usage_hits: int = 0
    simulated_tokens: list[int] = field(default_factory=lambda: [0, 0])

    @property
    def price(self) -> ModelPrice | None:
        """The declared price of the model (``None``: none declared)."""
        return model_price(self.spec, self.model)

    def hit(self, request: CompletionRequest, completion: Completion) -> None:
        """A request the cache answers."""
        self.hits += 1
        if completion.prompt_tokens > 0:
            self.usage_hits += 1
            self.hit_chars += prompt_chars(request)
            self.hit_prompt_tokens += completion.prompt_tokens
            self.hit_completion_tokens += completion.completion_tokens
            self.hit_cached_prompt_tokens += completion.cached_prompt_tokens

    def miss(self, request: CompletionRequest, stand_in: str) -> None:
        """A request the model answers (``stand_in``: the reply the dry run went on with)."""
        self.calls += 1
        self.miss_chars += prompt_chars(request)
        self.stand_in_chars += len(stand_in)
        self.worst_completion += request.params.max_tokens

    def simulated_call(self, completion: Completion) -> None:
        """A call of the simulated model, made by the dry run (its tokens as it reports)."""
        self.calls += 1
        self.simulated_tokens[0] += completion.prompt_tokens
        self.simulated_tokens[1] += completion.completion_tokens

    @property
    def calibrated(self) -> bool:
        """Whether cache hits of this model say how many characters make a token."""
        return self.hit_prompt_tokens > 0

    @property
    def chars_per_token(self) -> float:
        """Prompt characters per token: the hits', else :data:`DEFAULT_CHARS_PER_TOKEN`."""
        if not self.calibrated:
            return DEFAULT_CHARS_PER_TOKEN
        return self.hit_chars / self.hit_prompt_tokens

    @property
    def prompt_tokens(self) -> float:
        """Estimated prompt tokens of the calls."""
        if self.simulated:
            return float(self.simulated_tokens[0])
        return self.miss_chars / self.chars_per_token

    @property
    def completion_tokens(self) -> float:
        """Expected completion tokens of the calls."""
        if self.simulated:
            return float(self.simulated_tokens[1])
        if self.calibrated:
            return self.calls * self.hit_completion_tokens / self.usage_hits
        return self.stand_in_chars / self.chars_per_token

    @property
    def cached_prompt_tokens(self) -> float:
        """Expected provider-cached prompt tokens: the hits' share of the prompt tokens."""
        if not self.calibrated:
            return 0.0
        return self.prompt_tokens * self.hit_cached_prompt_tokens / self.hit_prompt_tokens

    def cost(self, worst: bool = False) -> float:
        """USD of the calls at the declared price (expected, or worst case)."""
        completion = self.worst_completion if worst else self.completion_tokens
        cached = 0.0 if worst else self.cached_prompt_tokens
        return call_cost(self.price, self.prompt_tokens, completion, cached)

    def completion_source(self) -> str:
        """Where the expected completion tokens come from, in words."""
        if self.simulated:
            return "as the simulated model reports them"
        if self.calibrated:
            mean = self.hit_completion_tokens / self.usage_hits
            return f"the mean of {self.usage_hits} cached replies ({mean:.0f} tokens)"
        return "the stand-in replies' lengths"


@dataclass
class Estimate:
    """What a run would send: its tallies, what it keeps, and how the estimate was made."""

    title: str
    tallies: list[Tally] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def tally(self, step: str, spec: str, model: str, simulated: bool = False) -> Tally:
        """The tally of ``step`` to ``spec``/``model`` (created on first use)."""
        for found in self.tallies:
            if (found.step, found.spec, found.model) == (step, spec, model):
                return found
        made = Tally(step, spec, model, simulated)
        self.tallies.append(made)
        return made

    @property
    def calls(self) -> int:
        """Model calls of every step (the simulated model's are not model calls)."""
        return sum(t.calls for t in self.tallies if not t.simulated)

    @property
    def prompt_tokens(self) -> float:
        """Estimated prompt tokens of those calls."""
        return sum(t.prompt_tokens for t in self.tallies if not t.simulated)

    @property
    def completion_tokens(self) -> float:
        """Expected completion tokens of those calls."""
        return sum(t.completion_tokens for t in self.tallies if not t.simulated)

    def cost(self, worst: bool = False) -> float:
        """USD, expected or worst case."""
        return sum(t.cost(worst) for t in self.tallies)

    def minutes(self, rpm: float | None, tpm: float | None) -> float | None:
        """Minutes the calls take at ``rpm`` requests and ``tpm`` tokens a minute (the
        slower of the two; ``None`` when neither is given)."""
        if rpm is None and tpm is None:
            return None
        tokens = self.prompt_tokens + self.completion_tokens
        return max(self.calls / rpm if rpm else 0.0, tokens / tpm if tpm else 0.0)

    def lines(self, rpm: float | None = None, tpm: float | None = None) -> list[str]:
        """The estimate as text, a table then how each figure was made."""
        rows = [_row(t) for t in self.tallies]
        total = ("total", "", "", str(sum(t.hits for t in self.tallies)), str(self.calls))
        rows.append(
            (
                *total,
                f"{self.prompt_tokens:,.0f}",
                f"{self.completion_tokens:,.0f} / "
                f"{sum(t.worst_completion for t in self.tallies if not t.simulated):,}",
                f"{self.cost():.4f} / {self.cost(worst=True):.4f}",
            )
        )
        out = [f"dry run: {self.title} (no model called)", *_table(rows)]
        out += [f"- {note}" for note in self.notes]
        out += [f"- {line}" for t in self.tallies for line in _how(t)]
        minutes = self.minutes(rpm, tpm)
        if minutes is not None:
            limits = " and ".join(
                f"{v:,.0f} {unit}/min" for v, unit in ((rpm, "requests"), (tpm, "tokens")) if v
            )
            out.append(f"- time at {limits}: {minutes:,.1f} min")
        return out


_HEAD = (
    "step",
    "backend",
    "model",
    "cache hits",
    "calls",
    "prompt tokens",
    "completion tokens (expected / worst)",
    "USD (expected / worst)",
)


def _row(t: Tally) -> tuple[str, ...]:
    if t.simulated:
        mark = SIMULATED_MARK
        return (t.step, t.spec, t.model, "-", str(t.calls), mark, mark, "0")
    return (
        t.step,
        t.spec,
        t.model,
        str(t.hits),
        str(t.calls),
        f"{t.prompt_tokens:,.0f}",
        f"{t.completion_tokens:,.0f} / {t.worst_completion:,}",
        f"{t.cost():.4f} / {t.cost(worst=True):.4f}" if t.price else "no declared price",
    )


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in (_HEAD, *rows)) for i in range(len(_HEAD))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in (_HEAD, *rows)]


def _how(t: Tally) -> list[str]:
    if t.simulated or t.calls == 0:
        return []
    where = f"{t.step} on {t.spec}"
    rate = (
        f"{t.chars_per_token:.2f} characters per token, from {t.usage_hits} cached replies"
        if t.calibrated
        else f"{DEFAULT_CHARS_PER_TOKEN:g} characters per token (no cached reply to calibrate)"
    )
    lines = [
        f"{where}: prompt tokens at {rate}; completion tokens expected from "
        f"{t.completion_source()}, worst case each request's max_tokens"
    ]
    price = t.price
    if price is not None and price.cached_prompt is not None and t.hit_cached_prompt_tokens:
        lines.append(
            f"{where}: {t.cached_prompt_tokens:,.0f} prompt tokens expected from the provider's "
            f"prompt cache at ${price.cached_prompt:g}/1M (the share the cached replies report)"
        )
    return lines
