"""One lane of a sweep grid: :class:`LaneConfig`, a pipeline configuration by *names* (prompt
variant, merge strategy, backend spec, memory design and injection settings) with the rules
across its settings, and the axes a grid may vary (:mod:`memlab.grids.grid` expands them)."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    Strict,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from memlab.backends.decoding.grammar import bounded_reply_tokens
from memlab.backends.registry import dialect_for, is_simulated, mark_simulated, spec_short_name
from memlab.core.jsondoc.contract import SchemaBounds
from memlab.core.jsondoc.parsing import parse_options_for
from memlab.core.pipeline.config import MemoryConfig
from memlab.core.pipeline.llm import OutputMode
from memlab.errors import MemlabError
from memlab.grids.design_options import (
    DESIGN_OPTIONS_FIELD,
    gather_design_options,
    misplaced_options,
    options_keys,
    valid_design_options,
)
from memlab.memory.designs import DEFAULT_DESIGN, MEMORY_DESIGNS
from memlab.memory.policies import DEFAULT_POLICY
from memlab.memory.tiers.options import TieredOptions
from memlab.memory.tiers.tiered_bounds import resolve_auto_max_tokens

__all__ = [
    "AUTO_MAX_TOKENS",
    "AXES",
    "INJECTION_FIELDS",
    "MEMORY_KINDS",
    "MEMORY_SETTINGS",
    "LaneConfig",
    "MemoryKind",
    "ParsePreset",
    "PolicyName",
    "ReplayMode",
    "lane_keys",
    "reply_bound",
]

ReplayMode = Literal["debounce", "per_session"]


MemoryKind = Annotated[str, Field(min_length=1)]
"""A name of :data:`memlab.memory.designs.MEMORY_DESIGNS` (the ``memory`` setting), checked
when a grid is resolved (:func:`memlab.sweeps.grid_check.check_grid`), so that a run replayed
with a plugin's design stays readable where the plugin is not installed."""
MEMORY_KINDS: tuple[str, ...] = tuple(MEMORY_DESIGNS.builtins())
"""The memory designs memlab ships (``memory``): DeerFlow's one-document memory, or the
tiered design of working memory, session summaries, semantic and episodic memories with
forgetting (:mod:`memlab.memory`); plugins may register more."""
_DEFAULT_MEMORY = DEFAULT_DESIGN


PolicyName = Annotated[str, Field(min_length=1)]
"""A name of :data:`memlab.memory.policies.INJECTION_POLICIES` (``injection_policy``), checked
when a grid is resolved (:func:`memlab.sweeps.grid_check.check_grid`), as memory designs are."""


def _known_preset(name: str) -> str:
    parse_options_for(name)  # an unknown name raises, listing the known ones
    return name


ParsePreset = Annotated[str, AfterValidator(_known_preset)]
"""A name of :data:`memlab.core.jsondoc.parsing.PARSE_PRESETS`."""

INJECTION_FIELDS = frozenset(
    {"injection_enabled", "max_injection_tokens", "token_counting", "injection_policy"}
)
"""Lane settings of what the next agent receives; they change nothing the pipeline writes, so
they do not seed a lane's fact ids (:attr:`LaneConfig.point_id`)."""


_MAX_TOKENS_LIMIT = 32768


MEMORY_SETTINGS: tuple[str, ...] = (
    "fact_confidence_threshold",
    "max_facts",
    "debounce_seconds",
    "injection_enabled",
    "max_injection_tokens",
    "token_counting",
)
"""Lane settings that are :class:`~memlab.core.pipeline.config.MemoryConfig` fields: each lane field
of that name takes the config field's default, bounds and description, and a replay's config is
built from them (:meth:`LaneConfig.memory_config`)."""


def _memory_setting(name: str) -> Any:
    """The :class:`MemoryConfig` field ``name`` (default, bounds, description) for a lane.

    Numbers are strict: in a grid, a YAML ``true`` is not 1 and a quoted "0.7" is a mistake
    to report.
    """
    field = copy.copy(MemoryConfig.model_fields[name])
    if field.annotation in (int, float):
        field.metadata = [*field.metadata, Strict()]
    return field


