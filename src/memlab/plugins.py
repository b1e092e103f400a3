"""One registry pattern for everything memlab resolves by name, built-ins and plugins alike.

Each kind of named thing has one :class:`Registry`, declared by the module that owns the kind;
that module registers its built-ins in it through :meth:`Registry.register`, the same call a
plugin makes:

====================  ==================================  ==========================================
kind                  declared in                         an entry is
====================  ==================================  ==========================================
backend               :mod:`memlab.backends.registry`     a ``BackendPlugin``: factory, capabilities
script                :mod:`memlab.backends.scripted`     a reply function (``scripted:NAME``)
merge                 :mod:`memlab.core.merge`            a merge strategy factory
parse_preset          :mod:`memlab.core.parsing`          a ``ParseOptions`` factory
prompt                :mod:`memlab.core.prompts`          a loader of a ``PromptVariant``
answer_prompt         :mod:`memlab.core.qa_prompts`       a loader of an ``AnswerPrompt``
judge_prompt          :mod:`memlab.core.qa_prompts`       a loader of a QA ``JudgePrompt``
matcher               :mod:`memlab.matching.matchers`     a ``MatcherPlugin``
matcher_judge_prompt  :mod:`memlab.matching.judge`        a fact judge's prompt template
sim_profile           :mod:`memlab.simulation.profile`    a simulated-model profile (or its file)
metric                :mod:`memlab.scoring.metric_specs`  a ``MetricSpec``, by summary column
run_view              :mod:`memlab.sweeps.views`          how a ``Run`` shows itself (``html``)
====================  ==================================  ==========================================

**Plugins** are installed packages that declare entry points in the group ``memlab.plugins``;
each names a module (importing it registers its entries) or a function of no arguments
(calling it does)::

    [project.entry-points."memlab.plugins"]
    echo = "memlab_echo:register"

The first read of any registry imports every plugin once per process, so the command line and
each Dask worker process see an installed plugin without any configuration. memlab declares its
own entry points the same way for the entries a lower layer must find without importing a
higher one: the backends (the core's updater without a backend uses ``auto``), the simulated
model (``sim:``, from :mod:`memlab.simulation`) and the HTML view of a run (from
:mod:`memlab.reporting`). ``memlab plugins`` lists every registry's entries and who
registered them. A plugin that fails to import is reported once and skipped;
the error of a name it would have provided mentions it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from memlab.errors import MemlabError, excerpt

if TYPE_CHECKING:
    from importlib import metadata

__all__ = [
    "PLUGIN_GROUP",
    "PluginError",
    "Registry",
    "declare",
    "failure_hint",
    "load_plugins",
    "plugin_failures",
    "registries",
    "registry",
    "split_spec",
]

logger = logging.getLogger(__name__)

PLUGIN_GROUP = "memlab.plugins"
"""The entry point group memlab loads plugins from."""

T = TypeVar("T")


class PluginError(MemlabError, LookupError):
    """A name no registry entry has, a name registered twice, or a kind nobody declared."""


def split_spec(spec: str) -> tuple[str, str]:
    """``"NAME:ARGUMENT"`` -> ``(NAME, ARGUMENT)`` (``ARGUMENT`` may itself hold colons):
    the one grammar of backend and matcher specs (``openai:gpt-4o``, ``judge:local:smollm2``)."""
    name, _, argument = spec.strip().partition(":")
    return name, argument


class Registry(Mapping[str, T]):
    """The named entries of one kind (see the module docstring), in registration order.

    Reading it (``registry[name]``, ``name in registry``, iterating) first loads the installed
    plugins. :meth:`lookup` raises an error that lists the known names.

    Args:
        kind: The kind's name (``"backend"``).
        what: What a name is, for messages (``"backend prefix"``).
        unknown: Builds the error for an unknown name from the name and the known names
            (default: a :class:`PluginError`).
    """

    def __init__(
        self,
        kind: str,
        what: str,
        *,
        unknown: Callable[[str, Sequence[str]], Exception] | None = None,
    ) -> None:
        self.kind = kind
        self.what = what
        self._unknown = unknown
        self._entries: dict[str, T] = {}
        self._origins: dict[str, str] = {}
        self._lock = threading.RLock()

    def register(self, name: str, entry: T, *, replace: bool = False) -> T:
        """Add ``entry`` under ``name`` and return it.

        Raises:
            PluginError: ``name`` is taken and ``replace`` is false.
        """
        if not isinstance(name, str) or not name.strip():
            raise PluginError(f"a {self.what} needs a non-empty name, got {name!r}")
        with self._lock:
            if name in self._entries and not replace:
                raise PluginError(
                    f"{self.what} {name!r} is already registered (by {self._origins[name]}); "
                    "pick another name or pass replace=True"
                )
            self._entries[name] = entry
            self._origins[name] = _loading.origin
        return entry

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a no-op when absent)."""
        with self._lock:
            self._entries.pop(name, None)
            self._origins.pop(name, None)

    def lookup(self, name: str) -> T:
        """The entry called ``name``.

        Raises:
            PluginError (or the registry's own error): Naming the known names.
        """
        entry = self.get(name)
        if entry is not None:
            return entry
        known = list(self)
        if self._unknown is not None:
            raise self._unknown(name, known)
        raise PluginError(
            f"unknown {self.what} {excerpt(name)}; known: {', '.join(known) or '(none)'}"
            + failure_hint()
        )

    def origin(self, name: str) -> str:
        """Who registered ``name``: ``memlab`` or the plugin's entry point."""
        load_plugins()
        with self._lock:
            return self._origins[name]

    def __getitem__(self, name: str) -> T:
        load_plugins()
        with self._lock:
            return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        load_plugins()
        with self._lock:
            return iter(list(self._entries))

    def __len__(self) -> int:
        load_plugins()
        with self._lock:
            return len(self._entries)

    def builtins(self) -> dict[str, T]:
        """The entries memlab itself registered, without loading plugins (for help texts,
        which every command builds, so that `memlab --help` imports no plugin)."""
        with self._lock:
            return {
                name: entry
                for name, entry in self._entries.items()
                if self._origins[name] == "memlab"
            }

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} entries)"


