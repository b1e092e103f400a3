"""Package faces that import each exported name on first use (PEP 562).

A face declares its names once, as the re-exports of its ``if TYPE_CHECKING:`` block::

    if TYPE_CHECKING:
        from memlab.scoring.metrics import summarize as summarize
    else:
        __getattr__, __dir__ = lazy_face(__name__)

Type checkers and IDEs read the block (``X as X`` is an explicit re-export, so mypy's strict
mode accepts ``from memlab.scoring import summarize``) and skip the ``else`` branch, so a name
the face does not declare is an error for them rather than ``Any``. At run time the block does
not run, and :func:`lazy_face` reads it from the face's source on the first attribute lookup
to learn where each name lives. ``import memlab.scoring`` then loads nothing but the face, and
``memlab.scoring.summarize`` imports :mod:`memlab.scoring.metrics` when it is first read. A
command or a notebook thereby pays only for the modules it uses (pandas, matplotlib and numpy
load with the first name that needs them). ``__all__`` is the declared names, computed on first
use; a literal ``__all__`` would repeat them (and one mypy cannot read hides them all).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

from memlab.errors import MemlabError

__all__ = ["FaceError", "face_exports", "lazy_face"]


class FaceError(MemlabError, ImportError):
    """A face's ``TYPE_CHECKING`` block is not a list of ``from M import X as X`` lines.

    Raised when the face is first used, naming the face, the line and how to write it
    (``tests/test_public_api.py`` reads every face of memlab, so its own never raise it).
    """

    def __init__(self, face: str, line: int, problem: str) -> None:
        self.face = face
        self.line = line
        self.problem = problem
        super().__init__(
            f"{face} (__init__.py line {line}): {problem}; declare each exported name once as "
            "'from MODULE import NAME as NAME' inside 'if TYPE_CHECKING:'"
        )


def face_exports(package: str, source: str) -> dict[str, str]:
    """Exported name -> the module that defines it, read from a face's ``TYPE_CHECKING`` block.

    Args:
        package: The package's name (relative imports are resolved against it).
        source: The source of the package's ``__init__.py``.

    Raises:
        FaceError: A statement in the block is not ``from M import X as X``, or a name is
            declared twice.
    """
    import ast  # here: a face is read on first use, and ``import memlab`` stays light

    exports: dict[str, str] = {}
    for block in ast.parse(source).body:
        if not (isinstance(block, ast.If) and _is_type_checking(block.test)):
            continue
        for stmt in block.body:
            if not isinstance(stmt, ast.ImportFrom):
                raise FaceError(package, stmt.lineno, "only 'from ... import' lines belong here")
            module = importlib.util.resolve_name("." * stmt.level + (stmt.module or ""), package)
            for alias in stmt.names:
                if alias.asname != alias.name:
                    raise FaceError(package, stmt.lineno, f"{alias.name!r} is not re-exported")
                if alias.name in exports:
                    raise FaceError(package, stmt.lineno, f"{alias.name!r} is declared twice")
                exports[alias.name] = module
    return exports


def _is_type_checking(test: object) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING`` (an ``ast`` node)."""
    return getattr(test, "attr", getattr(test, "id", None)) == "TYPE_CHECKING"


def lazy_face(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the face of ``package``.

    Besides the declared names and ``__all__``, the package's modules are reachable as
    attributes before anyone imported them (``memlab.reporting.figures.charts`` after
    ``import memlab``), as with a face that imports them eagerly.

    Args:
        package: The package's name (``__name__`` of its ``__init__``).
    """
    read: list[dict[str, str]] = []  # the face's source is read once, on first use

    def exports() -> dict[str, str]:
        if not read:
            spec = sys.modules[package].__spec__
            loader = spec.loader if spec is not None else None
            get_source = getattr(loader, "get_source", None)
            source = get_source(package) if get_source is not None else None
            if source is None:
                raise FaceError(package, 0, "its source cannot be read")
            read.append(face_exports(package, source))
        return read[0]

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            value: Any = list(exports())
        elif name in exports():
            value = getattr(importlib.import_module(exports()[name]), name)
        elif not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}"):
            return importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports()})

    return __getattr__, __dir__
