"""Validated memory-pipeline configuration and the process-wide config accessors.

`MemoryConfig` holds every knob of the memory pipeline. It can be built directly, from a
mapping (`MemoryConfig.from_mapping`) or from a YAML file (`MemoryConfig.from_yaml`); bad
values raise `ConfigError` with one line per offending field, e.g.::

    memory.yaml: field 'max_facts': must be >= 10 (got 5) [line 4]

The pipeline reads the active configuration through `get_memory_config()` at every call, so
`set_memory_config()` (or assigning to a field of the active config, which is re-validated)
changes later behaviour without restarting anything. Components that want an explicit
dependency accept a `ConfigProvider` (any zero-argument callable returning a `MemoryConfig`);
`get_memory_config` itself is the default provider.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from memlab.core.base.yamlio import YamlInputError, key_lines, read_yaml
from memlab.core.jsondoc.contract import CONFIDENCE_BOUNDS, Bounds
from memlab.errors import MemlabError, excerpt

__all__ = [
    "DEBOUNCE_SECONDS_BOUNDS",
    "MAX_FACTS_BOUNDS",
    "MAX_INJECTION_TOKENS_BOUNDS",
    "ConfigError",
    "ConfigProvider",
    "MemoryConfig",
    "get_memory_config",
    "memlab_home",
    "reset_memory_config",
    "resolve_storage_path",
    "set_memory_config",
]

#: Environment variable that overrides the memlab home directory.
MEMLAB_HOME_ENV = "MEMLAB_HOME"
#: File name of the memory document when `storage_path` is empty.
DEFAULT_MEMORY_FILENAME = "memory.json"

# Inclusive ranges of the numeric settings, shared with the sweep's lane configs (the
# confidence threshold's range is the contract's confidence scale, CONFIDENCE_BOUNDS).
DEBOUNCE_SECONDS_BOUNDS = Bounds(1, 300)
MAX_FACTS_BOUNDS = Bounds(10, 500)
MAX_INJECTION_TOKENS_BOUNDS = Bounds(100, 8000)


class ConfigError(MemlabError, ValueError):
    """A configuration source holds invalid values.

    Attributes:
        source: Where the values came from (a file path or ``"<dict>"``).
        problems: One human-readable line per problem, each naming the source and field.
    """

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = list(problems)
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        header = f"{source}: invalid memory configuration ({count} {noun}); fix the values below"
        super().__init__("\n".join([header, *(f"  {p}" for p in self.problems)]))


class MemoryConfig(BaseModel):
    """Configuration of the memory pipeline (see the field descriptions for the rules)."""

    model_config = ConfigDict(extra="forbid", strict=True, validate_assignment=True)

    enabled: bool = Field(
        default=True, description="False short-circuits middleware, queue and updater."
    )
    storage_path: str = Field(
        default="",
        description='"" -> memory.json under the memlab home; relative -> under the home; '
        "absolute -> as is.",
    )
    debounce_seconds: int = Field(
        default=30,
        ge=DEBOUNCE_SECONDS_BOUNDS.low,
        le=DEBOUNCE_SECONDS_BOUNDS.high,
        description="Quiet period before a queued update runs.",
    )
    model_name: str | None = Field(
        default=None, description="Model for memory updates; None means the backend default."
    )
    max_facts: int = Field(
        default=100,
        ge=MAX_FACTS_BOUNDS.low,
        le=MAX_FACTS_BOUNDS.high,
        description="Cap on stored facts.",
    )
    fact_confidence_threshold: float = Field(
        default=0.7,
        ge=CONFIDENCE_BOUNDS.low,
        le=CONFIDENCE_BOUNDS.high,
        allow_inf_nan=False,
        description="New facts below this confidence are not stored.",
    )
    injection_enabled: bool = Field(
        default=True, description="Whether memory is injected into the agent prompt."
    )
    max_injection_tokens: int = Field(
        default=2000,
        ge=MAX_INJECTION_TOKENS_BOUNDS.low,
        le=MAX_INJECTION_TOKENS_BOUNDS.high,
        description="Token budget of the injected memory block.",
    )
    token_counting: Literal["tiktoken", "char"] = Field(
        default="tiktoken",
        description='"tiktoken" (cl100k_base, offline) or "char" (characters / 4).',
    )

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "<dict>") -> MemoryConfig:
        """Build a config from a mapping of field values.

        Args:
            data: Field values; missing fields take their defaults.
            source: Name used in error messages (usually the file the values came from).

        Raises:
            ConfigError: If `data` is not a mapping, has unknown keys or out-of-range values.
        """
        return cls._from_mapping(data, source, lines={})

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> MemoryConfig:
        """Load a config from a YAML file.

        The fields may sit at the top level of the document or under a ``memory:`` key (the
        layout of an application config file whose other top-level keys are ignored). An
        empty file or an empty ``memory:`` section yields the defaults.

        Raises:
            ConfigError: If the file cannot be read, is not valid YAML, or holds bad values.
        """
        source = os.fspath(path)
        try:
            document = read_yaml(source, what="config file")
        except YamlInputError as exc:
            raise ConfigError(source, [str(exc)]) from None
        node, data = document.node, document.data
        lines = key_lines(node)
        if isinstance(data, Mapping) and "memory" in data:
            section_node = _child_node(node, "memory")
            lines = key_lines(section_node)
            data = data["memory"]
        if data is None:
            data = {}
        return cls._from_mapping(data, source, lines=lines)

    @classmethod
    def _from_mapping(cls, data: Any, source: str, lines: dict[str, int]) -> MemoryConfig:
        if not isinstance(data, Mapping):
            kind = type(data).__name__
            raise ConfigError(
                source, [f"{source}: expected a mapping of memory settings, got {kind}"]
            )
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            problems = [_describe_error(err, source, lines) for err in exc.errors()]
            raise ConfigError(source, problems) from None


def _child_node(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return value_node  # type: ignore[no-any-return]
    return None


def _format_value(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return excerpt(value, 80)


def _describe_error(err: ErrorDetails, source: str, lines: dict[str, int]) -> str:
    """Turn one pydantic error into "<source>: field '<name>': <rule> (got <value>)"."""
    loc = err.get("loc", ())
    field = ".".join(str(part) for part in loc) if loc else "<root>"
    ctx = err.get("ctx") or {}
    kind = err["type"]
    got = _format_value(err.get("input"))
    if kind == "greater_than_equal":
        rule = f"must be >= {ctx.get('ge')} (got {got})"
    elif kind == "less_than_equal":
        rule = f"must be <= {ctx.get('le')} (got {got})"
    elif kind == "int_type":
        rule = f"must be a whole number (got {got})"
    elif kind == "float_type":
        rule = f"must be a number (got {got})"
    elif kind == "finite_number":
        rule = f"must be a finite number (got {got})"
    elif kind == "bool_type":
        rule = f"must be true or false (got {got})"
    elif kind == "string_type":
        rule = f"must be a string (got {got})"
    elif kind == "literal_error":
        rule = f"must be one of {ctx.get('expected')} (got {got})"
    elif kind == "extra_forbidden":
        allowed = ", ".join(MemoryConfig.model_fields)
        rule = f"unknown field; allowed fields: {allowed}"
    else:
        rule = f"{err['msg']} (got {got})"
    line = lines.get(str(loc[0])) if loc else None
    where = f" [line {line}]" if line is not None else ""
    return f"{source}: field '{field}': {rule}{where}"


def memlab_home() -> Path:
    """Return the memlab home directory: ``$MEMLAB_HOME`` if set, else ``~/.memlab``."""
    override = os.environ.get(MEMLAB_HOME_ENV, "").strip()
    if override:
        return Path(override).expanduser()
    return Path.home() / ".memlab"


def resolve_storage_path(config: MemoryConfig, home: Path | None = None) -> Path:
    """Resolve `config.storage_path` to the memory document's file path.

    Args:
        config: The active configuration.
        home: Base directory; defaults to `memlab_home()`.

    Returns:
        ``home / "memory.json"`` for an empty path, ``home / path`` for a relative path and
        the path itself for an absolute one (``~`` is expanded first).
    """
    base = home if home is not None else memlab_home()
    raw = config.storage_path.strip()
    if not raw:
        return base / DEFAULT_MEMORY_FILENAME
    path = Path(raw).expanduser()
    if path.is_absolute():
        return path
    return base / path


ConfigProvider = Callable[[], MemoryConfig]
"""Zero-argument callable returning the configuration to use for the current call."""

_lock = threading.Lock()
_active: MemoryConfig | None = None


def get_memory_config() -> MemoryConfig:
    """Return the active configuration (defaults until `set_memory_config` is called).

    The same object is returned until it is replaced, so assigning to one of its fields
    (validated) is visible to every component that reads the config at call time.
    """
    global _active
    with _lock:
        if _active is None:
            _active = MemoryConfig()
        return _active


def set_memory_config(config: MemoryConfig) -> None:
    """Make `config` the active configuration for all later calls."""
    if not isinstance(config, MemoryConfig):
        raise TypeError(f"set_memory_config expects a MemoryConfig, got {type(config).__name__}")
    global _active
    with _lock:
        _active = config


def reset_memory_config() -> None:
    """Drop the active configuration; the next `get_memory_config()` returns defaults."""
    global _active
    with _lock:
        _active = None