_registries: dict[str, Registry[Any]] = {}
_declare_lock = threading.Lock()


def declare(
    kind: str,
    what: str,
    *,
    unknown: Callable[[str, Sequence[str]], Exception] | None = None,
) -> Registry[Any]:
    """Create the registry of ``kind`` (once, by the module that owns the kind)."""
    with _declare_lock:
        if kind in _registries:
            raise PluginError(f"the registry of {kind!r} entries is declared twice")
        created: Registry[Any] = Registry(kind, what, unknown=unknown)
        _registries[kind] = created
        return created


def registry(kind: str) -> Registry[Any]:
    """The registry of ``kind``, for a module that must not import the one declaring it.

    Raises:
        PluginError: No module (and no plugin) declared the kind.
    """
    load_plugins()
    with _declare_lock:
        found = _registries.get(kind)
        known = sorted(_registries)
    if found is None:
        raise PluginError(
            f"no registry of {kind!r} entries (known kinds: {', '.join(known)}); is memlab "
            "installed (pip install -e .)? Its own entry points declare some of them"
        )
    return found


def registries() -> dict[str, Registry[Any]]:
    """Every declared registry by kind (plugins loaded first)."""
    load_plugins()
    with _declare_lock:
        return dict(sorted(_registries.items()))


class _Loading(threading.local):
    """Who is registering: ``memlab`` unless a plugin is being loaded in this thread."""

    origin = "memlab"


_loading = _Loading()
_load_lock = threading.RLock()
_state = "new"  # "new" -> "loading" -> "done"
_failures: dict[str, str] = {}


def load_plugins() -> None:
    """Import every ``memlab.plugins`` entry point once per process (see the module docstring).

    A plugin that raises while loading is logged and skipped; :func:`plugin_failures` lists it.
    """
    global _state
    if _state == "done":
        return
    with _load_lock:
        if _state != "new":  # done by another thread, or a plugin reading while it loads
            return
        _state = "loading"
        try:
            for entry_point in sorted(_entry_points(), key=lambda ep: ep.name):
                _load(entry_point)
        finally:
            _state = "done"


def _entry_points() -> Sequence[metadata.EntryPoint]:
    # Imported here: reading the installed packages' metadata costs a start that never
    # loads plugins (`memlab --help`) tens of milliseconds.
    from importlib import metadata

    return list(metadata.entry_points(group=PLUGIN_GROUP))


def _load(entry_point: metadata.EntryPoint) -> None:
    label = f"{entry_point.name} = {entry_point.value}"
    dist = entry_point.dist.name if entry_point.dist is not None else "?"
    _loading.origin = "memlab" if dist == "memlab" else f"plugin {label} ({dist})"
    try:
        loaded = entry_point.load()
        if callable(loaded):
            loaded()
    except Exception as exc:  # any plugin bug: report it, keep memlab usable
        _failures[label] = f"{type(exc).__name__}: {excerpt(str(exc), 200)}"
        logger.warning("memlab plugin %s failed to load: %s", label, _failures[label])
    finally:
        _loading.origin = "memlab"


def plugin_failures() -> dict[str, str]:
    """Plugins that failed to load (``name = value`` -> the error), after loading them."""
    load_plugins()
    return dict(_failures)


def failure_hint() -> str:
    """A clause for an unknown-name error when some plugin failed to load ("" otherwise)."""
    if not _failures:
        return ""
    return (
        " (plugins that failed to load: "
        + "; ".join(f"{label}: {error}" for label, error in _failures.items())
        + ")"
    )
