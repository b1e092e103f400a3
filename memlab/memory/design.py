"""What a memory design declares: how a replay builds it, what it depends on, how it is read.

A lane's ``memory`` setting names a :class:`MemoryDesign` in the registry of
:mod:`memlab.memory.designs` (``deerflow``, ``tiered``, or one a plugin registers). The replay,
the planner and memory QA ask the design, never the name:

- :attr:`~MemoryDesign.open` builds the :class:`~memlab.memory.strategy.MemoryStrategy` one
  (lane, owner, sample) replay drives, from a :class:`DesignContext` the replay fills;
- :attr:`~MemoryDesign.identity` is what a replay depends on besides the lane's update
  settings (it enters the lane id, so a changed design replays again);
- :attr:`~MemoryDesign.read` wraps the lane's injection path: how an agent reads the memory
  at the next session and when it answers a question;
- the flags say whether it forgets (its replays record forgetting events), whether a fork may
  start it from a DeerFlow memory document, and the injected context's layout; a design whose
  options change the first or the last (the procedural design's ``facts: tiered``) declares
  :attr:`~MemoryDesign.lane_flags`, and readers ask :meth:`~MemoryDesign.forgets_in` and
  :meth:`~MemoryDesign.history_last_in` with the lane's settings;
- :attr:`~MemoryDesign.options` and :attr:`~MemoryDesign.options_model`: the lane key of its
  own options and their pydantic model (``tiered: {recall_k: 5}``; a plugin's design declares
  its own the same way, and a grid sets them under that key).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memlab.core.jsondoc.document import MemoryDocument
from memlab.core.jsondoc.parsing import ParseOptions
from memlab.core.pipeline.injection import Injection
from memlab.core.pipeline.llm import Backend, GenerationParams, OutputMode
from memlab.core.pipeline.storage import InMemoryStorage
from memlab.core.pipeline.updater import MemoryUpdater
from memlab.memory.strategy import MemoryStrategy

__all__ = ["DesignContext", "DesignFlags", "Injector", "MemoryDesign", "Reader"]

Injector = Callable[[Mapping[str, Any], str], Injection]
"""Renders a memory document for a query: ``(memory, query) -> Injection`` (the query is the
next session's first message, or the question)."""

Reader = Callable[[Injector], Injector]
"""A design's read path: the lane's injector (budget, token counting, policy) in, the
injector an agent reads this design's memory through out."""


@dataclass(frozen=True)
class DesignContext:
    """What a replay gives a design to open one owner's memory.

    Attributes:
        backend: The lane's backend (the response cache wraps it in a sweep).
        output_mode: The lane's output mode.
        params: Sampling parameters (the repeated sample's seed included).
        parse_options: The lane's parse ladder.
        sample: Index of the repeated sample.
        clock: The replay's virtual clock.
        store_path: The owner's JSON store file; a design keeps its own files beside it
            (see :attr:`MemoryDesign.scratch`).
        ids: Fact ids seeded by the lane's grid point and the owner.
        settings: The lane's settings as JSON values
            (:meth:`memlab.grids.lane.LaneConfig.settings`).
        updater: The lane's DeerFlow updater over a store (prompt, merge, parse, request).
        start: The memory a fork starts from (only for a design with ``forks``).
    """

    backend: Backend
    output_mode: OutputMode
    params: GenerationParams
    parse_options: ParseOptions
    sample: int
    clock: Callable[[], datetime]
    store_path: Path
    ids: Callable[[], str]
    settings: Mapping[str, Any]
    updater: Callable[[InMemoryStorage], MemoryUpdater]
    start: MemoryDocument | None = None


@dataclass(frozen=True)
class DesignFlags:
    """A lane's flags where a design's options decide them (:attr:`MemoryDesign.lane_flags`).

    Attributes:
        forgets: The lane's replays record forgetting events.
        history_last: The lane's injected context puts History after the facts.
    """

    forgets: bool = False
    history_last: bool = False


def _no_scratch(store_path: Path) -> tuple[Path, ...]:
    return ()


@dataclass(frozen=True)
class MemoryDesign:
    """One memory design, registered by name (see the module docstring).

    Attributes:
        description: One line for listings (``memlab plugins``).
        open: Builds the strategy of one replay.
        identity: ``identity(settings)``: what a replay depends on besides the lane's update
            settings (JSON values); ``None`` adds nothing to the lane's identity (DeerFlow's
            lanes keep the ids they had before designs existed).
        forgets: Its replays record forgetting events (``forgetting`` in owner records).
        forks: A fork may start it from a reference lane's DeerFlow memory document.
        history_last: The injected context puts History after the facts.
        options: The lane key of its own options (``tiered``); a lane of another design
            setting them is refused. A key that is already a lane setting's name is never
            read as options.
        options_model: The pydantic model of those options (``extra="forbid"``, every field
            with a default); the lane keeps the options that differ from the defaults, so a
            lane at the defaults keeps its id.
        scratch: ``scratch(store_path)``: the files a replay writes beside the store file
            (removed and rewritten by every replay).
        read: Wraps the lane's injector into this design's read path; ``None``: the
            injector as is.
        lane_flags: ``lane_flags(settings)``: ``forgets`` and ``history_last`` as a lane's
            settings (JSON values) decide them; ``None``: the two fields above for every lane.
    """

    description: str
    open: Callable[[DesignContext], MemoryStrategy]
    identity: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    forgets: bool = False
    forks: bool = False
    history_last: bool = False
    options: str | None = None
    scratch: Callable[[Path], tuple[Path, ...]] = _no_scratch
    read: Reader | None = None
    options_model: type[BaseModel] | None = None
    lane_flags: Callable[[Mapping[str, Any]], DesignFlags] | None = None

    def __post_init__(self) -> None:
        model = self.options_model
        if model is None:
            return
        if self.options is None:
            raise ValueError("a design with an options_model names its options key (options=)")
        if model.model_config.get("extra") != "forbid":
            raise ValueError(
                f"the options model {model.__name__} must refuse unknown keys: set "
                'model_config = ConfigDict(extra="forbid")'
            )

    def options_of(self, settings: Mapping[str, Any]) -> Any:
        """This design's options in a lane's settings (``DesignContext.settings``), as its
        :attr:`options_model` (the defaults where the lane sets none).

        Raises:
            ValueError: The design declares no options model.
        """
        if self.options is None or self.options_model is None:
            raise ValueError("this memory design declares no options")
        return self.options_model.model_validate(settings.get(self.options) or {})

    def changed_options(self, value: Any) -> dict[str, Any]:
        """``value`` validated by :attr:`options_model`, as the JSON values that differ from
        the defaults (what a lane keeps and writes).

        Raises:
            pydantic.ValidationError: ``value`` is not valid options.
            ValueError: The design declares no options model.
        """
        if self.options_model is None:
            raise ValueError("this memory design declares no options")
        options = self.options_model.model_validate(value)
        return options.model_dump(mode="json", exclude_defaults=True)

    def flags_in(self, settings: Mapping[str, Any]) -> DesignFlags:
        """The flags of a lane with ``settings`` (``LaneConfig.settings()``)."""
        if self.lane_flags is None:
            return DesignFlags(self.forgets, self.history_last)
        return self.lane_flags(settings)

    def forgets_in(self, settings: Mapping[str, Any]) -> bool:
        """Whether a lane with ``settings`` forgets (its replays record forgetting events)."""
        return self.flags_in(settings).forgets

    def history_last_in(self, settings: Mapping[str, Any]) -> bool:
        """Whether a lane with ``settings`` injects History after the facts."""
        return self.flags_in(settings).history_last

    def reader(self, inject: Injector) -> Injector:
        """The injector an agent reads this design's memory through."""
        return inject if self.read is None else self.read(inject)
