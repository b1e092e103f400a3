"""Locate the bundled datasets (``smoke``, ``personas``) shipped in the repository's
``datasets/`` directory, or in the directory named by ``MEMLAB_DATASETS``."""

from __future__ import annotations

import os
import re
from pathlib import Path

from memlab.errors import MemlabError, excerpt

__all__ = [
    "DATASETS_ENV",
    "DatasetNotFoundError",
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
    checkout that holds the installed package (``src/memlab`` -> ``../../datasets``).
    """
    dirs: list[Path] = []
    env = os.environ.get(DATASETS_ENV)
    if env:
        dirs.append(Path(env).expanduser())
    # This file is src/memlab/datasets/registry.py: four levels below the checkout's root.
    dirs.append(Path(__file__).resolve().parents[3] / "datasets")
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


def resolve_dataset(spec: str | os.PathLike[str]) -> Path:
    """Resolve a dataset argument: an existing file path, else a bundled dataset name."""
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
        return bundled_dataset_path(text)
    raise DatasetNotFoundError(f"dataset file not found: {excerpt(text, 300)}")
