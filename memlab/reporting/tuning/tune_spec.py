"""The ``tune:`` key of a grid file: what :func:`memlab.reporting.tuning.tune.tune` searches.

A tune grid is an ordinary one-lane grid (its ``base`` is the starting configuration) plus::

    tune:
      space:                                   # what the search may change
        fact_confidence_threshold: {low: 0.5, high: 0.9, step: 0.05}
        max_facts: {low: 20, high: 200, step: 20}
        max_injection_tokens: {low: 500, high: 4000}
        prompt: [default, prompts/self_only.txt]   # names or prompt files (beside the grid)
        # tiered.importance_threshold: {low: 0.5, high: 0.9}   (a memory: tiered lane)
        # answer_prompt: [default, short.txt]    (with a qa: key and a QA objective)
      objective: {metric: recall, max: {parse_failure_rate: 0.1}}
      split: {train: 0.5, validation: 0.2, test: 0.3, seed: 0}
      max_trials: 20
      max_time: 3600                           # seconds; no candidate starts after them
      max_calls: 5000                          # calls sent to the model (cache misses)
      max_total_tokens: 2000000                # their prompt + completion tokens
      tolerance: 0.05
      evolve: {reflect_backend: "openai:gpt-4o-mini", max_metric_calls: 40}   # optional

The objective is one primary metric, in its own direction, under upper limits on others; the
split is a seeded shuffle of the grid's owners, fixed before the search starts. ``evolve``
rewrites the starting update prompt from the train owners' failure records before the search
(:mod:`memlab.reporting.tuning.tune_evolve`); its prompts join the candidates.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from memlab.core.base.yamlio import YamlInputError, key_lines, read_yaml
from memlab.grids.grid import Grid, GridError
from memlab.scoring.metric_specs import metric_spec, primary_metrics
from memlab.sweeps.grid_check import check_grid

__all__ = [
    "LIST_SETTINGS",
    "NUMERIC_SETTINGS",
    "Evolve",
    "Objective",
    "OwnerSplit",
    "Range",
    "SplitSpec",
    "TuneSpec",
    "load_tune",
    "split_owners",
]

NUMERIC_SETTINGS: dict[str, type] = {
    "fact_confidence_threshold": float,
    "max_facts": int,
    "max_injection_tokens": int,
    "tiered.importance_threshold": float,
    "tiered.decay_per_day": float,
    "tiered.delete_below": float,
    "tiered.recall_k": int,
}
"""Lane settings a search may vary as a numeric range, with their type (``tiered.*``: the
tiered memory's options, on a ``memory: tiered`` lane)."""
LIST_SETTINGS = ("prompt", "answer_prompt")
"""Settings a search chooses from a list: update prompts and answer prompts (names or files)."""


class Range(BaseModel):
    """A numeric range of one setting: ``low`` to ``high`` (both included), by ``step``."""

    model_config = ConfigDict(extra="forbid")

    low: float
    high: float
    step: float | None = Field(None, gt=0)
    log: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if self.low > self.high:
            raise ValueError(f"low {self.low} is above high {self.high}: swap them")
        if self.log and (self.low <= 0 or self.step is not None):
            raise ValueError("a log range needs low > 0 and no step")
        return self

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int | float) and self.low <= value <= self.high


class Objective(BaseModel):
    """One primary metric to improve (in its own direction), under upper limits on others."""

    model_config = ConfigDict(extra="forbid")

    metric: str = "recall"
    max: dict[str, float] = Field(default_factory=dict)
    """Upper limits: a candidate whose rate is above one is infeasible (``parse_failure_rate:
    0.1``)."""

    @field_validator("metric")
    @classmethod
    def _primary(cls, name: str) -> str:
        try:
            return primary_metrics([name])[0]
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None

    @field_validator("max")
    @classmethod
    def _known(cls, limits: dict[str, float]) -> dict[str, float]:
        for name in limits:
            try:
                metric_spec(name)
            except KeyError as exc:
                raise ValueError(exc.args[0]) from None
        return limits

    @property
    def higher_is_better(self) -> bool:
        return bool(metric_spec(self.metric).higher_is_better)


class SplitSpec(BaseModel):
    """Shares of the owners for training, validation and the held-out test, and the seed."""

    model_config = ConfigDict(extra="forbid")

    train: float = Field(0.5, gt=0, lt=1)
    validation: float = Field(0.2, ge=0, lt=1)
    test: float = Field(0.3, gt=0, lt=1)
    seed: int = 0

    @model_validator(mode="after")
    def _whole(self) -> SplitSpec:
        total = self.train + self.validation + self.test
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"train + validation + test must be 1, got {total:g}")
        return self


class Evolve(BaseModel):
    """Prompt evolution from failure records: who rewrites the prompt and how many owner
    evaluations the evolution may spend."""

    model_config = ConfigDict(extra="forbid")

    reflect_backend: str = Field(min_length=1)
    """The backend that rewrites the prompt (``openai:gpt-4o-mini``); a ``sim:PROFILE`` spec is
    the simulated reflector of :mod:`memlab.simulation.reflector` (a test instrument)."""
    max_metric_calls: int = Field(40, ge=1, le=100_000, strict=True)
    """Owner replays (one candidate prompt on one owner each) the evolution may spend."""
    minibatch: int = Field(3, ge=1, le=1000, strict=True)
    """Train owners whose failures each rewrite reads."""