class LaneConfig(BaseModel):
    """One pipeline configuration (by names) replayed over every memory owner of a dataset."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: str = "default"
    fact_confidence_threshold: float = _memory_setting("fact_confidence_threshold")
    max_facts: int = _memory_setting("max_facts")
    backend: str = "scripted"
    output_mode: OutputMode = OutputMode.FREE
    merge: str = "baseline"
    merge_params: dict[str, Any] = Field(default_factory=dict)
    debounce_seconds: int = _memory_setting("debounce_seconds")
    parse: ParsePreset = "default"
    """A parse preset (:data:`memlab.core.jsondoc.parsing.PARSE_PRESETS`: ``default``, ``deerflow``,
    ``strict_only``, ``repair``, or one a plugin registers)."""
    max_tokens: int = Field(1024, ge=16, le=_MAX_TOKENS_LIMIT, strict=True)
    """Most tokens a reply may take. With ``schema_bounds`` it defaults to (and ``auto``
    computes) the longest reply the bounded grammar admits; a smaller value is an error, so a
    bounded lane's reply always ends before the limit."""
    temperature: float = Field(0.0, ge=0.0, le=2.0, strict=True)
    seed: int = Field(0, strict=True)
    injection_enabled: bool = _memory_setting("injection_enabled")
    max_injection_tokens: int = _memory_setting("max_injection_tokens")
    token_counting: Literal["tiktoken", "char"] = _memory_setting("token_counting")
    injection_policy: PolicyName = DEFAULT_POLICY
    """The injection policy, by its name in
    :data:`memlab.memory.policies.INJECTION_POLICIES`: ``confidence``, ``recency``,
    ``relevance``, ``relevance_embeddings`` or one a plugin registers."""
    schema_bounds: SchemaBounds | None = None
    """Length limits added to the grammar in ``json_schema`` mode (see ``SchemaBounds``)."""
    memory: MemoryKind = _DEFAULT_MEMORY
    """The memory design replayed, by its name in :data:`memlab.memory.designs.MEMORY_DESIGNS`:
    ``deerflow`` (one document, one LLM update per queued conversation), ``tiered``
    (:mod:`memlab.memory.tiers.tiered`) or one a plugin registers."""
    tiered: TieredOptions = Field(default_factory=lambda: TieredOptions.model_validate({}))
    """The tiered memory's parameters (:class:`~memlab.memory.tiers.options.TieredOptions`, the
    seed's values by default), e.g. ``tiered: {importance_threshold: 0.6}``; only a
    ``memory: tiered`` lane takes them."""
    design_options: dict[str, dict[str, Any]] = Field(default_factory=dict, repr=False)
    """The options of a design a plugin registers, by the design's options key: a grid
    writes them under that key (``raw_turns: {keep_last: 10}``), and so do the dumps (only
    changed options; see :mod:`memlab.grids.design_options`)."""

    @model_validator(mode="before")
    @classmethod
    def _design_options_by_key(cls, data: Any) -> Any:
        return gather_design_options(data, cls.model_fields)

    @field_validator(DESIGN_OPTIONS_FIELD)
    @classmethod
    def _changed_design_options(cls, options: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return valid_design_options(options)

    @model_serializer(mode="wrap")
    def _defaults_left_out(self, handler: SerializerFunctionWrapHandler) -> Any:
        """``memory: deerflow`` and the tiered options at their defaults are left out of
        every dump (only changed options are written), so lanes recorded before these
        settings existed keep their point ids, config files and tables byte for byte."""
        data = handler(self)
        if isinstance(data, dict):
            if data.get("memory") == _DEFAULT_MEMORY:
                del data["memory"]
            changed = self.tiered.changed()
            if changed:
                data["tiered"] = changed
            else:
                data.pop("tiered", None)
            if data.pop(DESIGN_OPTIONS_FIELD, None) is not None:
                data.update((key, value) for key, value in self.design_options.items() if value)
        return data

    def settings(self) -> dict[str, Any]:
        """Every setting as JSON values, ``memory`` and the changed options of the lane's
        design included (the dumps leave them out at their defaults)."""
        settings = {
            **self.model_dump(mode="json"),
            "memory": self.memory,
            "tiered": self.tiered.changed(),
            **self.design_options,
        }
        design = MEMORY_DESIGNS.get(self.memory)
        if design is not None and design.options is not None:
            settings.setdefault(design.options, {})
        return settings

    @property
    def history_last(self) -> bool:
        """Whether the injected context puts History after the facts: the design's layout
        (the tiered memory's, the seed's: summary, semantic memories, then episodes);
        DeerFlow's puts the history summaries first."""
        design = MEMORY_DESIGNS.get(self.memory)
        return design is not None and design.history_last_in(self.settings())

    @model_validator(mode="after")
    def _options_of_the_lanes_design(self) -> LaneConfig:
        options = {"tiered": self.tiered.changed(), **self.design_options}
        key, problem = misplaced_options(self.memory, options)
        if problem:
            raise _setting_error(key, problem)
        return self

    @model_validator(mode="before")
    @classmethod
    def _auto_max_tokens(cls, data: Any) -> Any:
        """``max_tokens: auto`` (or none given with ``schema_bounds``): the bound's value."""
        if not isinstance(data, Mapping):
            return data
        auto = data.get("max_tokens") == AUTO_MAX_TOKENS
        if not auto and ("max_tokens" in data or data.get("schema_bounds") is None):
            return data
        if data.get("schema_bounds") is None:
            raise _setting_error(
                "max_tokens",
                "max_tokens: auto is computed from schema_bounds; set schema_bounds (with "
                "output_mode: json_schema) or give max_tokens a number",
            )
        try:
            bounds = SchemaBounds.model_validate(data["schema_bounds"])
        except ValidationError:
            return {**data, "max_tokens": 1024}  # the schema_bounds error is reported alone
        backend = str(data.get("backend", cls.model_fields["backend"].default))
        bound = reply_bound(bounds, backend)
        if bound > _MAX_TOKENS_LIMIT:
            raise _setting_error(
                "max_tokens",
                f"the worst case of these schema_bounds, {bound} tokens, is more than "
                f"max_tokens may be ({_MAX_TOKENS_LIMIT}); lower schema_bounds",
            )
        return {**data, "max_tokens": bound}

    @model_validator(mode="before")
    @classmethod
    def _auto_tiered_max_tokens(cls, data: Any) -> Any:
        """Each tiered call's ``max_tokens: auto``: its worst case under the tiered bounds."""
        if not isinstance(data, Mapping):
            return data
        tiered = data.get("tiered")
        if isinstance(tiered, TieredOptions):  # built in code: resolved like a grid's
            tiered = tiered.changed()
        if not isinstance(tiered, Mapping):
            return data
        backend = str(data.get("backend", cls.model_fields["backend"].default))
        try:
            tiered = resolve_auto_max_tokens(tiered, dialect_for(backend))
        except (ValueError, MemlabError) as exc:
            raise _setting_error("tiered", str(exc)) from None
        return {**data, "tiered": tiered}

    @model_validator(mode="after")
    def _bounds_need_a_schema(self) -> LaneConfig:
        unbounded_mode = self.output_mode is not OutputMode.JSON_SCHEMA
        if self.tiered.schema_bounds is not None and unbounded_mode:
            raise _setting_error(
                "tiered",
                "tiered.schema_bounds only applies to output_mode json_schema (they bound the "
                f"grammar); remove them or set output_mode: json_schema (got "
                f"{self.output_mode.value})",
            )
        if self.schema_bounds is not None and self.output_mode is not OutputMode.JSON_SCHEMA:
            raise ValueError(
                "schema_bounds only applies to output_mode json_schema (it bounds the grammar); "
                f"remove it or set output_mode: json_schema (got {self.output_mode.value})"
            )
        return self

    def memory_config(self, **settings: Any) -> MemoryConfig:
        """The pipeline configuration of a replay of this lane: its memory settings
        (:data:`MEMORY_SETTINGS`) and ``settings`` (e.g. ``storage_path``)."""
        return MemoryConfig(**{name: getattr(self, name) for name in MEMORY_SETTINGS}, **settings)

    @property
    def readable(self) -> str:
        """The configuration in a few words, safe as part of a file name."""
        mode = {"free": "free", "json_object": "json", "json_schema": "schema"}[
            self.output_mode.value
        ]
        backend = spec_short_name(self.backend)
        readable = (
            f"{self.prompt}-{mode}-t{self.fact_confidence_threshold:g}-m{self.max_facts}"
            f"-{self.merge}-d{self.debounce_seconds}-{backend}"
        )
        if self.memory != _DEFAULT_MEMORY:
            readable = f"{self.memory}-{readable}"
        # Bounded: a long prompt or backend name must not make an over-long file name.
        return "".join(c if c.isalnum() or c in "-._" else "_" for c in readable[:100])

    @property
    def point_id(self) -> str:
        """A stable id of this grid point (its names and values, not what they resolve to).

        It seeds the replay's fact ids, so the memory JSON inside prompts (and with it the
        response cache) stays the same when only, say, a prompt's text changes. The injection
        settings are left out: lanes that differ only in them write the same memory.
        """
        dumped = self.model_dump(mode="json", exclude=set(INJECTION_FIELDS))
        if dumped["schema_bounds"] is None:
            del dumped["schema_bounds"]  # lanes without bounds keep their earlier ids
        digest = hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()[:6]
        return f"{self.readable}-{digest}"

    def label(self, varying: Sequence[str]) -> str:
        """A short label naming only the given (varying) fields, for charts and tables.

        Lanes of the simulated model are labelled "simulated" wherever they appear.
        """
        if not varying:
            text = self.prompt
        else:
            dumped = self.settings()
            dumped["schema_bounds"] = "on" if self.schema_bounds else "off"
            text = " ".join(f"{_SHORT.get(k, k)}={dumped[k]}" for k in varying)
        return mark_simulated(text, is_simulated(self.backend))


AUTO_MAX_TOKENS = "auto"
"""The ``max_tokens`` value that asks for the worst case of the lane's ``schema_bounds``."""


def reply_bound(bounds: SchemaBounds, backend: str) -> int:
    """The bounded grammar's worst case, or a ValueError saying why it cannot be computed."""
    try:
        return bounded_reply_tokens(bounds, dialect_for(backend))
    except MemlabError as exc:
        raise ValueError(f"cannot compute the worst case of schema_bounds: {exc}") from None


def _setting_error(field: str, message: str) -> PydanticCustomError:
    """A rule across lane settings whose fix is one setting: the grid reports that key."""
    return PydanticCustomError("lane_setting", "{message}", {"field": field, "message": message})


_SHORT = {
    "fact_confidence_threshold": "thr",
    "max_facts": "max",
    "output_mode": "mode",
    "debounce_seconds": "debounce",
    "schema_bounds": "bounds",
    "injection_enabled": "inject",
    "max_injection_tokens": "budget",
    "token_counting": "tokens",
    "injection_policy": "policy",
}

# A lane setting and the config field it copies must hold the same type.
for _name in MEMORY_SETTINGS:
    if LaneConfig.model_fields[_name].annotation != MemoryConfig.model_fields[_name].annotation:
        raise TypeError(f"LaneConfig.{_name} and MemoryConfig.{_name} have different types")

AXES: tuple[str, ...] = tuple(f for f in LaneConfig.model_fields if f != DESIGN_OPTIONS_FIELD)
"""Fields of :class:`LaneConfig` that a grid may vary (``base`` may set them too), besides
the options keys of registered memory designs (:func:`lane_keys`)."""


def lane_keys() -> tuple[str, ...]:
    """Every key a lane may set: :data:`AXES` and the options keys of the registered memory
    designs (a plugin's among them)."""
    return tuple(dict.fromkeys((*AXES, *options_keys())))
