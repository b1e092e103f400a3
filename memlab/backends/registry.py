"""Resolve backend specs such as ``openai:gpt-4o-mini`` or ``local:smollm2`` to backends.

A spec is ``PREFIX`` or ``PREFIX:ARGUMENT``; the prefix selects a :class:`BackendPlugin` from
the backend registry (:mod:`memlab.plugins`) and the argument (possibly empty) is passed to its
factory with any keyword options. This module is the only place that reads a spec: everyone
else asks it (:func:`backend_plugin`, :func:`is_simulated`, :func:`reads_prompts`,
:func:`backend_options`, :func:`spec_short_name`, :func:`dialect_for`).

========================  ===============================================================
``openai:MODEL``          :class:`~memlab.backends.remote.openai_compat.OpenAICompatibleBackend`
``local:smollm2``         the bundled SmolLM2-135M-Instruct through llama-cpp-python
``local:/path/x.gguf``    any GGUF file through llama-cpp-python
``scripted``              :class:`~memlab.backends.scripted.ScriptedBackend`; without
                          ``replies``/``function`` it returns the minimal valid contract
                          reply (all sections unchanged, no facts) every time
``scripted:user-lines``   a test instrument: each user line becomes a fact
                          (:func:`~memlab.backends.scripted.user_lines_reply`)
``sim:PROFILE``           the known-truth simulated model (:mod:`memlab.simulation`, a
                          test instrument registered through memlab's own entry point);
                          needs ``dataset=`` (a sweep passes it)
``auto``                  :func:`default_backend_spec`
========================  ===============================================================

A backend declares what it can do once, in its :class:`BackendPlugin`: the output modes it
supports, how it enforces a JSON schema, the prices of the models it serves, whether it is the
simulated model (labelled in every report, never cached) and whether it answers from the
dataset a sweep replays. Third-party backends register through the same path as the
built-ins, in a notebook::

    register_backend("mybackend", lambda arg, **options: MyBackend(arg, **options))

or from an installed package, through an entry point in the ``memlab.plugins`` group (see
:mod:`memlab.plugins` and ``docs/architecture.md``), which the command line and Dask workers
load too. Optional dependencies are imported lazily inside the factories; a missing package
gives a :class:`~memlab.core.pipeline.llm.BackendError` saying what to install.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlab import plugins
from memlab.backends.decoding.grammar import GrammarDialect
from memlab.core.jsondoc.contract import MINIMAL_VALID_UPDATE
from memlab.core.pipeline.llm import Backend, OutputMode
from memlab.errors import MemlabError

__all__ = [
    "BACKENDS",
    "MINIMAL_CONTRACT_REPLY",
    "SIMULATED_MARK",
    "BackendFactory",
    "BackendPlugin",
    "UnknownBackendError",
    "available_backends",
    "backend_options",
    "backend_plugin",
    "cacheable",
    "default_backend_spec",
    "dialect_for",
    "environment_packages",
    "find_backend_plugin",
    "is_simulated",
    "mark_simulated",
    "price_table",
    "reads_prompts",
    "register_backend",
    "resolve_backend",
    "spec_short_name",
]

logger = logging.getLogger(__name__)

BackendFactory = Callable[..., Backend]
"""``factory(argument: str, **options) -> Backend``; ``argument`` is the text after ``:``."""

MINIMAL_CONTRACT_REPLY = json.dumps(MINIMAL_VALID_UPDATE)
"""The smallest reply that satisfies the memory-update contract (the ``scripted`` default)."""

Prices = Mapping[str, tuple[float, float]]
"""Model id prefix -> (USD per 1M prompt tokens, USD per 1M completion tokens)."""


class UnknownBackendError(MemlabError, ValueError):
    """A backend spec names a prefix nobody registered."""


def _reads_every_prompt(argument: str) -> bool:
    """A model's replies depend on its prompt, whatever the spec's argument."""
    return True


@dataclass(frozen=True)
class BackendPlugin:
    """A kind of backend and what it can do, declared in one place.

    Attributes:
        factory: ``factory(argument, **options) -> Backend``.
        description: One line for listings (``memlab plugins``).
        example: A spec that works, for messages (``"openai:gpt-4o-mini"``).
        output_modes: The output modes its backends honour; a grid asking for another is
            rejected before anything runs.
        schema_decoding: How ``json_schema`` mode constrains the reply ("" when it does not).
        reply_grammar: The grammar dialect (:mod:`memlab.backends.decoding.grammar`) whose longest
            reply bounds a bounded lane's ``max_tokens``: ``"compact"`` for backends decoding
            with memlab's compact grammar, else ``"server"`` (llama.cpp's converter as is,
            one token per byte: a safe upper bound for any tokenizer).
        prices: What its models cost (model id prefix -> USD per 1M prompt and completion
            tokens); the run summary's cost columns read every backend's prices.
        cached_prompt_prices: What a prompt token the provider serves from its own prompt
            cache costs (model id prefix -> USD per 1M); a model without one pays the prompt
            price for them (:mod:`memlab.backends.costs.pricing`).
        simulated: The simulated model: labelled "[simulated]" in every table, chart and
            report, and never cached.
        needs_dataset: Its factory needs ``dataset=`` (the file a sweep replays).
        packages: Distributions whose versions a run records in ``environment.json``.
        prompt_reader: ``prompt_reader(argument) -> bool``: whether the backend the spec's
            argument names lets the update prompt's text change its replies; None: it does
            (a model). Ask :func:`reads_prompts`.
        batches: Its factory takes ``batch=`` (how many concurrent calls it decodes
            together): a sweep's ``local_batch`` reaches it through :func:`backend_options`.
    """

    factory: BackendFactory
    description: str
    example: str
    output_modes: frozenset[OutputMode] = frozenset(OutputMode)
    schema_decoding: str = ""
    reply_grammar: GrammarDialect = "server"
    prices: Prices = field(default_factory=dict)
    cached_prompt_prices: Mapping[str, float] = field(default_factory=dict)
    simulated: bool = False
    needs_dataset: bool = False
    packages: tuple[str, ...] = ()
    prompt_reader: Callable[[str], bool] | None = None
    batches: bool = False

    @property
    def cacheable(self) -> bool:
        """Whether its replies belong in the response cache: not the simulated model's (it
        answers instantly and deterministically)."""
        return not self.simulated


def _unknown(prefix: str, known: Sequence[str]) -> UnknownBackendError:
    return UnknownBackendError(
        f"the prefix {prefix!r} is not registered. Known prefixes: {', '.join(sorted(known))} "
        "(e.g. 'openai:gpt-4o-mini', 'local:smollm2', 'local:/path/model.gguf', 'scripted'), "
        "or register one with register_backend() or a memlab.plugins entry point."
        + plugins.failure_hint()
    )


def _openai_factory(argument: str, **options: Any) -> Backend:
    from memlab.backends.remote.openai_compat import OpenAICompatibleBackend

    return OpenAICompatibleBackend(argument or None, **options)


def _local_factory(argument: str, **options: Any) -> Backend:
    from memlab.backends.local.llama_local import LocalLlamaBackend

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


def _auto_factory(argument: str, **options: Any) -> Backend:
    return resolve_backend(default_backend_spec(), **options)


BACKENDS: plugins.Registry[BackendPlugin] = plugins.declare(
    "backend",
    "backend prefix",
    unknown=_unknown,
    entry_type=BackendPlugin,
    reserved=frozenset({"auto"}),  # the core's updater without a backend resolves it
    builtins={
        "openai": BackendPlugin(
            _openai_factory,
            "any OpenAI-compatible endpoint (OpenAI, Azure, vLLM, Ollama, llama.cpp server)",
            "openai:gpt-4o-mini",
            schema_decoding="response_format json_schema (strict), or a schema in json_object",
            prices={
                "gpt-4o-mini": (0.15, 0.60),
                "gpt-4o": (2.50, 10.00),
                "gpt-4.1-mini": (0.40, 1.60),
            },
            cached_prompt_prices={"gpt-4o-mini": 0.075, "gpt-4o": 1.25, "gpt-4.1-mini": 0.10},
            packages=("openai",),
        ),
        "local": BackendPlugin(
            _local_factory,
            "a GGUF model through llama-cpp-python (local:smollm2 is bundled)",
            "local:smollm2",
            schema_decoding="a grammar compiled from the schema (compact dialect), enforced by "
            "llama.cpp or llguidance (MEMLAB_LLAMA_CONSTRAINT)",
            reply_grammar="compact",
            packages=("llama-cpp-python",),
            batches=True,
        ),
        "scripted": BackendPlugin(
            _scripted_factory,
            "canned replies (a test double); scripted:user-lines stores each user line",
            "scripted",
        ),
        "auto": BackendPlugin(
            _auto_factory,
            "openai:<OPENAI_MODEL> when OPENAI_API_KEY or OPENAI_BASE_URL is set, "
            "else local:smollm2",
            "auto",
        ),
    },
)
"""Every backend kind by spec prefix."""


def register_backend(
    prefix: str,
    factory: BackendFactory | BackendPlugin,
    *,
    replace: bool = False,
    **capabilities: Any,
) -> BackendPlugin:
    """Register a backend for specs starting with ``prefix`` (through ``BACKENDS.register``,
    whose rules apply: :mod:`memlab.plugins`).

    Args:
        prefix: Spec prefix (:data:`memlab.plugins.NAME_RULE`), e.g. ``"anthropic"``.
        factory: ``factory(argument, **options) -> Backend``, or a whole
            :class:`BackendPlugin`.
        replace: Allow replacing an existing registration (including a built-in).
        **capabilities: :class:`BackendPlugin` fields besides the factory
            (``output_modes``, ``prices``, ...).

    Raises:
        memlab.plugins.RegistrationError: A ``ValueError``: a bad prefix, ``auto`` (reserved),
            or the prefix is taken and ``replace`` is false.
    """
    if isinstance(factory, BackendPlugin):
        plugin = factory
    else:
        capabilities.setdefault("description", f"{prefix} (registered in code)")
        capabilities.setdefault("example", prefix)
        plugin = BackendPlugin(factory, **capabilities)
    return BACKENDS.register(prefix, plugin, replace=replace)


def available_backends() -> list[str]:
    """Return the registered prefixes, sorted."""
    return sorted(BACKENDS)


def backend_plugin(spec: str) -> BackendPlugin:
    """The plugin that builds ``spec`` (by its prefix).

    Raises:
        UnknownBackendError: No backend has that prefix.
    """
    try:
        return BACKENDS.lookup(plugins.split_spec(spec)[0])
    except UnknownBackendError as exc:
        raise UnknownBackendError(f"Unknown backend {spec.strip()!r}: {exc}") from None


def find_backend_plugin(spec: str) -> BackendPlugin | None:
    """The plugin that builds ``spec``, or ``None`` for an unknown prefix."""
    return BACKENDS.get(plugins.split_spec(spec)[0])


def dialect_for(spec: str) -> GrammarDialect:
    """The grammar whose worst case bounds a bounded reply of ``spec``: its plugin's
    ``reply_grammar``; ``"server"`` (the larger bound) for an unknown prefix."""
    plugin = find_backend_plugin(spec)
    return plugin.reply_grammar if plugin is not None else "server"


def is_simulated(spec: str) -> bool:
    """True when ``spec`` names the simulated model (false for an unknown prefix)."""
    plugin = find_backend_plugin(spec)
    return plugin is not None and plugin.simulated


SIMULATED_MARK = "[simulated]"
"""What every table, chart and title shows beside what the simulated model produced."""


def mark_simulated(text: str, simulated: bool) -> str:
    """``text`` led by :data:`SIMULATED_MARK` when ``simulated`` (never marked twice)."""
    if not simulated or text.startswith(SIMULATED_MARK):
        return text
    return f"{SIMULATED_MARK} {text}"


def reads_prompts(spec: str) -> bool:
    """Whether the update prompt's text can change the replies of ``spec``: False for the
    simulated model with a profile that declares no prompt effects (``sim:careful``,
    ``sim:sloppy``, ``sim:chatty``), True for one that does (``sim:attentive``) and for every
    other backend (a model reads its prompt; an unknown prefix counts as one).

    Raises:
        MemlabError: The spec's argument names no loadable profile (the simulated model's
            :class:`~memlab.simulation.profile.SimProfileError`, naming the file and field).
    """
    prefix, argument = plugins.split_spec(spec)
    plugin = BACKENDS.get(prefix)
    if plugin is None or plugin.prompt_reader is None:
        return True
    return plugin.prompt_reader(argument)


def cacheable(spec: str) -> bool:
    """Whether replies of ``spec`` belong in the response cache (see
    :attr:`BackendPlugin.cacheable`); drivers and remote workers both ask this."""
    plugin = find_backend_plugin(spec)
    return plugin is None or plugin.cacheable


def backend_options(spec: str, dataset: str | Path, batch: Any = None) -> dict[str, Any]:
    """Options a spec needs from the sweep: the dataset path for backends that answer from
    it (the simulated model); ``batch`` (a sweep's ``local_batch``, ``None``: not set) for
    backends that decode concurrent calls together (:attr:`BackendPlugin.batches`)."""
    plugin = find_backend_plugin(spec)
    options: dict[str, Any] = {}
    if plugin is not None and plugin.needs_dataset:
        options["dataset"] = dataset
    if plugin is not None and plugin.batches and batch is not None:
        options["batch"] = batch
    return options


def spec_short_name(spec: str) -> str:
    """A few characters naming the model of ``spec``, for lane ids: the argument's last path
    component without ``.gguf`` (``local:/m/tiny.gguf`` -> ``tiny``), else the spec."""
    return spec.split(":", 1)[-1].rsplit("/", 1)[-1].replace(".gguf", "")


def price_table() -> dict[str, tuple[float, float]]:
    """Every registered backend's model prices (model id prefix -> USD per 1M tokens)."""
    table: dict[str, tuple[float, float]] = {}
    for name in BACKENDS:
        table.update(BACKENDS[name].prices)
    return table


def environment_packages() -> tuple[str, ...]:
    """The distributions of every registered backend, in registration order."""
    found: dict[str, None] = {}
    for name in BACKENDS:
        found.update(dict.fromkeys(BACKENDS[name].packages))
    return tuple(found)


def default_backend_spec(environ: Mapping[str, str] | None = None) -> str:
    """Return the backend used when none is named, and log the choice.

    ``openai:<OPENAI_MODEL or gpt-4o-mini>`` when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL``
    is set, otherwise the bundled local model ``local:smollm2``.
    """
    from memlab.backends.remote.openai_compat import DEFAULT_OPENAI_MODEL

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
    backend = backend_plugin(spec).factory(plugins.split_spec(spec)[1], **options)
    logger.debug("resolved backend %r to %r", spec, backend)
    return backend
