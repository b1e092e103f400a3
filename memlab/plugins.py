"""One registry pattern for everything memlab resolves by name, built-ins and plugins alike.

Each kind of named thing has one :class:`Registry`, declared by the module that owns the kind
with its built-ins (:func:`declare`'s ``builtins``), which go through :meth:`Registry.register`,
the same call a plugin makes:

=========================  ==================================  =====================================
kind                       declared in                         an entry is
=========================  ==================================  =====================================
backend                    :mod:`memlab.backends.registry`     a ``BackendPlugin`` (its abilities)
script                     :mod:`memlab.backends.scripted`     a reply function (``scripted:NAME``)
merge                      :mod:`memlab.core.jsondoc.merge`            a merge strategy factory
parse_preset               :mod:`memlab.core.jsondoc.parsing`          a ``ParseOptions`` factory
prompt                     :mod:`memlab.core.prompts`          a loader of a ``PromptVariant``
answer_prompt              :mod:`memlab.qa.qa_prompts`         a loader of an ``AnswerPrompt``
judge_prompt               :mod:`memlab.qa.qa_prompts`         a loader of a QA ``JudgePrompt``
tiered_summary_prompt      :mod:`memlab.core.tiered_prompts`   a loader of the summary prompt
tiered_importance_prompt   :mod:`memlab.core.tiered_prompts`   a loader of the importance prompt
tiered_compression_prompt  :mod:`memlab.core.tiered_prompts`   a loader of the compression prompt
memory_design              :mod:`memlab.memory.designs`        a ``MemoryDesign`` (``memory:``)
injection_policy           :mod:`memlab.memory.policies`       an ``InjectionPolicy`` (its ranking)
qa_condition               :mod:`memlab.qa.conditions`         a ``QACondition`` (what QA reads)
dataset                    :mod:`memlab.datasets.registry`     a ``NamedDataset`` (its JSONL file)
matcher                    :mod:`memlab.matching.matchers`     a ``MatcherPlugin``
matcher_judge_prompt       :mod:`memlab.matching.judge`        a fact judge's prompt template
sim_profile                :mod:`memlab.simulation.profile`    a simulated-model profile or its file
metric                     :mod:`memlab.scoring.metric_specs`  a ``MetricSpec``, by summary column
run_view                   :mod:`memlab.runs.views`            how a ``Run`` shows itself (html)
=========================  ==================================  =====================================

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
registered them.

The rules every registration follows, in :meth:`Registry.register` (the one path):

- a name is lowercase letters, digits, ``_``, ``-`` and ``.``, starts with a letter or digit,
  holds no ``..`` and has at most 64 characters (it appears in specs such as ``PREFIX:ARG``);
- an entry is of the registry's type (a ``BackendPlugin`` for ``backend``, ...);
- memlab's own entry points load first, and a third-party plugin cannot replace or remove a
  built-in.

A plugin is never allowed to take memlab down: importing or calling it runs under a guard that
turns any exception, ``SystemExit`` and a ``KeyboardInterrupt`` it raises itself (not a
Ctrl-C) into one warning naming its entry point and distribution, and skips the plugin; each
registration it makes that breaks a rule is one warning and is skipped, the rest of the
plugin loads. The error of a name a failed plugin would have provided mentions it.
"""

from __future__ import annotations

import logging
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from memlab.errors import MemlabError, excerpt, one_line

if TYPE_CHECKING:
    from importlib import metadata
    from types import FrameType

__all__ = [
    "NAME_RULE",
    "PLUGIN_GROUP",
    "EntryCheck",
    "PluginError",
    "RegistrationError",
    "Registry",
    "callable_entry",
    "declare",
    "failure_hint",
    "instance_of",
    "load_plugins",
    "name_problem",
    "plugin_failures",
    "plugin_warnings",
    "registries",
    "registry",
    "split_spec",
]

logger = logging.getLogger(__name__)

PLUGIN_GROUP = "memlab.plugins"
"""The entry point group memlab loads plugins from."""

