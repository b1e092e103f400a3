"""One LLM call of the tiered memory: render, send, parse against the call's contract, record.

Every call (session summary, importance ratings, compression) becomes an
:class:`~memlab.core.updater.UpdateResult` with the call's kind in ``extra["call"]``: the
same record, the same parse ladder and failure taxonomy as DeerFlow's update call, so the
call table counts every call's outcome alike and metrics can still tell them apart.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memlab.core.contract import ReplyContract
from memlab.core.llm import (
    Backend,
    BackendError,
    Completion,
    CompletionRequest,
    GenerationParams,
    OutputMode,
)
from memlab.core.parsing import ParseOptions, parse_reply
from memlab.core.redact import redact_text
from memlab.core.safe_text import safe_text
from memlab.core.tiered_prompts import CALL_CONTRACTS
from memlab.core.updater import UpdateResult
from memlab.errors import one_line

__all__ = ["TieredCaller"]

logger = logging.getLogger(__name__)

_MAX_ERROR_CHARS = 2000


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
    """

    backend: Backend
    output_mode: OutputMode
    params: GenerationParams
    parse_options: ParseOptions
    sample: int
    clock: Callable[[], datetime]
    contracts: Mapping[str, ReplyContract] = field(
        default_factory=lambda: {str(k): v for k, v in CALL_CONTRACTS.items()}
    )

    def request(self, call: str, prompt: str) -> CompletionRequest:
        """The request a call of kind ``call`` sends for ``prompt``."""
        schema = self.contracts[call].schema
        return CompletionRequest(
            messages=[{"role": "user", "content": prompt}],
            mode=self.output_mode,
            schema=dict(schema) if schema is not None and self._sends_schema else None,
            params=self.params,
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
        try:
            completion = self.backend.complete(self.request(call, prompt))
        except BackendError as exc:
            _fail(result, "backend", str(exc))
            return None
        except Exception as exc:  # a backend that breaks its contract on an odd reply
            _fail(result, "backend", f"unexpected {type(exc).__name__}: {exc}")
            return None
        if not isinstance(completion, Completion) or not isinstance(completion.text, str):
            _fail(result, "backend", f"the backend returned {type(completion).__name__}")
            return None
        text = redact_text(completion.text)
        result.completion = (
            completion if text == completion.text else dataclasses.replace(completion, text=text)
        )
        result.parse = parse_reply(text, self.parse_options, self.contracts[call])
        if not result.parse.ok or result.parse.data is None:
            category = result.parse.category.value if result.parse.category else "unknown"
            _fail(result, "parse", f"{category}: {result.parse.error}")
            return None
        return dict(result.parse.data)


def _fail(result: UpdateResult, stage: str, message: str) -> None:
    message = redact_text(safe_text(message)[0])  # a server's error text, made writable
    result.error = message[:_MAX_ERROR_CHARS]
    result.error_stage = stage
    # A reply that does not parse is an outcome the run measures, not a fault (as updates).
    logger.log(
        logging.INFO if stage == "parse" else logging.WARNING,
        "tiered %s call for thread %s failed at %s: %s",
        result.extra.get("call"),
        result.thread_id,
        stage,
        one_line(message, 500),
    )
