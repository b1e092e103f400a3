"""Sweep grids: the configurations a sweep compares, from YAML or Python.

A grid names a list of values per axis; its lanes are the cartesian product. Each
:class:`~memlab.grids.lane.LaneConfig` is one grid point: a pipeline configuration by *names*
(prompt variant, merge strategy, backend spec). :mod:`memlab.sweeps.plan` resolves those names
into what a replay actually depends on (template text, schema, model file) and gives each lane
its content-addressed id.

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
    local_batch: {lanes: 4}   # the local model decodes up to 4 concurrent calls together
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from memlab.backends.local.llama_batch import BatchOptions
from memlab.backends.registry import dialect_for
from memlab.core.base.safe_names import unsafe_reason
from memlab.core.tiered_prompts import TIERED_CALLS
from memlab.errors import MemlabError, excerpt
from memlab.grids.design_options import (
    options_check,
)
from memlab.grids.lane import AUTO_MAX_TOKENS, AXES, LaneConfig, ReplayMode, lane_keys, reply_bound
from memlab.grids.qa_spec import QASpec
from memlab.grids.rate_limit_spec import RateLimitSpec, RateLimitValues
from memlab.memory.tiers.tiered_bounds import call_reply_tokens
from memlab.scoring.metric_specs import primary_metrics

__all__ = [
    "MAX_LANES",
    "ForkSpec",
    "Grid",
    "GridError",
]

MAX_LANES = 10_000
"""Most lanes one grid may expand to (a typo in an axis should not start a week-long sweep)."""


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
    rate_limit: RateLimitSpec | None = None
    """Requests and tokens a minute the calls to each rate-limited endpoint are paced at;
    pacing only, never part of lane ids or cache keys (see :mod:`memlab.grids.rate_limit_spec`)."""
    local_batch: BatchOptions | None = None
    """Decode up to ``lanes`` concurrent greedy calls of the local model together
    (``local_batch: 4`` is ``{lanes: 4}``; see ``docs/local-model.md``); how calls are
    scheduled, never part of lane ids or cache keys. ``None``: one call at a time (or
    ``MEMLAB_LLAMA_BATCH``)."""

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

    @field_validator("local_batch", mode="before")
    @classmethod
    def _lane_count(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return {"lanes": value}  # the shorthand: a lane count
        return value

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
            bound = reply_bound(lane.schema_bounds, lane.backend)
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
            keys = _nested_grid_keys(err["loc"])
            more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
            line = line_map.get(key)
            if line is None and key.startswith("local_batch."):  # ``local_batch: 0``
                line = line_map.get("local_batch")
            raise GridError(source, key, _describe(err, keys) + more, line) from None
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


def _nested_grid_keys(loc: Sequence[int | str]) -> tuple[str, ...]:
    """The keys known where an error inside ``rate_limit:`` or ``local_batch:`` is (for an
    unknown key)."""
    if loc and loc[0] == "local_batch":
        return tuple(BatchOptions.model_fields)
    if not loc or loc[0] != "rate_limit":
        return ()
    inside_backend = len(loc) > 3 and loc[1] == "backends"
    return tuple((RateLimitValues if inside_backend else RateLimitSpec).model_fields)


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