NAME_RULE = (
    "lowercase letters, digits, '_', '-' and '.', starting with a letter or digit, "
    "without '..', at most 64 characters"
)
"""What a registered name may be, for messages."""

_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")

T = TypeVar("T")

EntryCheck = Callable[[str, Any], str]
"""``check(name, entry)``: why a registry refuses ``entry`` under ``name`` ("" accepts it)."""


class PluginError(MemlabError, LookupError):
    """A name no registry entry has, a name registered twice, or a kind nobody declared."""


class RegistrationError(PluginError, ValueError):
    """A registration that breaks a rule: a bad name, an entry of the wrong type, a name taken.

    Attributes:
        kind: The registry's kind (``"backend"``).
        name: The name asked for.
    """

    def __init__(self, message: str, *, kind: str, name: object) -> None:
        super().__init__(message)
        self.kind = kind
        self.name = name


def split_spec(spec: str) -> tuple[str, str]:
    """``"NAME:ARGUMENT"`` -> ``(NAME, ARGUMENT)`` (``ARGUMENT`` may itself hold colons):
    the one grammar of backend and matcher specs (``openai:gpt-4o``, ``judge:local:smollm2``)."""
    name, _, argument = spec.strip().partition(":")
    return name, argument


def name_problem(name: object) -> str:
    """Why ``name`` cannot be registered ("" when it can): see :data:`NAME_RULE`."""
    if not isinstance(name, str):
        return f"a name is a string, got {type(name).__name__}"
    if not _NAME.fullmatch(name) or ".." in name:
        return f"a name is {NAME_RULE}"
    return ""


def instance_of(*types: type) -> EntryCheck:
    """The check of a registry whose entries are instances of ``types``."""
    wanted = " or ".join(t.__name__ for t in types)

    def check(name: str, entry: Any) -> str:
        if isinstance(entry, types):
            return ""
        return f"an entry is a {wanted}, got {type(entry).__name__}"

    return check


def callable_entry(name: str, entry: Any) -> str:
    """The check of a registry of functions (factories, loaders, reply functions)."""
    return "" if callable(entry) else f"an entry is a callable, got {type(entry).__name__}"


@dataclass(frozen=True)
class _Source:
    """Who is registering while a plugin loads: its entry point and distribution."""

    label: str  # "NAME = module:function"
    dist: str
    builtin: bool  # memlab's own entry point

    @property
    def origin(self) -> str:
        return "memlab" if self.builtin else f"plugin {self.label} ({self.dist})"

    def __str__(self) -> str:
        return f"memlab plugin {self.label} from distribution {self.dist}"


