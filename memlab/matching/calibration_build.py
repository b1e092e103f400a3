"""Building the bundled calibration sets from their sources under ``datasets/``.

Each set has a build script that turns its authored sources into rows
(``datasets/matching_src/build.py`` -> ``pairs.jsonl``, ``datasets/matching_longform_src/
build.py`` -> ``longform.jsonl``, ``datasets/matching_prefs_src/build.py`` ->
``preferences.jsonl``, all under ``datasets/matching/``). What the three share is here: the
split of a set's keys, the numbering of its rows, the refusal of a repeated pair or key, the
JSONL text, and writing the file or (``--check``) comparing it with the file on disk.

The split is fixed by the sources alone, never by a matcher: the keys of a group are ordered
by their SHA-256 and alternate between ``dev`` and ``test``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from memlab.errors import MemlabError, excerpt
from memlab.matching.calibration import SPLITS

__all__ = [
    "CalibrationSourceError",
    "alternate_splits",
    "digest",
    "number_pairs",
    "render_pairs",
    "run_build",
    "summary",
]

Row = dict[str, Any]


class CalibrationSourceError(MemlabError, ValueError):
    """The sources of a calibration set repeat a pair or a key.

    Attributes:
        what: What is repeated (``"pair"`` or ``"key"``).
        value: The repeated (gold, stored) pair or key.
    """

    def __init__(self, what: str, value: object) -> None:
        self.what = what
        self.value = value
        super().__init__(
            f"duplicate {what}: {excerpt(value, 300)}; remove or reword one of them in the sources"
        )


def digest(text: str) -> str:
    """The SHA-256 of ``text`` (UTF-8), in hex: the order of a split and a seed of choices."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def alternate_splits(keys: Iterable[str]) -> dict[str, str]:
    """Each key's split: the keys ordered by :func:`digest` alternate ``dev``, ``test``.

    Raises:
        CalibrationSourceError: A key is given twice.
    """
    ordered = sorted(keys, key=digest)
    repeated = [key for key, count in Counter(ordered).items() if count > 1]
    if repeated:
        raise CalibrationSourceError("key", repeated[0])
    return {key: SPLITS[position % len(SPLITS)] for position, key in enumerate(ordered)}


def number_pairs(rows: Iterable[Row], *, style: str, prefix: str = "") -> list[Row]:
    """The rows, each led by its id (``{prefix}{kind}-NNN``, counted per kind) and ``style``.

    Raises:
        CalibrationSourceError: Two rows have the same (gold, stored) pair.
    """
    seen: set[tuple[str, str]] = set()
    counters: Counter[str] = Counter()
    out = []
    for row in rows:
        pair = (row["gold"], row["stored"])
        if pair in seen:
            raise CalibrationSourceError("pair", pair)
        seen.add(pair)
        counters[row["kind"]] += 1
        number = f"{prefix}{row['kind']}-{counters[row['kind']]:03d}"
        out.append({"id": number, "style": style, **row})
    return out


def render_pairs(rows: Iterable[Row]) -> str:
    """The JSONL text of a set: one row a line, non-ASCII text kept as it is."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def summary(rows: Sequence[Row], out: Path) -> str:
    """What a build wrote: the pair and label counts, then true/false pairs per kind and split."""
    table = Counter((r["kind"], r["split"], r["label"]) for r in rows)
    labels = Counter(r["label"] for r in rows)
    lines = [f"{len(rows)} pairs ({labels[True]} true, {labels[False]} false) -> {out}"]
    for kind in dict.fromkeys(r["kind"] for r in rows):
        cells = [f"{s} {table[(kind, s, True)]}+/{table[(kind, s, False)]}-" for s in SPLITS]
        lines.append(f"  {kind:18} " + "  ".join(cells))
    return "\n".join(lines)


def run_build(
    argv: Sequence[str], *, build: Callable[[], list[Row]], out: Path, script: Path
) -> tuple[int, str]:
    """A build script's command: write ``out``, or with ``--check`` compare it with the build.

    ``script`` is the build script's own file (``datasets/NAME/build.py``), named in the
    message that a file is out of date. Returns the exit code and the text the script prints
    (each line ending in a newline): 0 and the :func:`summary` (nothing with ``--check``), 1 and
    the out-of-date message, or 2 and the error when the sources repeat a pair or a key (``out``
    is then left as it was). The caller prints it, on stderr when the code is not 0.
    """
    try:
        rows = build()
    except CalibrationSourceError as err:
        return 2, f"{script}: {err}\n"
    text = render_pairs(rows)
    if "--check" in argv:
        current = out.read_text(encoding="utf-8") if out.exists() else ""
        if current != text:
            rebuild = script.relative_to(script.parents[2]).as_posix()
            return 1, f"{out} is out of date; run {rebuild}\n"
        return 0, ""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return 0, summary(rows, out) + "\n"
