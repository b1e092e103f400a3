"""The dataset file a run replayed, found again and checked by its content hash.

A sweep records its dataset in ``grid.yaml`` as an absolute, resolved path (``dataset``) and
the file's SHA-256 (``dataset_sha256``). Every later step that reads the dataset (memory QA,
the consolidation curve, rescoring, the report, a fork, a prompt trial) goes through
:func:`recorded_dataset`: a file at that path whose content differs is refused with
:class:`DatasetChangedError`, never read as if it were the one replayed (other owners under
the same ids would be scored as the run's).

Runs written before the path was made absolute recorded it as typed, relative to where the
sweep was started; such a path is tried from the working directory and from the folder that
holds the runs folder (``runs/NAME`` -> ``.``), and the file whose hash matches is the one.
"""

from __future__ import annotations

from pathlib import Path

from memlab.backends.identity import file_digest
from memlab.core.base.yamlio import read_yaml
from memlab.errors import MemlabError
from memlab.runs.rundir import RunDir

__all__ = ["DatasetChangedError", "recorded_dataset"]


class DatasetChangedError(MemlabError, ValueError):
    """The file at a run's recorded dataset path is not the one the run replayed.

    Attributes:
        run_path: The run directory.
        dataset: The file found at the recorded path.
        recorded: The SHA-256 the run recorded.
        found: The SHA-256 of the file found.
    """

    def __init__(self, run_path: Path, dataset: Path, recorded: str, found: str) -> None:
        self.run_path = run_path
        self.dataset = dataset
        self.recorded = recorded
        self.found = found
        super().__init__(
            f"{dataset}: not the dataset {run_path} replayed (the run recorded sha256 "
            f"{recorded[:16]}, this file has {found[:16]}); put the replayed file back at "
            "that path, or sweep again on this one"
        )


def recorded_dataset(run_path: Path) -> Path | None:
    """The dataset file the run at ``run_path`` replayed, resolved, when it is still there.

    Returns ``None`` when ``grid.yaml`` names no dataset or no file is at its path. A run that
    recorded no hash (an older memlab) gets the file at its path unchecked.

    Raises:
        DatasetChangedError: A file is there, but its content hash is not the recorded one.
    """
    try:
        data = read_yaml(RunDir(run_path).grid_file, inside=run_path).data
    except (MemlabError, OSError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("dataset"), str):
        return None
    found = [path for path in _candidates(run_path, data["dataset"]) if path.is_file()]
    if not found:
        return None
    digest = data.get("dataset_sha256")
    if not isinstance(digest, str) or not digest:
        return found[0]
    for path in found:
        if file_digest(path) == digest:
            return path
    raise DatasetChangedError(run_path, found[0], digest, file_digest(found[0]))


def _candidates(run_path: Path, recorded: str) -> list[Path]:
    path = Path(recorded)
    if path.is_absolute():
        return [path.resolve()]
    # As typed, from where the sweep was started: here, or the folder holding the runs folder.
    places = [Path.cwd(), run_path.resolve().parent.parent]
    return list(dict.fromkeys((place / path).resolve() for place in places))
