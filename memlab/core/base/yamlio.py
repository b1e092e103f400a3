"""Reading YAML that memlab did not write (grids, configs, prompt files) within fixed bounds.

Every YAML read goes through :func:`read_yaml` or :func:`parse_yaml`, which add limits that
``yaml.safe_load`` lacks:

- size: files above :data:`MAX_YAML_BYTES` are refused before they are parsed;
- nodes: at most :data:`MAX_YAML_NODES` nodes, counted *after* alias expansion, so a few
  hundred bytes of nested aliases (a "billion laughs" document) cannot turn into gigabytes of
  data or of error text further on; recursive aliases are refused;
- depth: at most :data:`~memlab.core.base.jsontext.MAX_JSON_DEPTH` levels of nesting, the same limit
  as JSON input.

Errors are :class:`YamlInputError`, one line naming the source and the position.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from memlab.core.base.files import MAX_TEXT_BYTES, FileReadError, io_reason, read_text
from memlab.core.base.jsontext import MAX_JSON_DEPTH
from memlab.core.base.safe_text import safe_json
from memlab.errors import MemlabError, one_line

__all__ = [
    "MAX_YAML_BYTES",
    "MAX_YAML_NODES",
    "YamlDocument",
    "YamlInputError",
    "key_lines",
    "parse_yaml",
    "read_text_limited",
    "read_yaml",
]

MAX_YAML_BYTES = MAX_TEXT_BYTES
"""Largest YAML (or prompt) file read: grids, configs and prompt files are a few KB."""

MAX_YAML_NODES = 100_000
"""Most values (scalars, lists, mappings) in one document, counting each alias expansion."""


class YamlInputError(MemlabError, ValueError):
    """A YAML file or text cannot be read within memlab's limits, or is not valid YAML."""


@dataclass(frozen=True)
class YamlDocument:
    """A parsed YAML document: the Python data and its node tree (for line numbers).

    ``replaced_chars``: characters of the data's strings UTF-8 cannot encode (a
    ``"\\ud800"`` escape), replaced by U+FFFD when the document was read.
    """

    data: Any
    node: yaml.Node | None
    replaced_chars: int = 0


class _TooBig(Exception):
    def __init__(self, message: str, mark: yaml.Mark | None) -> None:
        super().__init__(message)
        self.mark = mark


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that stops composing at the node-count and depth limits."""

    def __init__(self, stream: str, max_nodes: int, max_depth: int) -> None:
        super().__init__(stream)
        self._max_nodes = max_nodes
        self._max_depth = max_depth
        self._count = 0
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._count += 1
        if self._count > self._max_nodes:
            raise _TooBig(f"more than {self._max_nodes} values", self._mark())
        self._depth += 1
        try:
            if self._depth > self._max_depth:
                raise _TooBig(f"nested more than {self._max_depth} levels deep", self._mark())
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def _mark(self) -> yaml.Mark | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        return getattr(event, "start_mark", None)


def _check_expanded(root: yaml.Node, max_nodes: int, max_depth: int) -> None:
    """Refuse a node graph whose alias expansion is too large, too deep or recursive.

    Aliases make the composed graph share nodes; the size and height of the tree they expand
    to are computed once per distinct node (iterative post-order), never by expanding.
    """
    size: dict[int, int] = {}
    height: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        children = _children(node)
        if leaving:
            on_path.discard(id(node))
            size[id(node)] = 1 + sum(size[id(c)] for c in children)
            height[id(node)] = 1 + max((height[id(c)] for c in children), default=0)
            if size[id(node)] > max_nodes:
                raise _TooBig(
                    f"more than {max_nodes} values once aliases are expanded", node.start_mark
                )
            if height[id(node)] > max_depth:
                raise _TooBig(
                    f"nested more than {max_depth} levels deep once aliases are expanded",
                    node.start_mark,
                )
            continue
        if id(node) in size:
            continue
        if id(node) in on_path:
            raise _TooBig("an alias refers to a value that contains it", node.start_mark)
        on_path.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in size)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _where(mark: yaml.Mark | None) -> str:
    return f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""


def parse_yaml(
    text: str,
    source: str,
    *,
    max_nodes: int = MAX_YAML_NODES,
    max_depth: int = MAX_JSON_DEPTH,
) -> YamlDocument:
    """Parse one YAML document within the node and depth limits (see the module docstring).

    Args:
        text: The YAML text.
        source: Name of the input in error messages (usually the file path).

    Raises:
        YamlInputError: Not valid YAML, more than one document, or beyond a limit.
    """
    loader = _BoundedLoader(text, max_nodes, max_depth)
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_expanded(node, max_nodes, max_depth)
        data = loader.construct_document(node) if node is not None else None
    except _TooBig as exc:
        raise YamlInputError(
            f"{source}: YAML refused{_where(exc.mark)}: {exc}; memlab reads at most "
            f"{max_nodes} values, nested at most {max_depth} levels deep, without recursive "
            "aliases"
        ) from None
    except yaml.MarkedYAMLError as exc:
        problem = one_line(" ".join(p for p in (exc.context, exc.problem) if p), 200)
        raise YamlInputError(
            f"{source}: not valid YAML{_where(exc.problem_mark)}: {problem}"
        ) from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise YamlInputError(f"{source}: not valid YAML: {one_line(str(exc), 200)}") from None
    finally:
        loader.dispose()
    data, replaced = safe_json(data, where=source)  # YAML escapes spell surrogates too
    return YamlDocument(data=data, node=node, replaced_chars=replaced)


def read_text_limited(
    path: str | os.PathLike[str],
    *,
    what: str,
    max_bytes: int = MAX_YAML_BYTES,
    inside: str | os.PathLike[str] | None = None,
) -> str:
    """Read a UTF-8 text file of at most ``max_bytes`` bytes.

    Raises:
        YamlInputError: The file cannot be read, is too large, or is not UTF-8.
    """
    try:
        return read_text(path, what=what, max_bytes=max_bytes, inside=inside)
    except FileReadError as exc:
        raise YamlInputError(str(exc)) from None
    except OSError as exc:
        reason = io_reason(exc)
        raise YamlInputError(
            f"{one_line(os.fspath(path), 300)}: cannot read {what}: {reason}"
        ) from None


def read_yaml(
    path: str | os.PathLike[str],
    *,
    what: str = "YAML file",
    max_bytes: int = MAX_YAML_BYTES,
    inside: str | os.PathLike[str] | None = None,
) -> YamlDocument:
    """Read and parse a YAML file within memlab's limits (size, values, depth); ``inside``:
    a directory memlab owns that the file must stay in (see :mod:`memlab.core.base.files`).

    Raises:
        YamlInputError: One line naming the file and what is wrong.
    """
    text = read_text_limited(path, what=what, max_bytes=max_bytes, inside=inside)
    return parse_yaml(text, os.fspath(Path(path)))


def key_lines(node: yaml.Node | None) -> dict[str, int]:
    """Key path (``axes.prompt[1]``) -> 1-based line of its value, for every nested value.

    Aliases are walked once (a shared node keeps its first path), so a file of nested aliases
    cannot make this expand.
    """
    lines: dict[str, int] = {}
    seen: set[int] = set()
    stack: list[tuple[str, yaml.Node]] = [("", node)] if node is not None else []
    while stack:
        path, current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if path:
            lines[path] = current.start_mark.line + 1
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                if isinstance(key_node, yaml.ScalarNode):
                    key = str(key_node.value)
                    stack.append((f"{path}.{key}" if path else key, value_node))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend((f"{path}[{i}]", item) for i, item in enumerate(current.value))
    return lines
