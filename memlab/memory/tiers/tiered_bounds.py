"""Length bounds of the tiered memory's calls, and the longest reply each bounded call admits.

The main contract's ``schema_bounds`` (:class:`~memlab.core.jsondoc.contract.SchemaBounds`) bound
the DeerFlow update; the tiered memory's three calls have contracts of their own
(:data:`~memlab.core.tiered_prompts.CALL_CONTRACTS`), bounded here by
:class:`TieredBounds` (the grid key ``tiered.schema_bounds``):

- ``summary``: the session summary gets ``maxLength`` ``summary_chars``; ``keyPoints`` gets
  ``maxItems`` ``max_key_points`` and each key point ``maxLength`` ``key_point_chars``;
- ``importance``: ``ratings`` gets ``maxItems`` ``max_key_points`` (the call rates the key
  points of one summary, so it never needs more);
- ``compression``: the merged summary gets ``maxLength`` ``compression_chars``.

Each call's worst case (:func:`call_reply_tokens`) is computed as the main contract's
(:func:`memlab.backends.decoding.grammar.worst_case_tokens`): the longest UTF-8 text the bounded
grammar of the backend's dialect derives, one token per byte, plus the end of generation.
A lane sets each call's ``max_tokens`` to it (``tiered.max_tokens: {summary: auto, ...}``,
the default once bounds are set), so a bounded tiered call cannot end truncated. Replies are
still validated against the unbounded contracts.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memlab.backends.decoding.grammar import GrammarDialect, worst_case_tokens
from memlab.core.tiered_prompts import CALL_CONTRACTS, TIERED_CALLS, TieredCall

__all__ = [
    "AUTO",
    "TieredBounds",
    "TieredMaxTokens",
    "bounded_call_schema",
    "call_reply_tokens",
    "resolve_auto_max_tokens",
]

AUTO = "auto"
"""The ``tiered.max_tokens`` value that asks for a call's worst case under the bounds."""

MAX_TOKENS_LIMIT = 32768  # the lane's own max_tokens limit


class TieredBounds(BaseModel):
    """Length limits added to the schemas the tiered calls send (their grammars).

    Attributes:
        summary_chars: ``maxLength`` of the session summary (``summary`` call).
        key_point_chars: ``maxLength`` of each key point (``summary`` call).
        max_key_points: ``maxItems`` of the key points and of the ratings (``importance``).
        compression_chars: ``maxLength`` of the merged summary (``compression`` call).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    summary_chars: int = Field(400, ge=1, le=8000, strict=True)
    key_point_chars: int = Field(120, ge=1, le=2000, strict=True)
    max_key_points: int = Field(5, ge=0, le=100, strict=True)
    compression_chars: int = Field(400, ge=1, le=8000, strict=True)


_MaxTokens = Annotated[int, Field(ge=16, le=MAX_TOKENS_LIMIT, strict=True)] | Literal["auto"] | None


class TieredMaxTokens(BaseModel):
    """Most tokens each kind of call's reply may take; ``None``: the lane's ``max_tokens``
    (``auto`` once ``schema_bounds`` are set), ``auto``: the call's worst case."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    summary: _MaxTokens = None
    importance: _MaxTokens = None
    compression: _MaxTokens = None

    def of(self, call: TieredCall) -> int | None:
        """The number set for ``call`` (``None``: the lane's; ``auto`` is resolved first)."""
        value = getattr(self, call)
        if value == AUTO:
            raise ValueError(f"tiered.max_tokens.{call}: auto was not resolved")
        return value if isinstance(value, int) else None


def bounded_call_schema(call: TieredCall, bounds: TieredBounds) -> dict[str, Any]:
    """A copy of ``call``'s contract schema with ``bounds`` as ``maxLength``/``maxItems``."""
    schema = copy.deepcopy(dict(CALL_CONTRACTS[call].schema or {}))
    properties = schema["properties"]
    if call == "summary":
        properties["summary"]["maxLength"] = bounds.summary_chars
        properties["keyPoints"]["maxItems"] = bounds.max_key_points
        properties["keyPoints"]["items"]["maxLength"] = bounds.key_point_chars
    elif call == "importance":
        properties["ratings"]["maxItems"] = bounds.max_key_points
    else:
        properties["summary"]["maxLength"] = bounds.compression_chars
    return schema


@functools.cache
def call_reply_tokens(
    call: TieredCall, bounds: TieredBounds, dialect: GrammarDialect = "compact"
) -> int:
    """The most tokens a ``call`` reply can take under ``bounds`` (the end of generation
    included) when decoded with ``dialect``'s grammar."""
    tokens = worst_case_tokens(bounded_call_schema(call, bounds), dialect)
    if tokens is None:  # every string and list of the contracts is bounded: cannot happen
        raise ValueError(f"the {call} contract's grammar admits replies of any length")
    return tokens


def resolve_auto_max_tokens(
    tiered: Mapping[str, Any], dialect: GrammarDialect
) -> Mapping[str, Any]:
    """The ``tiered`` options with every call's ``max_tokens: auto`` (and, once
    ``schema_bounds`` are set, every call left out) replaced by its worst case.

    Options that do not validate are returned as they are (their error is reported alone).

    Raises:
        ValueError: ``auto`` without ``schema_bounds``, or a worst case above the limit.
    """
    if not isinstance(tiered, Mapping) or not isinstance(tiered.get("max_tokens", {}), Mapping):
        return tiered
    asked = dict(tiered.get("max_tokens") or {})
    try:
        TieredMaxTokens.model_validate(asked)
        bounds = (
            None
            if tiered.get("schema_bounds") is None
            else TieredBounds.model_validate(tiered["schema_bounds"])
        )
    except ValidationError:
        return tiered
    if bounds is None:
        if AUTO in asked.values():
            raise ValueError(
                "tiered.max_tokens: auto is computed from tiered.schema_bounds; set them "
                "(with output_mode: json_schema) or give max_tokens a number"
            )
        return tiered
    for call in TIERED_CALLS:
        if asked.get(call, AUTO) == AUTO:
            asked[call] = call_reply_tokens(call, bounds, dialect)
            if asked[call] > MAX_TOKENS_LIMIT:
                raise ValueError(
                    f"the worst case of the {call} call under these tiered.schema_bounds, "
                    f"{asked[call]} tokens, is more than max_tokens may be "
                    f"({MAX_TOKENS_LIMIT}); lower tiered.schema_bounds"
                )
    return {**tiered, "max_tokens": asked}
