"""One LLM call of the tiered memory: render, send, parse against the call's contract, record.

Every call (session summary, importance ratings, compression) becomes an
:class:`~memlab.core.pipeline.updater.UpdateResult` with the call's kind in ``extra["call"]``: the
same record, the same parse ladder and failure taxonomy as DeerFlow's update call, so the
call table counts every call's outcome alike and metrics can still tell them apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, cast

from memlab.core.jsondoc.contract import ReplyContract
from memlab.core.jsondoc.parsing import ParseOptions
from memlab.core.pipeline.llm import Backend, CompletionRequest, GenerationParams, OutputMode
from memlab.core.pipeline.updater import UpdateResult, ask_backend
from memlab.core.tiered_prompts import CALL_CONTRACTS, TieredCall
from memlab.memory.tiers.tiered_bounds import TieredBounds, bounded_call_schema

__all__ = ["TieredCaller"]


@dataclass(frozen=True)
class TieredCaller:
    """Sends the tiered memory's calls as the lane says (mode, parameters, parse ladder).

    Attributes:
        backend: The lane's backend (the response cache wraps it in a sweep).
        output_mode: The lane's output mode; ``json_schema`` sends each call's own schema.
        params: Sampling parameters (the lane's, its sample's seed included).
        parse_options: The lane's parse ladder.
        sample: Index of the repeated sample (sent with every request).
        clock: The replay's virtual clock.
        contracts: The reply contract of each kind of call (the tiered memory's by default;
            the procedural memory passes its own).
        bounds: Length limits added to each call's schema (``None``: the contracts as they
            are); replies are still validated against the unbounded contracts.
        max_tokens: Each kind of call's ``max_tokens`` (a kind left out: ``params``').
    """

    backend: Backend
    output_mode: OutputMode
    params: GenerationParams
    parse_options: ParseOptions
    sample: int
    clock: Callable[[], datetime]
    # Keyword-only: three optional settings of different types cannot be told apart by place.
    contracts: Mapping[str, ReplyContract] = field(
        default_factory=lambda: {str(k): v for k, v in CALL_CONTRACTS.items()}, kw_only=True
    )
    bounds: TieredBounds | None = field(default=None, kw_only=True)
    max_tokens: Mapping[TieredCall, int] = field(default_factory=dict, kw_only=True)

    def request(self, call: str, prompt: str) -> CompletionRequest:
        """The request a call of kind ``call`` sends for ``prompt``."""
        schema = self.contracts[call].schema
        if schema is not None and self.bounds is not None and call in CALL_CONTRACTS:
            schema = bounded_call_schema(cast(TieredCall, call), self.bounds)
        params = self.params
        if call in self.max_tokens:
            params = replace(params, max_tokens=self.max_tokens[cast(TieredCall, call)])
        return CompletionRequest(
            messages=[{"role": "user", "content": prompt}],
            mode=self.output_mode,
            schema=dict(schema) if schema is not None and self._sends_schema else None,
            params=params,
            sample=self.sample,
        )

    @property
    def _sends_schema(self) -> bool:
        return self.output_mode is OutputMode.JSON_SCHEMA

    def ask(
        self, call: str, prompt: str, thread_id: str | None
    ) -> tuple[UpdateResult, dict[str, Any] | None]:
        """Send one call; its record and the reply's object (``None`` when it failed)."""
        started = time.perf_counter()
        result = UpdateResult(thread_id=thread_id, started_at=self.clock(), prompt=prompt)
        result.extra["call"] = call
        try:
            data = self._ask(result, call, prompt)
        finally:
            result.duration_s = time.perf_counter() - started
        return result, data

    def _ask(self, result: UpdateResult, call: str, prompt: str) -> dict[str, Any] | None:
        data = ask_backend(
            self.backend,
            self.request(call, prompt),
            result,
            self.parse_options,
            self.contracts[call],
            label=f"tiered {call} call",
        )
        return None if data is None else dict(data)
