"""Prompt variants for the memory update: named templates stored as data files.

A template is plain text with exactly one ``{current_memory}`` and one ``{conversation}``
placeholder. Rendering substitutes only those two (in a single pass), so any other braces in
the template, such as a JSON example of the expected reply, are kept literally; there is no
``str.format`` escaping to think about.

Built-in variants live in ``memlab/core/prompts/*.txt`` (``default`` and ``concise``). Users
add variants without touching code::

    registry = default_registry()
    registry.load_file("my_prompts/terse.txt")        # variant "terse"
    registry.load_file("my_prompts/variants.yaml")    # {name: {template, description}} or a list
    prompt = get_prompt("terse").render(memory, conversation)

Other prompt kinds (the QA answer and judge prompts of :mod:`memlab.qa.qa_prompts`) are
:class:`~memlab.core.prompt_template.PromptTemplate` subclasses with their own placeholders,
kept in a :class:`TemplateRegistry` of their own: the same files, validation and content
hashes. One template, its checks and how it is filled are :mod:`memlab.core.prompt_template`.
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Generic, Self, TypeVar

from memlab import plugins
from memlab.core.base.jsontext import JsonDepthError, loads_json
from memlab.core.base.safe_text import safe_json
from memlab.core.base.yamlio import YamlInputError, key_lines, parse_yaml, read_text_limited
from memlab.core.prompt_template import (
    PromptError,
    PromptTemplate,
    PromptVariant,
    UnknownPromptError,
)
from memlab.errors import excerpt

__all__ = [
    "BUILTIN_PROMPTS",
    "PROMPTS",
    "PromptRegistry",
    "TemplateRegistry",
    "builtin_templates",
    "default_registry",
    "get_prompt",
    "looks_like_path",
    "registered_template",
    "render_prompt",
    "resolve_prompt",
    "resolve_template",
    "template_diff",
    "unknown_variant",
]

#: Built-in variants: name -> (package file, description).
BUILTIN_PROMPTS: dict[str, tuple[str, str]] = {
    "default": (
        "prompts/default.txt",
        "Full instructions: section lengths, categories, confidence scale, skeleton.",
    ),
    "concise": (
        "prompts/concise.txt",
        "Shorter variant with the same rules, for small context windows.",
    ),
}

_SUFFIXES_TEXT = (".txt",)
_SUFFIXES_DATA = (".yaml", ".yml", ".json")


T = TypeVar("T", bound=PromptTemplate)


def _load_builtin(variant_type: type[T], name: str, resource: str, description: str) -> T:
    text = resources.files("memlab.core").joinpath(resource).read_text(encoding="utf-8")
    return variant_type(name, text, description, source=f"memlab/core/{resource}")


def builtin_templates(
    kind: str, variant_type: type[T], files: Mapping[str, tuple[str, str]]
) -> plugins.Registry[Callable[[], T]]:
    """The registry of one kind of template (:mod:`memlab.plugins`), with the built-ins of
    ``files`` (name -> (file under ``memlab/core``, description)) as loaders: every
    :class:`TemplateRegistry` of the kind starts with its entries, plugins' included."""
    return plugins.declare(
        kind,
        f"{kind} template",
        check=plugins.callable_entry,
        unknown=unknown_variant,
        builtins={
            name: functools.partial(_load_builtin, variant_type, name, resource, description)
            for name, (resource, description) in files.items()
        },
    )


def unknown_variant(name: str, known: Sequence[str]) -> UnknownPromptError:
    """The error for a template name no registry of its kind holds, naming the known ones."""
    return UnknownPromptError(
        f"unknown prompt variant {excerpt(name)}; known variants: {', '.join(known) or '(none)'}"
    )


def registered_template(
    kind: plugins.Registry[Callable[[], T]], variant_type: type[T], name: str
) -> T:
    """The template ``name`` of one kind (built-ins' and plugins', see :func:`builtin_templates`),
    loaded alone: a caller that needs one template builds no :class:`TemplateRegistry` of the
    kind, which would load every other template of it (and fail on any broken one).

    Raises:
        UnknownPromptError: Naming the kind's templates.
        TypeError: The loader returned something other than a ``variant_type``.
    """
    variant = kind.lookup(name)()
    if not isinstance(variant, variant_type):
        wanted = variant_type.__name__
        raise TypeError(f"{kind.kind} {name!r} is a {type(variant).__name__}, not a {wanted}")
    return variant


