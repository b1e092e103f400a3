"""Sweep grids: the configurations a sweep compares, from YAML or Python.

A grid names a list of values per axis; its lanes are the cartesian product. Each
:class:`LaneConfig` is one fully resolved pipeline configuration with a stable, readable id
(used for directory names and chart labels).

Example ``grid.yaml``::

    name: prompt-vs-mode
    dataset: smoke
    backend: local:smollm2
    axes:
      prompt: [default, concise]
      output_mode: [free, json_schema]
      fact_confidence_threshold: [0.7]
      max_facts: [100]
    replay_mode: debounce
    max_tokens: 512
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from memlab.backends.base import OutputMode
from memlab.backends.simulated import is_simulated
from memlab.core.contract import SchemaBounds
from memlab.errors import MemlabError

__all__ = ["AXES", "Grid", "GridError", "LaneConfig", "load_grid"]

ReplayMode = Literal["debounce", "per_session"]


class GridError(MemlabError, ValueError):
    """A grid file or mapping is invalid; the message names the file and field."""


class LaneConfig(BaseModel):
    """One pipeline configuration replayed over every memory owner of a dataset."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: str = "default"
    fact_confidence_threshold: float = Field(0.7, ge=0.0, le=1.0)
    max_facts: int = Field(100, ge=10, le=500)
    backend: str = "scripted"
    output_mode: OutputMode = OutputMode.FREE
    merge: str = "baseline"
    merge_params: dict[str, Any] = Field(default_factory=dict)
    debounce_seconds: int = Field(30, ge=1, le=300)
    parse: Literal["default", "deerflow", "strict_only", "repair"] = "default"
    max_tokens: int = Field(1024, ge=16, le=32768)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    seed: int = 0
    schema_bounds: SchemaBounds | None = None
    """Length limits added to the grammar in ``json_schema`` mode (see ``SchemaBounds``)."""

    @model_validator(mode="after")
    def _bounds_need_a_schema(self) -> LaneConfig:
        if self.schema_bounds is not None and self.output_mode is not OutputMode.JSON_SCHEMA:
            raise ValueError(
                "schema_bounds only applies to output_mode json_schema (it bounds the grammar); "
                f"remove it or set output_mode: json_schema (got {self.output_mode.value})"
            )
        return self

    @property
    def lane_id(self) -> str:
        """A short readable id, unique for distinct configs (a hash suffix disambiguates)."""
        mode = {"free": "free", "json_object": "json", "json_schema": "schema"}[
            self.output_mode.value
        ]
        backend = self.backend.split(":", 1)[-1].rsplit("/", 1)[-1].replace(".gguf", "")
        readable = (
            f"{self.prompt}-{mode}-t{self.fact_confidence_threshold:g}-m{self.max_facts}"
            f"-{self.merge}-d{self.debounce_seconds}-{backend}"
        )
        dumped = self.model_dump(mode="json")
        if dumped["schema_bounds"] is None:
            del dumped["schema_bounds"]  # lanes without bounds keep their earlier ids
        digest = hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()[:6]
        safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in readable)
        return f"{safe}-{digest}"

    def label(self, varying: Sequence[str]) -> str:
        """A short label naming only the given (varying) fields, for charts and tables.

        Lanes of the simulated model are labelled "simulated" wherever they appear.
        """
        if not varying:
            text = self.prompt
        else:
            dumped = self.model_dump(mode="json")
            dumped["schema_bounds"] = "on" if self.schema_bounds else "off"
            text = " ".join(f"{_SHORT.get(k, k)}={dumped[k]}" for k in varying)
        return f"[simulated] {text}" if is_simulated(self.backend) else text


_SHORT = {
    "fact_confidence_threshold": "thr",
    "max_facts": "max",
    "output_mode": "mode",
    "debounce_seconds": "debounce",
    "schema_bounds": "bounds",
}

AXES: tuple[str, ...] = tuple(
    name for name in LaneConfig.model_fields if name not in {"merge_params"}
)
"""Fields of :class:`LaneConfig` that a grid may vary."""


class Grid(BaseModel):
    """A sweep definition: dataset, fixed settings and the axes to vary."""

    model_config = ConfigDict(extra="forbid")

    name: str = "sweep"
    dataset: str = "smoke"
    owners: list[str] | None = None
    """Restrict to these user ids (``None`` = all)."""
    max_owners: int | None = Field(None, ge=1)
    max_sessions: int | None = Field(None, ge=1)
    replay_mode: ReplayMode = "debounce"
    base: dict[str, Any] = Field(default_factory=dict)
    """Settings shared by every lane (any :class:`LaneConfig` field)."""
    axes: dict[str, list[Any]] = Field(default_factory=dict)

    @field_validator("axes")
    @classmethod
    def _known_axes(cls, axes: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for name, values in axes.items():
            if name not in AXES and name != "merge_params":
                raise ValueError(f"unknown axis {name!r}; known axes: {', '.join(AXES)}")
            if not values:
                raise ValueError(f"axis {name!r} has no values")
        return axes

    def lanes(self) -> list[LaneConfig]:
        """Expand the grid into lane configs (cartesian product, in axis order)."""
        names = list(self.axes)
        configs: list[LaneConfig] = []
        seen: set[str] = set()
        for values in itertools.product(*(self.axes[n] for n in names)):
            data = {**self.base, **dict(zip(names, values, strict=True))}
            try:
                config = LaneConfig.model_validate(data)
            except ValidationError as exc:
                raise GridError(_format_error(f"grid {self.name!r} lane {data}", exc)) from exc
            if config.lane_id not in seen:
                seen.add(config.lane_id)
                configs.append(config)
        return configs

    def varying(self) -> list[str]:
        """Axes with more than one value (what distinguishes the lanes)."""
        return [name for name, values in self.axes.items() if len(values) > 1]

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "<grid>") -> Grid:
        """Validate a mapping, raising :class:`GridError` naming ``source`` and the field."""
        try:
            grid = cls.model_validate(dict(data))
            grid.lanes()
        except ValidationError as exc:
            raise GridError(_format_error(source, exc)) from exc
        return grid


def load_grid(path: str | Path) -> Grid:
    """Load a grid from a YAML (or JSON) file."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise GridError(f"{path}: cannot read grid: {exc}") from exc
    if not isinstance(data, Mapping):
        raise GridError(f"{path}: a grid file must hold a mapping at the top level")
    return Grid.from_mapping(data, source=str(path))


def _format_error(source: str, exc: ValidationError) -> str:
    lines = [f"{source}: invalid grid"]
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        lines.append(f"  field '{where}': {err['msg']} (got {err.get('input')!r})")
    return "\n".join(lines)
