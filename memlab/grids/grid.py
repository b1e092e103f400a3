"""Sweep grids: the configurations a sweep compares, from YAML or Python.

A grid names a list of values per axis; its lanes are the cartesian product. Each
:class:`LaneConfig` is one grid point: a pipeline configuration by *names* (prompt variant,
merge strategy, backend spec). :mod:`memlab.sweeps.plan` resolves those names into what a replay
actually depends on (template text, schema, model file) and gives each lane its
content-addressed id.

Example ``grid.yaml`` (four lanes; ``base`` holds the settings every lane shares)::

    name: prompt-vs-mode
    dataset: smoke
    prompts: [prompts/mine.txt]       # prompt files or directories, relative to this file
    base: {backend: scripted, max_tokens: 512}
    axes:
      prompt: [default, mine]
      output_mode: [free, json_schema]
      fact_confidence_threshold: [0.7]
      max_facts: [100]
    replay_mode: debounce
    primary: [recall, parse_failure_rate]   # what "better" means here (default: the specs')
    qa: {answer_backend: "local:smollm2", judges: [lenient, strict]}   # memory QA
"""

from __future__ import annotations

import copy
import functools
import hashlib
import itertools
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    Strict,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from memlab.backends.decoding.grammar import bounded_reply_tokens
from memlab.backends.registry import dialect_for, is_simulated, mark_simulated, spec_short_name
from memlab.core.base.safe_names import unsafe_reason
from memlab.core.jsondoc.contract import SchemaBounds
from memlab.core.jsondoc.parsing import parse_options_for
from memlab.core.pipeline.config import MemoryConfig
from memlab.core.pipeline.llm import OutputMode
from memlab.core.tiered_prompts import TIERED_CALLS
from memlab.errors import MemlabError, excerpt
from memlab.grids.design_options import (
    DESIGN_OPTIONS_FIELD,
    gather_design_options,
    misplaced_options,
    options_check,
    options_keys,
    valid_design_options,
)
from memlab.grids.qa_spec import QASpec
from memlab.memory.designs import DEFAULT_DESIGN, MEMORY_DESIGNS
from memlab.memory.policies import DEFAULT_POLICY
from memlab.memory.tiers.options import TieredOptions
from memlab.memory.tiers.tiered_bounds import call_reply_tokens, resolve_auto_max_tokens
from memlab.scoring.metric_specs import primary_metrics

__all__ = [
    "AUTO_MAX_TOKENS",
    "AXES",
    "INJECTION_FIELDS",
    "MAX_LANES",
    "MEMORY_KINDS",
    "MEMORY_SETTINGS",
    "ForkSpec",
    "Grid",
    "GridError",
    "LaneConfig",
]

MAX_LANES = 10_000
"""Most lanes one grid may expand to (a typo in an axis should not start a week-long sweep)."""

ReplayMode = Literal["debounce", "per_session"]


MemoryKind = Annotated[str, Field(min_length=1)]
"""A name of :data:`memlab.memory.designs.MEMORY_DESIGNS` (the ``memory`` setting), checked
when a grid is resolved (:func:`memlab.sweeps.plan.check_grid`), so that a run replayed
with a plugin's design stays readable where the plugin is not installed."""
MEMORY_KINDS: tuple[str, ...] = tuple(MEMORY_DESIGNS.builtins())
"""The memory designs memlab ships (``memory``): DeerFlow's one-document memory, or the
tiered design of working memory, session summaries, semantic and episodic memories with
forgetting (:mod:`memlab.memory`); plugins may register more."""
_DEFAULT_MEMORY = DEFAULT_DESIGN


PolicyName = Annotated[str, Field(min_length=1)]
"""A name of :data:`memlab.memory.policies.INJECTION_POLICIES` (``injection_policy``), checked
when a grid is resolved (:func:`memlab.sweeps.plan.check_grid`), as memory designs are."""


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


class GridError(MemlabError, ValueError):
    """A grid file or mapping is invalid.

    Attributes:
        source: The grid file (or ``<grid>`` for a mapping built in code).
        key: The key path of the offending value, e.g. ``axes.prompt[1]`` (``""`` when the
            whole grid is at fault).
        line: The value's 1-based line in the grid file, when known.
        problem: What is wrong and how to fix it.
    """

    def __init__(self, source: str, key: str, problem: str, line: int | None = None) -> None:
        self.source = source
        self.key = key
        self.line = line
        self.problem = problem
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {key}: {problem}" if key else f"{where}: {problem}")


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
        return design is not None and design.history_last

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
        bound = _reply_bound(bounds, backend)
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


