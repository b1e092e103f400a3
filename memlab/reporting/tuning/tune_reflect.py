"""The reflection model's calls during prompt evolution: cached, counted and budgeted like the
search's replays.

:class:`Reflection` is what GEPA calls with each reflection request. It sends the request to
the reflection backend through the search's response cache (the same
:class:`~memlab.backends.caching.cache.CachedBackend`, directory and mode as the replays; the
simulated reflector's replies too, so a read-only cache replays a whole evolution without any
model). A cached reply is the completion the live call returned, so GEPA, seeded with the
search's seed, makes the same requests in the same order on a replay.

Every reply counts in the reflection's own cost (:data:`COST_COLUMNS`: calls, cache hits,
prompt and completion tokens, USD at the backend's declared prices, cached replies included,
as a replay's calls are) and in the search's spend. A call the cache cannot answer is sent
only while the search's budgets allow it: not once the wall-time budget is spent, and not when
its worst case (as :class:`~memlab.backends.costs.spend.SpendGuard` reckons it) would take the
spend past ``max_cost``, and not once the call or token budget is used up (a call sent counts
in it with its tokens; a reply from the cache does not). Such a call stops the evolution as
an interruption would (:class:`ReflectionRefused`, raised through GEPA, which keeps its state
from the start of the step): the same command resumes it (with a larger call or token
budget, for those). A request a read-only cache lacks stops it the same way
(:class:`~memlab.backends.caching.cache.CacheMissError`): a replay of a recorded evolution
either makes the recorded requests or says which one it lacks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from memlab.backends.caching.cache import CachedBackend, CacheMissError, CacheMode
from memlab.backends.costs.pricing import ModelPrice, call_cost, model_price
from memlab.backends.costs.spend import WORST_CHARS_PER_TOKEN, CostLimitError, prompt_chars
from memlab.core.pipeline.llm import Backend, Completion, CompletionRequest
from memlab.errors import MemlabError
from memlab.reporting.tuning.tune_budget import CallBudget, TimeBudget
from memlab.reporting.tuning.tune_report import COST_COLUMNS

__all__ = ["Ledger", "Reflection", "ReflectionRefused"]

logger = logging.getLogger(__name__)


class Ledger(Protocol):
    """What the search has spent (USD, replays and reflection together)."""

    spent: float


class ReflectionRefused(BaseException):
    """A reflection call was not sent: a budget would pass, or a read-only cache lacks it.

    A ``BaseException`` because GEPA turns every ``Exception`` of a reflection into "no
    proposal" and goes on replaying; this one leaves GEPA as an interruption does.
    :func:`memlab.reporting.tuning.tune_evolve.evolve` raises :attr:`error` in its place.

    Attributes:
        error: Why (a :class:`~memlab.errors.MemlabError`: the budget's error or the miss).
    """

    def __init__(self, error: MemlabError) -> None:
        super().__init__(str(error))
        self.error = error


class _Guarded:
    """``backend`` whose calls (the ones the cache cannot answer) are checked first."""

    def __init__(self, backend: Backend, check: Reflection) -> None:
        self.backend = backend
        self.name = backend.name
        self._check = check

    @property
    def model(self) -> str:
        return self.backend.model

    def complete(self, request: CompletionRequest) -> Completion:
        self._check.before_sending(request)
        return self.backend.complete(request)


class Reflection:
    """GEPA's reflection model: ``backend`` (of the spec ``spec``) behind the response cache,
    its calls counted in :attr:`cost` and the ledger, within the budgets.

    Args:
        backend: The reflection backend (a model, or the simulated reflector).
        spec: Its spec (names its declared prices).
        cache_dir, cache_mode: The search's response cache (``None``: no cache).
        ledger: The search's spend, which reflection adds to.
        max_cost: USD the search may spend (``None``: no limit).
        time: The search's wall-time budget (``None``: no limit).
        stop: Raised when the time budget refuses a call.
        calls: The search's call and token budget (``None``: no limit).

    Attributes:
        cost: :data:`COST_COLUMNS` of the calls answered (this process's).
    """

    def __init__(
        self,
        backend: Backend,
        spec: str,
        *,
        cache_dir: str | Path | None,
        cache_mode: CacheMode,
        ledger: Ledger,
        max_cost: float | None = None,
        time: TimeBudget | None = None,
        stop: MemlabError | None = None,
        calls: CallBudget | None = None,
    ) -> None:
        self.spec = spec
        self.ledger = ledger
        self.max_cost = max_cost
        self.time = time
        self._stop = stop
        self.calls = calls
        self.cost = dict.fromkeys(COST_COLUMNS, 0.0)
        guarded: Backend = _Guarded(backend, self)
        self.backend: Backend = guarded
        if cache_dir is not None and CacheMode(cache_mode) is not CacheMode.OFF:
            self.backend = CachedBackend(guarded, cache_dir, mode=cache_mode)
        self._model = backend.model

    def _price(self, request: CompletionRequest) -> ModelPrice | None:
        return model_price(self.spec, request.model or self._model)

    def before_sending(self, request: CompletionRequest) -> None:
        """Refuse a call a budget does not allow (see the module docstring).

        Raises:
            ReflectionRefused: The time, call or token budget is spent, or the call's worst
                case would take the spend past ``max_cost``.
        """
        if self.time is not None and self._stop is not None and self.time.spent():
            raise ReflectionRefused(self._stop)
        if self.calls is not None and self.calls.spent():
            raise ReflectionRefused(self.calls.error("a reflection call"))
        if self.max_cost is None:
            return
        worst = call_cost(
            self._price(request),
            prompt_chars(request) / WORST_CHARS_PER_TOKEN,
            request.params.max_tokens,
        )
        if self.ledger.spent + worst > self.max_cost:
            raise ReflectionRefused(
                CostLimitError(self.ledger.spent, self.max_cost, 1, "reflection call")
            )

    def __call__(self, prompt: str | Sequence[Mapping[str, Any]]) -> str:
        """The reply to a reflection request (GEPA's language-model protocol)."""
        if isinstance(prompt, str):
            messages = [{"role": "user", "content": prompt}]
        else:
            messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in prompt]
        request = CompletionRequest(messages=messages)
        try:
            done = self.backend.complete(request)
        except CacheMissError as exc:
            raise ReflectionRefused(exc) from None
        usd = call_cost(
            self._price(request),
            done.prompt_tokens,
            done.completion_tokens,
            done.cached_prompt_tokens,
        )
        for column, value in (
            ("llm_calls", 1.0),
            ("cache_hits", float(done.cached)),
            ("prompt_tokens", float(done.prompt_tokens)),
            ("completion_tokens", float(done.completion_tokens)),
            ("cost_usd", usd),
        ):
            self.cost[column] += value
        self.ledger.spent += usd
        if self.calls is not None and not done.cached:
            self.calls.add({"calls": 1, "tokens": done.prompt_tokens + done.completion_tokens})
        logger.debug("reflection call (%s): %s", "cached" if done.cached else "sent", self.cost)
        return done.text
