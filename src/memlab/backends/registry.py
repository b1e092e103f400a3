"""Resolve backend specs such as ``openai:gpt-4o-mini`` or ``local:smollm2`` to backends.

A spec is ``PREFIX`` or ``PREFIX:ARGUMENT``; the prefix selects a factory from an explicit
registry and the argument (possibly empty) is passed to it with any keyword options:

========================  ===============================================================
``openai:MODEL``          :class:`~memlab.backends.openai_compat.OpenAICompatibleBackend`
``local:smollm2``         the bundled SmolLM2-135M-Instruct through llama-cpp-python
``local:/path/x.gguf``    any GGUF file through llama-cpp-python
``scripted``              :class:`~memlab.backends.scripted.ScriptedBackend`; without
                          ``replies``/``function`` it returns the minimal valid contract
                          reply (all sections unchanged, no facts) every time
``scripted:user-lines``   a test instrument: each user line becomes a fact
                          (:func:`~memlab.backends.scripted.user_lines_reply`)
``sim:PROFILE``           :class:`~memlab.simulation.model.SimulatedBackend`, the
                          known-truth simulated model (``careful``, ``sloppy``, ``chatty``
                          or a YAML profile path); needs ``dataset=`` (a sweep passes it)
``auto``                  :func:`default_backend_spec`
========================  ===============================================================

Third-party backends register through the same path as the built-ins::

    register_backend("mybackend", lambda arg, **options: MyBackend(arg, **options))

Optional dependencies are imported lazily inside the factories; a missing package gives a
:class:`~memlab.core.llm.BackendError` saying what to install.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from memlab.core.contract import MINIMAL_VALID_UPDATE
from memlab.core.llm import Backend, BackendError
from memlab.errors import MemlabError

__all__ = [
    "MINIMAL_CONTRACT_REPLY",
    "BackendFactory",
    "UnknownBackendError",
    "available_backends",
    "default_backend_spec",
    "register_backend",
    "resolve_backend",
]

logger = logging.getLogger(__name__)

BackendFactory = Callable[..., Backend]
"""``factory(argument: str, **options) -> Backend``; ``argument`` is the text after ``:``."""

MINIMAL_CONTRACT_REPLY = json.dumps(MINIMAL_VALID_UPDATE)
"""The smallest reply that satisfies the memory-update contract (the ``scripted`` default)."""


class UnknownBackendError(MemlabError, ValueError):
    """A backend spec names a prefix nobody registered."""


def _openai_factory(argument: str, **options: Any) -> Backend:
    from memlab.backends.openai_compat import OpenAICompatibleBackend

    return OpenAICompatibleBackend(argument or None, **options)


def _local_factory(argument: str, **options: Any) -> Backend:
    from memlab.backends.llama_local import LocalLlamaBackend

    return LocalLlamaBackend(argument or None, **options)


def _scripted_factory(argument: str, **options: Any) -> Backend:
    from memlab.backends.scripted import SCRIPTS, ScriptedBackend

    if argument:
        options.setdefault("model", argument)
    if argument in SCRIPTS and "replies" not in options:
        options.setdefault("function", SCRIPTS[argument])
    if "replies" not in options and "function" not in options:
        options["replies"] = [MINIMAL_CONTRACT_REPLY]
        options.setdefault("repeat_last", True)
    return ScriptedBackend(**options)


def _sim_factory(argument: str, **options: Any) -> Backend:
    from memlab.simulation.model import SimulatedBackend
    from memlab.simulation.profile import BUILTIN_PROFILES

    if not argument:
        raise BackendError(
            f"the simulated model needs a profile: 'sim:NAME' with NAME one of "
            f"{', '.join(BUILTIN_PROFILES)}, or 'sim:/path/profile.yaml'"
        )
    if "dataset" not in options:
        raise BackendError(
            f"'sim:{argument}' answers from the labels of the dataset it replays: pass "
            "dataset=... (a sweep does this itself), e.g. resolve_backend('sim:careful', "
            "dataset='personas')"
        )
    return SimulatedBackend(argument, **options)


_registry: dict[str, BackendFactory] = {
    "openai": _openai_factory,
    "local": _local_factory,
    "scripted": _scripted_factory,
    "sim": _sim_factory,
}
_registry_lock = threading.Lock()


def register_backend(prefix: str, factory: BackendFactory, *, replace: bool = False) -> None:
    """Register ``factory`` for specs starting with ``prefix``.

    Args:
        prefix: Spec prefix (letters, digits, ``_``, ``-``, ``.``), e.g. ``"anthropic"``.
        factory: ``factory(argument, **options) -> Backend``.
        replace: Allow replacing an existing registration (including a built-in).

    Raises:
        ValueError: Bad prefix, or the prefix is taken and ``replace`` is false.
    """
    if prefix == "auto" or not re.fullmatch(r"[A-Za-z0-9_.-]+", prefix):
        raise ValueError(
            f"Invalid backend prefix {prefix!r}: use letters, digits, '_', '-' or '.', "
            "without ':' ('auto' is reserved)."
        )
    with _registry_lock:
        if prefix in _registry and not replace:
            raise ValueError(
                f"Backend prefix {prefix!r} is already registered; pass replace=True to "
                "override it."
            )
        _registry[prefix] = factory


def available_backends() -> list[str]:
    """Return the registered prefixes, sorted."""
    with _registry_lock:
        return sorted(_registry)


def default_backend_spec(environ: Mapping[str, str] | None = None) -> str:
    """Return the backend used when none is named, and log the choice.

    ``openai:<OPENAI_MODEL or gpt-4o-mini>`` when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL``
    is set, otherwise the bundled local model ``local:smollm2``.
    """
    from memlab.backends.openai_compat import DEFAULT_OPENAI_MODEL

    env = os.environ if environ is None else environ
    if env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
        spec = f"openai:{env.get('OPENAI_MODEL') or DEFAULT_OPENAI_MODEL}"
        reason = (
            "OPENAI_BASE_URL is set" if env.get("OPENAI_BASE_URL") else ("OPENAI_API_KEY is set")
        )
    else:
        spec = "local:smollm2"
        reason = "neither OPENAI_API_KEY nor OPENAI_BASE_URL is set"
    logger.info("default backend: %s (%s)", spec, reason)
    return spec


def resolve_backend(spec: str, **options: Any) -> Backend:
    """Build the backend named by ``spec``.

    Args:
        spec: ``"openai:MODEL"``, ``"local:smollm2"``, ``"local:/path/model.gguf"``,
            ``"scripted"``, ``"auto"`` or any registered ``"prefix[:argument]"``.
        **options: Keyword options for the backend's constructor (e.g. ``base_url=``,
            ``n_threads=``, ``replies=``).

    Raises:
        UnknownBackendError: The prefix is not registered.
        BackendError: The backend cannot be built (missing package, no key, bad path).
    """
    spec = spec.strip()
    if spec == "auto":
        spec = default_backend_spec()
    prefix, _, argument = spec.partition(":")
    with _registry_lock:
        factory = _registry.get(prefix)
        known = sorted(_registry)
    if factory is None:
        raise UnknownBackendError(
            f"Unknown backend {spec!r}: the prefix {prefix!r} is not registered. Known "
            f"prefixes: {', '.join(known)} (e.g. 'openai:gpt-4o-mini', 'local:smollm2', "
            "'local:/path/model.gguf', 'scripted'), or register one with register_backend()."
        )
    backend = factory(argument, **options)
    logger.debug("resolved backend %r to %r", spec, backend)
    return backend