class TemplateRegistry(Generic[T]):
    """A set of templates of one kind by name, starting with built-ins.

    Args:
        variant_type: The template class (its placeholders are checked on every template).
        builtins: The templates it starts with: name -> a function returning the template
            (the registry of the kind, see :func:`builtin_templates`).
    """

    def __init__(
        self, variant_type: type[T], builtins: Mapping[str, Callable[[], T]] | None = None
    ) -> None:
        self.variant_type = variant_type
        self._variants: dict[str, T] = {}
        self._lock = threading.Lock()
        for load in (builtins or {}).values():
            self.register(load())

    def register(self, variant: T, replace: bool = False) -> T:
        """Add `variant`; an existing name is an error unless `replace` is true."""
        if not isinstance(variant, self.variant_type):
            wanted = self.variant_type.__name__
            raise TypeError(f"register expects a {wanted}, got {type(variant).__name__}")
        with self._lock:
            existing = self._variants.get(variant.name)
            if existing is not None and not replace:
                raise PromptError(
                    f"{variant.where}: a prompt named {excerpt(variant.name)} is already "
                    f"registered (from {existing.where}); pick another name or pass replace=True"
                )
            self._variants[variant.name] = variant
        return variant

    def get(self, name: str) -> T:
        """Return the variant called `name`.

        Raises:
            UnknownPromptError: Naming the known variants.
        """
        with self._lock:
            variant = self._variants.get(name)
            known = sorted(self._variants)
        if variant is None:
            raise unknown_variant(name, known)
        return variant

    def copy(self) -> Self:
        """A new registry holding the same variants (adding to it leaves this one unchanged)."""
        clone = copy.copy(self)
        clone._lock = threading.Lock()
        with self._lock:
            clone._variants = dict(self._variants)
        return clone

    def load_path(self, path: str | os.PathLike[str], replace: bool = False) -> list[T]:
        """Load a prompt file or every prompt file of a directory (see :meth:`load_file`)."""
        if Path(path).is_dir():
            return self.load_directory(path, replace=replace)
        return self.load_file(path, replace=replace)

    def names(self) -> list[str]:
        """Registered names in registration order."""
        with self._lock:
            return list(self._variants)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._variants

    def __len__(self) -> int:
        with self._lock:
            return len(self._variants)

    def load_file(self, path: str | os.PathLike[str], replace: bool = False) -> list[T]:
        """Load and register the variants in one file.

        A ``.txt`` file is one template named after the file stem. A ``.yaml``/``.yml``/
        ``.json`` file holds either a mapping ``{name: {template: ..., description: ...}}``
        (a bare string value is the template) or a list of
        ``{name: ..., template: ..., description: ...}`` entries.

        Returns:
            The registered variants, in file order.

        Raises:
            PromptError: If the file cannot be read or parsed, or an entry is invalid; the
                message names the file (and the entry).
        """
        source = os.fspath(path)
        file_path = Path(source)
        suffix = file_path.suffix.lower()
        if suffix not in _SUFFIXES_TEXT + _SUFFIXES_DATA:
            raise PromptError(
                f"{source}: unsupported prompt file type {suffix or '(none)'}; "
                "use .txt, .yaml, .yml or .json"
            )
        try:
            text = read_text_limited(file_path, what="prompt file")
        except YamlInputError as exc:
            raise PromptError(str(exc)) from None
        if suffix in _SUFFIXES_TEXT:
            variants = [_at(source, "template", 1, self.variant_type, file_path.stem, text)]
        else:
            data, lines = _parse_data(text, source, suffix)
            variants = list(_variants_from_data(self.variant_type, data, source, lines))
        # Validate every entry before registering any, so a bad file changes nothing.
        with self._lock:
            clashes = [v.name for v in variants if v.name in self._variants]
        names = [v.name for v in variants]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise PromptError(f"{source}: prompt names defined twice: {', '.join(duplicates)}")
        if clashes and not replace:
            raise PromptError(
                f"{source}: prompt names already registered: {', '.join(clashes)}; "
                "rename them or pass replace=True"
            )
        for variant in variants:
            self.register(variant, replace=replace)
        return variants

    def load_directory(self, path: str | os.PathLike[str], replace: bool = False) -> list[T]:
        """Load every ``.txt``/``.yaml``/``.yml``/``.json`` file of a directory (sorted)."""
        directory = Path(path)
        if not directory.is_dir():
            raise PromptError(f"{os.fspath(path)}: not a directory")
        loaded: list[T] = []
        for file_path in sorted(directory.iterdir()):
            if file_path.is_file() and file_path.suffix.lower() in _SUFFIXES_TEXT + _SUFFIXES_DATA:
                loaded.extend(self.load_file(file_path, replace=replace))
        return loaded