def _reply_bound(bounds: SchemaBounds, backend: str) -> int:
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


class ForkSpec(BaseModel):
    """Start every lane at one session from a reference lane's memory (grid key ``fork``).

    Each owner's session ``at_session`` (a 0-based session index, as in the session rows) starts
    from the memory the reference lane held after session ``at_session - 1``; earlier sessions
    are not replayed (no LLM calls) and metrics cover sessions from ``at_session`` on.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    run: str = Field(min_length=1)
    """The reference run directory (relative paths are read from the grid file's folder)."""
    lane: str = Field(min_length=1)
    """The reference lane's id in that run."""
    at_session: int = Field(ge=1, strict=True)


class Grid(BaseModel):
    """A sweep definition: dataset, fixed settings, the axes to vary and extra prompt files."""

    model_config = ConfigDict(extra="forbid")

    name: str = "sweep"
    dataset: str = "smoke"
    owners: list[str] | None = Field(None, min_length=1)
    """Restrict to these user ids (``None`` = all)."""
    max_owners: int | None = Field(None, ge=1, strict=True)
    max_sessions: int | None = Field(None, ge=1, strict=True)
    replay_mode: ReplayMode = "debounce"
    samples: int = Field(1, ge=1, le=50, strict=True)
    """Replays per (lane, owner), each with its own seed (``seed + k``); metrics average over
    an owner's samples. Set ``temperature`` above 0 for samples to differ."""
    prompts: list[str] = Field(default_factory=list)
    """Prompt files or directories (``.txt``/``.yaml``/``.json``), relative to the grid file;
    their variants can be named in ``base.prompt`` and ``axes.prompt``."""
    base: dict[str, Any] = Field(default_factory=dict)
    """Settings shared by every lane (any :class:`LaneConfig` field)."""
    axes: dict[str, list[Any]] = Field(default_factory=dict)
    fork: ForkSpec | None = None
    """Start every lane from a reference lane's memory at one session (see :class:`ForkSpec`)."""
    primary: list[str] | None = None
    """The metrics that answer "is a lane better" for this run's comparisons and gate (the
    Holm family, :mod:`memlab.scoring.comparing.comparison`); ``None``: those the metric specs
    declare
    primary. Every other rate is shown as exploratory."""
    qa: QASpec | None = None
    """Ask every lane's memory the dataset's questions after the replays (see
    :mod:`memlab.grids.qa_spec`)."""

    _source: str = PrivateAttr(default="<grid>")
    _base_dir: Path = PrivateAttr(default_factory=Path)
    _lines: dict[str, int] = PrivateAttr(default_factory=dict)

    @field_validator("primary")
    @classmethod
    def _known_primary(cls, names: list[str] | None) -> list[str] | None:
        if names is None:
            return None
        if not names:
            raise ValueError("name at least one rate, or leave primary out for the default")
        try:
            return list(primary_metrics(names))
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None

    @field_validator("name")
    @classmethod
    def _safe_name(cls, name: str) -> str:
        reason = unsafe_reason(name)
        if reason is not None:  # the name becomes the run directory's name
            raise ValueError(f"the run name {excerpt(name)} cannot be a directory name: {reason}")
        return name

    @property
    def source(self) -> str:
        """The grid file (``<grid>`` for a grid built in code), for messages."""
        return self._source

    @property
    def base_dir(self) -> Path:
        """Directory that relative prompt paths are resolved against (the grid file's)."""
        return self._base_dir

    def error(self, key: str, problem: str) -> GridError:
        """A :class:`GridError` for the value at ``key``, located in the grid file."""
        return GridError(self._source, key, problem, self._lines.get(key))

    def lanes(self) -> list[LaneConfig]:
        """Expand the grid into lane configs (cartesian product, in axis order).

        Raises:
            GridError: Naming the base key or axis value that is invalid.
        """
        self._check_values()
        names = list(self.axes)
        count = math.prod(len(values) for values in self.axes.values())
        if count > MAX_LANES:
            raise self.error(
                "axes",
                f"{count} lanes (the product of the axes); memlab runs at most {MAX_LANES}: "
                "split the grid or remove axis values",
            )
        configs: list[LaneConfig] = []
        seen: set[str] = set()
        for values in itertools.product(*(self.axes[n] for n in names)):
            point = {**self.base, **dict(zip(names, values, strict=True))}
            try:
                config = LaneConfig.model_validate(point)
            except ValidationError as exc:  # a rule across settings, e.g. schema_bounds
                err = exc.errors()[0]
                field = (err.get("ctx") or {}).get("field")
                lanes_key = "axes" if self.axes else "base"
                where = self.key_of(field, point.get(field)) if field else lanes_key
                raise self.error(where, _describe(err)) from None
            # Every setting, injection included (the point id leaves those out).
            key = json.dumps(config.model_dump(mode="json"), sort_keys=True)
            if key not in seen:
                seen.add(key)
                configs.append(config)
        return configs

    def check_max_tokens(self) -> None:
        """Every bounded lane's ``max_tokens`` covers the longest reply its grammar admits.

        (A rule for new sweeps: runs recorded before it still load.)

        Raises:
            GridError: At the ``max_tokens`` key of the first lane below its worst case.
        """
        for lane in self.lanes():
            self._check_tiered_max_tokens(lane)
            if lane.schema_bounds is None:
                continue
            bound = _reply_bound(lane.schema_bounds, lane.backend)
            if lane.max_tokens < bound:
                raise self.error(
                    self.key_of("max_tokens", lane.max_tokens),
                    f"max_tokens {lane.max_tokens} < worst case {bound} for these bounds (the "
                    f"longest reply their grammar admits for {lane.backend}, in tokens); set "
                    "max_tokens: auto or lower schema_bounds",
                )

    def _check_tiered_max_tokens(self, lane: LaneConfig) -> None:
        """Each bounded tiered call's ``max_tokens`` covers its worst case."""
        bounds, asked = lane.tiered.schema_bounds, lane.tiered.max_tokens
        if bounds is None or asked is None:
            return
        dialect = dialect_for(lane.backend)
        for call in TIERED_CALLS:
            value = asked.of(call)
            key = next(
                (k for k, v in self.values("tiered") if _asked(v, call) == value), "base.tiered"
            )
            try:
                bound = call_reply_tokens(call, bounds, dialect)
            except MemlabError as exc:
                raise self.error(
                    f"{key}.max_tokens.{call}",
                    f"cannot compute the {call} call's worst case: {exc}",
                ) from None
            if value is not None and value < bound:
                raise self.error(
                    f"{key}.max_tokens.{call}",
                    f"max_tokens {value} < worst case {bound} of the {call} call under these "
                    f"tiered.schema_bounds (the longest reply their grammar admits for "
                    f"{lane.backend}, in tokens); set it to auto or lower tiered.schema_bounds",
                )

    def key_of(self, field: str, value: Any) -> str:
        """The key path that gives ``field`` the value ``value`` (its axis entry or base)."""
        return next((key for key, v in self.values(field) if v == value), f"base.{field}")

    def values(self, field: str) -> Iterator[tuple[str, Any]]:
        """Every ``(key path, value)`` the grid gives ``field``: its axis values, else base."""
        if field in self.axes:
            for index, value in enumerate(self.axes[field]):
                yield f"axes.{field}[{index}]", value
        elif field in self.base:
            yield f"base.{field}", self.base[field]
        elif field in LaneConfig.model_fields:
            yield (
                f"base.{field}",
                LaneConfig.model_fields[field].get_default(call_default_factory=True),
            )
        else:  # a design's options key: its defaults
            yield f"base.{field}", {}

    def _check_values(self) -> None:
        """Validate base and each axis value alone, so an error names exactly one key."""
        for key, value in self.base.items():
            _validate_field(self, f"base.{key}", key, value)
        for axis, values in self.axes.items():
            if axis not in AXES and options_check(axis, _memories(self)) is None:
                known = ", ".join(lane_keys())
                raise self.error(f"axes.{axis}", f"unknown axis; known axes: {known}")
            if not isinstance(values, list) or not values:
                raise self.error(f"axes.{axis}", "an axis needs a non-empty list of values")
            for index, value in enumerate(values):
                _validate_field(self, f"axes.{axis}[{index}]", axis, value)

    def with_settings(self, **settings: Any) -> Grid:
        """A copy with ``settings`` fixed for every lane (replacing axes of the same names)."""
        data = self.model_dump()
        data["base"] = {**self.base, **settings}
        data["axes"] = {k: v for k, v in self.axes.items() if k not in settings}
        return Grid.from_mapping(data, self._source, base_dir=self._base_dir, lines=self._lines)

    def varying(self) -> list[str]:
        """Axes with more than one value (what distinguishes the lanes)."""
        return [name for name, values in self.axes.items() if len(values) > 1]

    @classmethod
    def from_mapping(
        cls,
        data: Mapping[str, Any],
        source: str = "<grid>",
        *,
        base_dir: str | Path | None = None,
        lines: Mapping[str, int] | None = None,
    ) -> Grid:
        """Validate a mapping, raising :class:`GridError` naming ``source`` and the key.

        Args:
            data: The grid's keys.
            source: Where it came from, for messages.
            base_dir: Directory for relative prompt paths (default: the working directory).
            lines: Key path -> line number in ``source`` (filled by :func:`load_grid`).
        """
        if not isinstance(data, Mapping):
            raise GridError(source, "", "a grid must be a mapping of keys (name, dataset, axes...)")
        line_map = dict(lines or {})
        try:
            grid = cls.model_validate(dict(data))
        except ValidationError as exc:
            err = exc.errors()[0]
            key = _key_path(err["loc"])
            more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
            raise GridError(source, key, _describe(err) + more, line_map.get(key)) from None
        grid._source = source
        grid._base_dir = Path(base_dir) if base_dir is not None else Path()
        grid._lines = line_map
        grid.lanes()
        return grid


def _asked(tiered: Any, call: str) -> Any:
    """The ``max_tokens`` a grid's raw ``tiered`` value gives ``call`` (``None``: none)."""
    asked = tiered.get("max_tokens") if isinstance(tiered, Mapping) else None
    return asked.get(call) if isinstance(asked, Mapping) else None


def _validate_field(grid: Grid, key: str, field: str, value: Any) -> None:
    if field in AXES:
        adapter: TypeAdapter[Any] | None = _field_adapter(field)
        nested = _nested_keys(field)
    else:
        check = options_check(field, _memories(grid))
        if check is None:
            known = ", ".join(lane_keys())
            raise grid.error(key, f"unknown setting; known settings: {known}")
        adapter, nested = check
    if adapter is None or (field == "max_tokens" and value == AUTO_MAX_TOKENS):
        return  # an unregistered design's options; or computed from the lane's schema_bounds
    try:
        adapter.validate_python(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        inner = _key_path(err["loc"])  # a nested setting, e.g. schema_bounds.fact_chars
        where = f"{key}.{inner}" if inner and not inner.startswith("[") else key + inner
        raise grid.error(where, _describe(err, nested)) from None


def _memories(grid: Grid) -> list[str]:
    return [str(name) for _, name in grid.values("memory")]


def _nested_keys(field: str) -> tuple[str, ...]:
    """The keys of a lane setting that is a mapping of its own (``tiered``, ...)."""
    annotation = LaneConfig.model_fields[field].annotation
    for kind in (annotation, *get_args(annotation)):
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            return tuple(kind.model_fields)
    return ()


@functools.cache
def _field_adapter(field: str) -> TypeAdapter[Any]:
    """A validator of one lane setting alone (its type and bounds, no cross-field rules)."""
    info = LaneConfig.model_fields[field]
    field_type: Any = Annotated[info.annotation, info]  # the FieldInfo carries the bounds
    return TypeAdapter(field_type)


def _key_path(loc: Sequence[int | str]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


_EXCERPT = 60


def _describe(err: Mapping[str, Any], keys: Sequence[str] = ()) -> str:
    """One pydantic error as a short sentence, quoting at most a short excerpt of the input
    (``keys``: those of the lane setting the error is inside, for an unknown key)."""
    if err["type"] == "extra_forbidden" and keys:
        return f"unknown key; known keys: {', '.join(keys)}"
    if err["type"] == "extra_forbidden":
        known = ", ".join(Grid.model_fields)
        return f"unknown key; known keys: {known} (lane settings go under base: or axes:)"
    if err["type"] == "lane_setting":
        return str(err["msg"])  # its input is the whole lane, not worth quoting
    shown = excerpt(err.get("input"), _EXCERPT)  # bounded however large the input is
    message = str(err["msg"]).replace("Value error, ", "")
    return f"{message} (got {shown})"
