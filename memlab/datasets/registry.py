"""Datasets by name: the bundled ones (``smoke``, ``personas``), those a plugin registers, and
``<name>.jsonl`` files in the directory named by ``MEMLAB_DATASETS``.

A name a grid's ``dataset`` (or a command's dataset argument) gives is an entry of
:data:`DATASETS`: a :class:`NamedDataset` that locates its JSONL file. memlab registers the
two it ships in the repository's ``datasets/`` directory (``$MEMLAB_DATASETS`` may hold a file
of the same name that replaces it); a plugin adds one with
``DATASETS.register("name", NamedDataset(...))`` (:mod:`memlab.plugins`), e.g. a file inside
its own package. A path to an existing file is always read as that file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memlab.errors import MemlabError, excerpt
from memlab.plugins import Registry, declare, failure_hint

__all__ = [
    "BUNDLED_DATASETS",
    "DATASETS",
    "DATASETS_ENV",
    "DatasetNotFoundError",
    "NamedDataset",
    "bundled_dataset_names",
    "bundled_dataset_path",
    "dataset_dirs",
    "resolve_dataset",
]

#: Environment variable naming a directory that holds ``<name>.jsonl`` datasets.
DATASETS_ENV = "MEMLAB_DATASETS"

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class DatasetNotFoundError(MemlabError, FileNotFoundError):
    """A dataset name or path that does not resolve to a file."""


def dataset_dirs() -> list[Path]:
    """Directories searched for bundled datasets, in order.

    ``$MEMLAB_DATASETS`` first (when set), then ``datasets/`` at the root of the source
    checkout that holds the installed package (``memlab`` -> ``../datasets``).
    """
    dirs: list[Path] = []
    env = os.environ.get(DATASETS_ENV)
    if env:
        dirs.append(Path(env).expanduser())
    # This file is memlab/datasets/registry.py: three levels below the checkout's root.
    dirs.append(Path(__file__).resolve().parents[2] / "datasets")
    return dirs


def bundled_dataset_names() -> list[str]:
    """Names of the datasets found in :func:`dataset_dirs` (without ``.jsonl``)."""
    names: set[str] = set()
    for directory in dataset_dirs():
        if directory.is_dir():
            names.update(p.stem for p in directory.glob("*.jsonl"))
    return sorted(names)


def bundled_dataset_path(name: str) -> Path:
    """Return the file of a bundled dataset such as ``"smoke"`` or ``"personas"``.

    Raises:
        DatasetNotFoundError: when no searched directory holds ``<name>.jsonl``.
    """
    if not _NAME_RE.match(name) or name.endswith(".jsonl"):
        raise DatasetNotFoundError(
            f"{excerpt(name)} is not a dataset name; use a bare name such as 'smoke' or pass a "
            "file path"
        )
    searched = dataset_dirs()
    for directory in searched:
        candidate = directory / f"{name}.jsonl"
        if candidate.is_file():
            return candidate
    where = ", ".join(str(d) for d in searched)
    raise DatasetNotFoundError(
        f"bundled dataset {excerpt(name)} not found (searched: {where}); pass the path of a JSONL "
        f"file, or set {DATASETS_ENV} to the directory that holds {name}.jsonl"
    )


@dataclass(frozen=True)
class NamedDataset:
    """A dataset registered by name (see the module docstring).

    Attributes:
        description: One line for listings (``memlab plugins``).
        locate: Returns the dataset's JSONL file; raises :class:`DatasetNotFoundError`
            saying how to get it when it is not there.
    """

    description: str
    locate: Callable[[], Path]


def _bundled(name: str) -> Callable[[], Path]:
    return lambda: bundled_dataset_path(name)


BUNDLED_DATASETS: dict[str, str] = {
    "smoke": "a few hand-written owners: the fastest check of a pipeline",
    "personas": "labelled personas with gold facts and questions (memory QA)",
}
"""The datasets memlab ships in ``datasets/``, with their lines for listings."""

DATASETS: Registry[NamedDataset] = declare(
    "dataset",
    "dataset",
    entry_type=NamedDataset,
    builtins={
        name: NamedDataset(about, _bundled(name)) for name, about in BUNDLED_DATASETS.items()
    },
)
"""Every dataset by the name a grid's ``dataset`` gives (files in ``$MEMLAB_DATASETS`` are
found by name besides)."""


def resolve_dataset(spec: str | os.PathLike[str]) -> Path:
    """Resolve a dataset argument: an existing file path, else a dataset's name (an entry of
    :data:`DATASETS`, else a file of ``$MEMLAB_DATASETS``)."""
    path = Path(spec)
    text = os.fspath(spec)
    try:
        if path.is_file() or path.exists():  # a FIFO or a device: the loader says what it is
            return path
    except (OSError, ValueError) as exc:  # a name too long for the file system, a NUL byte
        reason = getattr(exc, "strerror", None) or str(exc)
        raise DatasetNotFoundError(
            f"dataset {excerpt(text)} cannot be opened: {reason}; pass an existing JSONL file "
            "or a bundled dataset name"
        ) from None
    looks_like_name = os.sep not in text and "/" not in text and not text.endswith(".jsonl")
    if looks_like_name:
        named = DATASETS.get(text)
        if named is not None:
            return named.locate()
        try:
            return bundled_dataset_path(text)
        except DatasetNotFoundError as exc:
            known = ", ".join(DATASETS)
            raise DatasetNotFoundError(
                f"{exc} (known datasets: {known})" + failure_hint()
            ) from None
    raise DatasetNotFoundError(f"dataset file not found: {excerpt(text, 300)}")