PROMPTS = builtin_templates("prompt", PromptVariant, BUILTIN_PROMPTS)
"""The update prompt variants every :class:`PromptRegistry` starts with (the built-ins of
:data:`BUILTIN_PROMPTS`, then those plugins register): name -> a function returning it."""


class PromptRegistry(TemplateRegistry[PromptVariant]):
    """A set of update prompt variants by name; starts with the registered variants
    (:data:`PROMPTS`)."""

    def __init__(self, *, builtins: bool = True) -> None:
        super().__init__(PromptVariant, PROMPTS if builtins else None)


def _parse_data(text: str, source: str, suffix: str) -> tuple[Any, dict[str, int]]:
    """The data of a prompt file and the line of each of its values (key path -> line)."""
    try:
        if suffix == ".json":
            # Made writable here; the warning comes from parse_yaml below (JSON is YAML).
            data, _ = safe_json(loads_json(text), decoded_from=text)
        else:
            document = parse_yaml(text, source)
            return document.data, key_lines(document.node)
    except json.JSONDecodeError as exc:
        raise PromptError(f"{source}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except (JsonDepthError, YamlInputError) as exc:
        message = str(exc)
        if not message.startswith(source):
            message = f"{source}: {message}"
        raise PromptError(message) from None
    try:  # JSON text is YAML: its node tree gives the lines for error messages
        return data, key_lines(parse_yaml(text, source).node)
    except YamlInputError:
        return data, {}


def _at(
    source: str,
    field_path: str,
    line: int,
    variant_type: type[T],
    name: str,
    template: str,
    description: str = "",
) -> T:
    """The prompt ``name`` of ``source`` (its template on ``line``); an error in it names
    ``source:line: field``."""
    try:
        return variant_type(name, template, description, source=source)
    except PromptError as exc:
        where = line + (exc.line - 1 if exc.line else 0)
        problem = str(exc).removeprefix(f"{source}: ")
        raise PromptError(f"{source}:{where}: {field_path}: {problem}") from None


def _variants_from_data(
    variant_type: type[T], data: Any, source: str, lines: Mapping[str, int]
) -> Iterable[T]:
    if isinstance(data, Mapping):
        for name, entry in data.items():
            path = str(name)
            if isinstance(entry, str):
                yield _at(source, path, lines.get(path, 1), variant_type, path, entry)
            elif isinstance(entry, Mapping):
                named = {"name": path, **entry}
                yield _variant_from_entry(variant_type, named, source, path, lines)
            else:
                raise PromptError(
                    f"{source}:{lines.get(path, 1)}: {path}: expected a template string or a "
                    f"mapping with 'template', got {type(entry).__name__}"
                )
    elif isinstance(data, list):
        for index, entry in enumerate(data):
            path = f"[{index}]"
            if not isinstance(entry, Mapping):
                raise PromptError(
                    f"{source}:{lines.get(path, 1)}: {path}: expected a mapping with 'name' and "
                    f"'template', got {type(entry).__name__}"
                )
            yield _variant_from_entry(variant_type, entry, source, path, lines)
    else:
        raise PromptError(
            f"{source}:1: expected a mapping of prompt names or a list of prompts, "
            f"got {type(data).__name__}"
        )


def _variant_from_entry(
    variant_type: type[T],
    entry: Mapping[str, Any],
    source: str,
    path: str,
    lines: Mapping[str, int],
) -> T:
    def line(key: str = "") -> int:
        return lines.get(f"{path}.{key}" if key else path, lines.get(path, 1))

    unknown = sorted(set(entry) - {"name", "template", "description"})
    if unknown:
        first = str(unknown[0])
        raise PromptError(
            f"{source}:{line(first)}: {path}.{first}: unknown keys "
            f"{', '.join(map(str, unknown))}; allowed: name, template, description"
        )
    for key in ("name", "template"):
        if not isinstance(entry.get(key), str):
            raise PromptError(f"{source}:{line(key)}: {path}.{key}: must be a string")
    description = entry.get("description", "")
    if not isinstance(description, str):
        raise PromptError(f"{source}:{line('description')}: {path}.description: must be a string")
    return _at(
        source,
        f"{path}.template",
        line("template"),
        variant_type,
        entry["name"],
        entry["template"],
        description,
    )


_default_registry: PromptRegistry | None = None
_default_lock = threading.Lock()


def default_registry() -> PromptRegistry:
    """The process-wide registry (created on first use with the built-in variants)."""
    global _default_registry
    with _default_lock:
        if _default_registry is None:
            _default_registry = PromptRegistry()
        return _default_registry


def get_prompt(name: str = "default") -> PromptVariant:
    """Return a variant from the process-wide registry."""
    return default_registry().get(name)


def looks_like_path(text: str) -> bool:
    """True when ``text`` names a prompt file rather than a variant (a separator or suffix)."""
    if (
        "/" in text
        or os.sep in text
        or Path(text).suffix.lower() in _SUFFIXES_TEXT + _SUFFIXES_DATA
    ):
        return True
    try:
        return Path(text).is_file()
    except (OSError, ValueError):  # too long for the file system, a NUL: not a file
        return False


def resolve_prompt(
    spec: str | os.PathLike[str] | PromptVariant,
    registry: PromptRegistry | None = None,
    *,
    name: str = "inline",
) -> PromptVariant:
    """Turn what a user typed into a variant: a variant, a template, a file path or a name.

    A string holding a placeholder is a template (called ``name``); a path (a separator or a
    prompt file suffix) is loaded and must define exactly one variant; anything else is looked
    up in ``registry`` (default: the built-ins).

    Raises:
        PromptError: An invalid template or file, or a file with several variants.
        UnknownPromptError: A name nobody registered.
    """
    return resolve_template(spec, registry or PromptRegistry(), name=name)


def resolve_template(
    spec: str | os.PathLike[str] | T, registry: TemplateRegistry[T], *, name: str = "inline"
) -> T:
    """:func:`resolve_prompt` for any kind of template: names are looked up in ``registry``,
    and an inline template is one that holds a placeholder of the registry's kind."""
    variant_type = registry.variant_type
    if isinstance(spec, PromptTemplate):
        if not isinstance(spec, variant_type):
            raise PromptError(
                f"{spec.where}: a {type(spec).__name__}, not a {variant_type.__name__}"
            )
        return spec
    text = os.fspath(spec)
    if any("{" + p + "}" in text for p in variant_type.placeholders):
        return variant_type(name, text, source="<inline template>")
    if looks_like_path(text):
        variants = TemplateRegistry(variant_type).load_file(text)
        if len(variants) != 1:
            names = ", ".join(v.name for v in variants)
            raise PromptError(
                f"{text}: defines {len(variants)} prompts ({names}); name one of them and add "
                "the file as a prompt source (--prompts FILE)"
            )
        return variants[0]
    return registry.get(text)


def template_diff(a: PromptVariant, b: PromptVariant) -> str:
    """Unified diff of two templates, each side labelled with its name and short hash."""
    lines = difflib.unified_diff(
        a.template.splitlines(keepends=True),
        b.template.splitlines(keepends=True),
        fromfile=f"{a.name} ({a.sha256[:8]})",
        tofile=f"{b.name} ({b.sha256[:8]})",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def render_prompt(
    current_memory: Mapping[str, Any],
    conversation: str,
    variant: str | PromptVariant = "default",
) -> str:
    """Render `variant` (a name in the default registry or a `PromptVariant`)."""
    chosen = variant if isinstance(variant, PromptVariant) else get_prompt(variant)
    return chosen.render(current_memory, conversation)