class TuneSpec(BaseModel):
    """The ``tune:`` key: search space, objective, owner split and budget."""

    model_config = ConfigDict(extra="forbid")

    space: dict[str, Range | list[str]] = Field(min_length=1)
    objective: Objective = Field(default_factory=lambda: Objective.model_validate({}))
    split: SplitSpec = Field(default_factory=lambda: SplitSpec.model_validate({}))
    max_trials: int = Field(20, ge=1, le=10_000, strict=True)
    max_time: float | None = Field(None, gt=0)
    """Seconds after which no candidate starts (``memlab tune --max-time``); none by default."""
    max_calls: int | None = Field(None, ge=1, strict=True)
    """Calls sent to the model (replies from the cache not counted) after which no candidate,
    replay or reflection call starts (``memlab tune --max-calls``); none by default."""
    max_total_tokens: int | None = Field(None, ge=1, strict=True)
    """Prompt + completion tokens of those calls after which nothing starts
    (``memlab tune --max-total-tokens``); none by default."""
    tolerance: float = Field(0.05, gt=0, lt=1)
    """The smallest difference the held-out verdict must be able to see (as ``memlab ab``)."""
    seed: int = 0
    """The sampler's seed."""
    evolve: Evolve | None = None
    """Evolve the update prompt from failure records before the search (off when absent)."""

    @field_validator("space")
    @classmethod
    def _known_settings(cls, space: dict[str, Any]) -> dict[str, Any]:
        for name, values in space.items():
            if name in LIST_SETTINGS:
                if not isinstance(values, list) or not values:
                    raise ValueError(f"{name}: a non-empty list of prompt names or files")
            elif name not in NUMERIC_SETTINGS:
                known = ", ".join([*NUMERIC_SETTINGS, *LIST_SETTINGS])
                raise ValueError(f"{name}: not a setting the search can vary; known: {known}")
            elif not isinstance(values, Range):
                raise ValueError(f"{name}: a range {{low: ..., high: ..., step: ...}}")
        return space

    def ranges(self) -> dict[str, Range]:
        """The numeric ranges, by setting."""
        return {k: v for k, v in self.space.items() if isinstance(v, Range)}

    def prompts(self) -> list[str]:
        """The candidate prompts as written (names or files)."""
        found = self.space.get("prompt")
        return list(found) if isinstance(found, list) else []


@dataclass(frozen=True)
class OwnerSplit:
    """The owners of each part, fixed by the split's seed (each in dataset order)."""

    train: tuple[str, ...]
    validation: tuple[str, ...]
    test: tuple[str, ...]
    seed: int

    def text(self) -> str:
        return (
            f"owners: {len(self.train)} train, {len(self.validation)} validation, "
            f"{len(self.test)} held-out test (seeded shuffle, seed {self.seed}); "
            f"test: {', '.join(self.test)}"
        )


def split_owners(owners: Sequence[str], split: SplitSpec, source: str = "<grid>") -> OwnerSplit:
    """Shuffle ``owners`` with the split's seed and cut them by its shares (test and
    validation rounded, train the rest).

    Raises:
        GridError: A part would hold no owner.
    """
    shuffled = list(owners)
    random.Random(split.seed).shuffle(shuffled)
    n_test = round(split.test * len(shuffled))
    n_val = round(split.validation * len(shuffled))
    test, val, train = (
        set(shuffled[:n_test]),
        set(shuffled[n_test : n_test + n_val]),
        set(shuffled[n_test + n_val :]),
    )
    if not test or not train or (split.validation > 0 and not val):
        raise GridError(
            source,
            "tune.split",
            f"{len(shuffled)} owners cannot be split {split.train:g}/{split.validation:g}/"
            f"{split.test:g} with an owner in every part: use a larger dataset or other shares",
        )
    return OwnerSplit(
        tuple(o for o in owners if o in train),
        tuple(o for o in owners if o in val),
        tuple(o for o in owners if o in test),
        split.seed,
    )


def _tune_error(source: str, exc: ValidationError, lines: Mapping[str, int]) -> GridError:
    err = exc.errors()[0]
    key = ".".join(["tune", *(str(p) for p in err["loc"])])
    line = next((lines[k] for k in (key, key.rsplit(".", 1)[0], "tune") if k in lines), None)
    return GridError(source, key, str(err["msg"]).removeprefix("Value error, "), line)


def load_tune(path: str | Path) -> tuple[Grid, TuneSpec]:
    """Read a tune grid file: the starting grid (one lane) and its ``tune:`` key.

    Raises:
        GridError: Naming the file, the line and the key at fault.
    """
    path = Path(path)
    try:
        document = read_yaml(path, what="grid file")
    except YamlInputError as exc:
        raise GridError(str(path), "", str(exc).removeprefix(f"{path}: ")) from None
    data, lines = document.data, key_lines(document.node)
    if not isinstance(data, Mapping) or "tune" not in data:
        raise GridError(str(path), "tune", "a tune grid needs a tune: key (space, objective...)")
    rest = {k: v for k, v in data.items() if k != "tune"}
    grid = Grid.from_mapping(rest, str(path), base_dir=path.parent, lines=lines)
    check_grid(grid, None)
    if len(grid.lanes()) != 1:
        raise grid.error("axes", "a tune grid starts from one lane: move the axes to tune.space")
    try:
        spec = TuneSpec.model_validate(data["tune"])
    except ValidationError as exc:
        raise _tune_error(str(path), exc, lines) from None
    return grid, spec
