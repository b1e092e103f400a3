"""A spending limit shared by every backend of a sweep or QA step (``--max-cost USD``).

:class:`SpendGuard` wraps a priced backend beneath the response cache, so cache hits cost
nothing. Before each call it reserves the call's worst case (the prompt at one token per
:data:`WORST_CHARS_PER_TOKEN` characters, the request's ``max_tokens`` as completion) on the
shared :class:`SpendLimit`; a call whose reservation would take the spend past the limit is
not sent but fails with :class:`SpendLimitError`, a :class:`~memlab.core.pipeline.llm.BackendError`.
A replay or QA call that fails so is recorded unfinished, exactly as after a refused
connection: finished replays are kept and the next run resumes with the rest. When a call
returns, its reservation is replaced by what it cost (the reported tokens, the provider's
cached prompt tokens at their declared price). Backends without a declared price (local
models, test doubles, the simulated model) are never limited.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from memlab.backends.costs.pricing import ModelPrice, call_cost, model_price
from memlab.core.pipeline.llm import Backend, BackendError, Completion, CompletionRequest
from memlab.errors import MemlabError

__all__ = [
    "WORST_CHARS_PER_TOKEN",
    "CostLimitError",
    "SpendGuard",
    "SpendLimit",
    "SpendLimitError",
    "prompt_chars",
]

WORST_CHARS_PER_TOKEN = 2.0
"""Characters per prompt token assumed for a call's worst case (tokenizers of English text
average about four)."""


def prompt_chars(request: CompletionRequest) -> int:
    """The characters of a request's messages."""
    return sum(len(str(m.get("content", ""))) for m in request.messages)


class SpendLimitError(BackendError):
    """A call was not sent: its worst case would take the spend past the limit."""

    def __init__(self, spent: float, limit: float) -> None:
        self.spent = spent
        self.limit = limit
        super().__init__(
            f"not sent: the spend (${spent:.4f}) would pass the cost limit ${limit:.4f}"
        )


class CostLimitError(MemlabError, RuntimeError):
    """A run stopped at its cost limit; what finished is kept and the next run resumes.

    Attributes:
        spent: USD spent by this run's calls.
        limit: The limit (``--max-cost``).
        unfinished: Replays (or QA calls) left for the next run.
    """

    def __init__(self, spent: float, limit: float, unfinished: int, what: str) -> None:
        self.spent = spent
        self.limit = limit
        self.unfinished = unfinished
        super().__init__(
            f"stopped at the cost limit: spent ${spent:.4f} of --max-cost ${limit:.4f} (the "
            f"next call could pass it); {unfinished} {what} left unfinished and kept for the "
            "next run: rerun (with a higher --max-cost) to resume"
        )


@dataclass
class _Totals:
    spent: float = 0.0
    reserved: float = 0.0
    refused: int = 0


class SpendLimit:
    """USD spent and reserved against ``limit``, shared by threads (one per sweep)."""

    def __init__(self, limit: float) -> None:
        if not math.isfinite(limit) or limit < 0:
            raise ValueError(f"the cost limit must be a non-negative amount of USD, got {limit}")
        self.limit = limit
        self._totals = _Totals()
        self._lock = threading.Lock()

    @property
    def spent(self) -> float:
        """USD the finished calls cost."""
        with self._lock:
            return self._totals.spent

    @property
    def stopped(self) -> bool:
        """Whether a call was refused (the run stopped at the limit)."""
        with self._lock:
            return self._totals.refused > 0

    def reserve(self, worst: float) -> None:
        """Reserve ``worst`` USD for a call about to be sent.

        Raises:
            SpendLimitError: The spend and reservations would pass the limit.
        """
        with self._lock:
            totals = self._totals
            if totals.refused or totals.spent + totals.reserved + worst > self.limit:
                totals.refused += 1
                raise SpendLimitError(totals.spent, self.limit)
            totals.reserved += worst

    def settle(self, reserved: float, cost: float) -> None:
        """Replace a call's reservation by what it cost (``cost`` 0 for a failed call)."""
        with self._lock:
            self._totals.reserved -= reserved
            self._totals.spent += cost


class SpendGuard:
    """``backend`` (built from ``spec``) whose calls are counted against ``limit``.

    Name, model and identity are the wrapped backend's (``backend`` attribute), so lane ids and
    cache keys do not change.
    """

    def __init__(self, backend: Backend, spec: str, limit: SpendLimit) -> None:
        self.backend = backend
        self.name = backend.name
        self.spec = spec
        self.limit = limit

    @property
    def model(self) -> str:
        """The wrapped backend's default model."""
        return self.backend.model

    def __repr__(self) -> str:
        return f"SpendGuard({self.backend!r}, limit={self.limit.limit})"

    def _price(self, request: CompletionRequest) -> ModelPrice | None:
        return model_price(self.spec, request.model or self.backend.model)

    def complete(self, request: CompletionRequest) -> Completion:
        """Send ``request`` if its worst case fits under the limit (see the module docstring).

        Raises:
            SpendLimitError: It does not.
        """
        price = self._price(request)
        if price is None:
            return self.backend.complete(request)
        prompt = prompt_chars(request) / WORST_CHARS_PER_TOKEN
        worst = call_cost(price, prompt, request.params.max_tokens)
        self.limit.reserve(worst)
        cost = 0.0
        try:
            done = self.backend.complete(request)
            reported = done.prompt_tokens or prompt  # a server that reports no usage
            cost = call_cost(price, reported, done.completion_tokens, done.cached_prompt_tokens)
            return done
        finally:
            self.limit.settle(worst, cost)