class Registry(Mapping[str, T]):
    """The named entries of one kind (see the module docstring), in registration order.

    Reading it (``registry[name]``, ``name in registry``, iterating) first loads the installed
    plugins. :meth:`lookup` raises an error that lists the known names.

    Args:
        kind: The kind's name (``"backend"``).
        what: What a name is, for messages (``"backend prefix"``).
        unknown: Builds the error for an unknown name from the name and the known names
            (default: a :class:`PluginError`).
        check: Why an entry is refused (:func:`instance_of`, :func:`callable_entry`); any
            entry is accepted without one.
        reserved: Names registered once (by memlab) and never replaced.
    """

    def __init__(
        self,
        kind: str,
        what: str,
        *,
        unknown: Callable[[str, Sequence[str]], Exception] | None = None,
        check: EntryCheck | None = None,
        reserved: frozenset[str] = frozenset(),
    ) -> None:
        self.kind = kind
        self.what = what
        self._unknown = unknown
        self._check = check
        self._reserved = reserved
        self._entries: dict[str, T] = {}
        self._origins: dict[str, str] = {}
        self._lock = threading.RLock()

    def register(self, name: str, entry: T, *, replace: bool = False) -> T:
        """Add ``entry`` under ``name`` and return it (the rules: the module docstring).

        While a third-party plugin loads, a registration that breaks a rule is logged as one
        warning naming the plugin and skipped (the plugin's other registrations proceed).

        Raises:
            RegistrationError: Otherwise, for a registration that breaks a rule; a taken name
                is one unless ``replace`` is true (a reserved name always is).
        """
        source = _registrant()
        with self._lock:
            problem = self._problem(name, entry, replace, source)
            if not problem:
                self._entries[name] = entry
                self._origins[name] = "memlab" if source is None else source.origin
                return entry
        if source is None or source.builtin:
            raise RegistrationError(problem, kind=self.kind, name=name)
        _warn(f"{source}: {problem}; skipped")
        return entry

    def _problem(self, name: str, entry: Any, replace: bool, source: _Source | None) -> str:
        """Why this registration is refused ("" when it is not); called under the lock."""
        subject = f"{self.what} {excerpt(name)}"
        bad_name = name_problem(name)
        if bad_name:
            return f"invalid {subject}: {bad_name}"
        if name in self._reserved and name in self._origins:
            return f"invalid {subject}: the name is reserved"
        bad_entry = self._check(name, entry) if self._check is not None else ""
        if bad_entry:
            return f"invalid {subject}: {bad_entry}"
        taken = self._origins.get(name)
        if taken == "memlab" and source is not None and not source.builtin:
            return (
                f"{subject} is memlab's built-in, which a plugin cannot replace; pick another name"
            )
        if taken is not None and not replace:
            return (
                f"{subject} is already registered (by {taken}); pick another name or pass "
                "replace=True"
            )
        return ""

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a no-op when absent); a plugin removing a built-in is one warning
        and a no-op (it could then take the name)."""
        source = _registrant()
        with self._lock:
            if source is None or source.builtin or self._origins.get(name) != "memlab":
                self._entries.pop(name, None)
                self._origins.pop(name, None)
                return
        _warn(
            f"{source}: {self.what} {excerpt(name)} is memlab's built-in, which a plugin cannot "
            "remove; skipped"
        )

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
    check: EntryCheck | None = None,
    entry_type: type | tuple[type, ...] | None = None,
    reserved: frozenset[str] = frozenset(),
    builtins: Mapping[str, Any] | None = None,
) -> Registry[Any]:
    """Create the registry of ``kind`` (once, by the module that owns the kind).

    ``unknown``, ``check`` and ``reserved`` are :class:`Registry`'s; ``entry_type`` is the
    check that every entry is an instance of it (:func:`instance_of`), for a registry of
    one type. ``builtins`` (name -> entry, in order) are the owner's own entries, registered
    through :meth:`Registry.register` like any other, so the owner declares its kind and its
    built-ins as one piece of data.

    Raises:
        PluginError: The kind is declared twice.
        RegistrationError: A built-in breaks a rule.
        TypeError: Both ``check`` and ``entry_type`` are given.
    """
    if entry_type is not None:
        if check is not None:
            raise TypeError("declare takes check or entry_type, not both")
        check = instance_of(*(entry_type if isinstance(entry_type, tuple) else (entry_type,)))
    with _declare_lock:
        if kind in _registries:
            raise PluginError(f"the registry of {kind!r} entries is declared twice")
        created: Registry[Any] = Registry(
            kind, what, unknown=unknown, check=check, reserved=reserved
        )
        for name, entry in (builtins or {}).items():
            created.register(name, entry)
        _registries[kind] = created  # after the built-ins: a refused one declares nothing
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
    """The plugin being loaded in this thread (None: memlab or in-process code registers)."""

    source: _Source | None = None


_loading = _Loading()


def _registrant() -> _Source | None:
    """The plugin registering now, or None for memlab's own code.

    A plugin that imports a memlab module for the first time runs that module's import, which
    registers its built-ins: those are memlab's, not the plugin's. They are told apart by the
    calling frames: memlab code up to the import of a memlab module.
    """
    source = _loading.source
    if source is None or source.builtin:
        return source
    frame: FrameType | None = sys._getframe(2)  # the caller of Registry.register
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module != "memlab" and not module.startswith("memlab."):
            return source
        if frame.f_code.co_name == "<module>":
            return None
        frame = frame.f_back
    return source


_load_lock = threading.RLock()
_state = "new"  # "new" -> "loading" -> "done"
_failures: dict[str, str] = {}
_warnings: list[str] = []


def load_plugins() -> None:
    """Import every ``memlab.plugins`` entry point once per process (see the module docstring):
    memlab's own first, then the others by name, each under a guard."""
    global _state
    if _state == "done":
        return
    with _load_lock:
        if _state != "new":  # done by another thread, or a plugin reading while it loads
            return
        _state = "loading"
        try:
            with _NotedInterrupts() as interrupts:
                for entry_point in sorted(_entry_points(), key=_load_order):
                    _load(entry_point, interrupts)
        finally:
            _state = "done"


def _entry_points() -> Sequence[metadata.EntryPoint]:
    # Imported here: reading the installed packages' metadata costs a start that never
    # loads plugins (`memlab --help`) tens of milliseconds.
    from importlib import metadata

    return list(metadata.entry_points(group=PLUGIN_GROUP))


def _dist(entry_point: metadata.EntryPoint) -> str:
    dist = getattr(entry_point, "dist", None)
    return str(dist.name) if dist is not None else "?"


def _load_order(entry_point: metadata.EntryPoint) -> tuple[bool, str]:
    """memlab's own entry points first: its built-ins are registered before any plugin's."""
    return _dist(entry_point) != "memlab", entry_point.name


class _NotedInterrupts:
    """Notes a real SIGINT (Ctrl-C) while plugins load, so that a ``KeyboardInterrupt`` a
    plugin raises itself is told apart from the user's. Only the main thread receives
    signals; elsewhere (and when SIGINT has no Python handler) nothing is installed."""

    def __init__(self) -> None:
        self.seen = False
        self._previous: Any = None
        self._installed = False

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.seen = True
        self._previous(signum, frame)

    def __enter__(self) -> _NotedInterrupts:
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            if callable(previous):
                self._previous = previous
                signal.signal(signal.SIGINT, self._note)
                self._installed = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        # A plugin that installed its own handler keeps it.
        if self._installed and signal.getsignal(signal.SIGINT) == self._note:
            signal.signal(signal.SIGINT, self._previous)


def _load(entry_point: metadata.EntryPoint, interrupts: _NotedInterrupts) -> None:
    dist = _dist(entry_point)
    source = _Source(f"{entry_point.name} = {entry_point.value}", dist, dist == "memlab")
    _loading.source = source
    try:
        loaded = entry_point.load()
        if callable(loaded):
            loaded()
    except KeyboardInterrupt as exc:
        if interrupts.seen:  # the user's Ctrl-C: stop, as anywhere else
            raise
        _failed(source, exc)
    except BaseException as exc:  # any plugin bug or exit: report it, keep memlab usable
        _failed(source, exc)
    finally:
        _loading.source = None


def _failed(source: _Source, exc: BaseException) -> None:
    text = one_line(str(exc), 200)
    error = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    _failures[source.label] = error
    _warn(f"{source} failed to load ({error}); skipped")


def _warn(message: str) -> None:
    _warnings.append(message)
    logger.warning("%s", message)


def plugin_failures() -> dict[str, str]:
    """Plugins that failed to load (``name = value`` -> the error), after loading them."""
    load_plugins()
    return dict(_failures)


def plugin_warnings() -> list[str]:
    """Every warning loading the plugins gave (a plugin that failed to load, a registration
    refused), after loading them."""
    load_plugins()
    return list(_warnings)


def failure_hint() -> str:
    """A clause for an unknown-name error when some plugin failed to load ("" otherwise)."""
    if not _failures:
        return ""
    return (
        " (plugins that failed to load: "
        + "; ".join(f"{label}: {error}" for label, error in _failures.items())
        + ")"
    )
