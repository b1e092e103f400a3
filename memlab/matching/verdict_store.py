"""The default matcher's verdicts kept beside the response cache.

A verdict depends only on the two texts, the matcher's parameters and embedding model, and the
matcher's code and word lists. A sweep with a response cache saves the verdicts it decided in
``<cache>/verdicts/``, and the next sweep on that cache (a replay from the cache, in a new
process) reads them instead of deciding every (stored, gold) pair again.

One file per matcher configuration; it records a digest of the matching code, the word lists
and the versions of the packages the reading uses, and is ignored (then replaced) when any of
them changed. Format 2 keeps the verdicts as five columns (``stored``, ``gold``, ``score``,
``matched``, ``reason``): reading tens of thousands of rows as lists of five left the garbage
collector a full pass over the process's objects to do. Files of format 1 (one
``[stored, gold, score, matched, reason]`` row per verdict, under ``verdicts``) are still
read; an older memlab ignores a format 2 file and replaces it.

The response cache's tools (``memlab cache stats|prune``) read only the cache's two-letter
shard directories, so they leave these files alone. A file that cannot be read is ignored: it
is a cache.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from importlib import metadata
from pathlib import Path
from typing import Any

from memlab.core.base.atomic import atomic_write_text
from memlab.core.base.files import MAX_TABLE_BYTES, read_bytes
from memlab.matching.base import FactMatcher, MatchResult
from memlab.matching.default_matcher import DefaultMatcher

__all__ = ["VERDICTS_DIR", "load_verdicts", "save_verdicts", "verdicts_path"]

logger = logging.getLogger(__name__)

VERDICTS_DIR = "verdicts"
_FORMAT = 2
_COLUMNS = ("stored", "gold", "score", "matched", "reason")
_PACKAGES = ("simplemma", "snowballstemmer", "wordllama")  # the fact reader's and embeddings'


@functools.cache
def _code_digest() -> str:
    """Digest of what a verdict is computed with: the matching package's files (code and word
    lists), the text normalisation of the core, and the reading packages' versions."""
    here = Path(__file__).resolve().parent
    files = sorted(p for p in here.iterdir() if p.suffix in (".py", ".yaml", ".json"))
    files.append(here.parent / "core" / "jsondoc" / "similarity.py")
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for name in _PACKAGES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"{name}={version}\0".encode())
    return digest.hexdigest()


def verdicts_path(matcher: FactMatcher, cache_dir: str | Path) -> Path | None:
    """The file of ``matcher``'s verdicts in ``cache_dir``; None for a matcher whose verdicts
    are not kept (not the default matcher, or with an embedder other than the bundled one)."""
    if not isinstance(matcher, DefaultMatcher) or matcher.memo_key is None:
        return None
    config = hashlib.sha256(repr(matcher.memo_key).encode()).hexdigest()[:24]
    return Path(cache_dir) / VERDICTS_DIR / f"{config}.json"


def load_verdicts(matcher: FactMatcher, cache_dir: str | Path) -> int:
    """Add the verdicts saved for ``matcher`` to its memo; return how many were read."""
    path = verdicts_path(matcher, cache_dir)
    if path is None or not path.is_file():
        return 0
    assert isinstance(matcher, DefaultMatcher)
    try:
        raw = read_bytes(path, what="matcher verdicts", max_bytes=MAX_TABLE_BYTES)
        try:
            data = json.loads(raw)
        except RecursionError:  # the shape check below bounds what is kept
            raise ValueError("nested too deeply to be a verdicts file") from None
        pairs = _decode(data)
    except (OSError, ValueError, TypeError, OverflowError) as exc:
        logger.warning("ignoring the saved matcher verdicts %s: %s", path, exc)
        return 0
    if pairs is None:
        return 0  # saved by another version of the matcher: it is replaced on save
    matcher.remember(pairs)
    return len(pairs)


def save_verdicts(matcher: FactMatcher, cache_dir: str | Path) -> int:
    """Write ``matcher``'s memo to ``cache_dir`` (atomically); return how many were written."""
    path = verdicts_path(matcher, cache_dir)
    if path is None:
        return 0
    assert isinstance(matcher, DefaultMatcher)
    decided = matcher.decided()
    rows = [(s, g, r.score, r.matched, r.reason) for (s, g), r in decided.items()]
    columns = zip(*rows, strict=True) if rows else ((),) * len(_COLUMNS)
    data = {
        "format": _FORMAT,
        "code": _code_digest(),
        "matcher": matcher.name,
        **{name: list(column) for name, column in zip(_COLUMNS, columns, strict=True)},
    }
    try:
        atomic_write_text(path, json.dumps(data, ensure_ascii=False))
    except OSError as exc:
        logger.warning("cannot save the matcher verdicts to %s: %s", path, exc)
        return 0
    return len(rows)


def _decode(data: Any) -> dict[tuple[str, str], MatchResult] | None:
    """The verdicts of a decoded file, or None when another matcher code saved them.

    Every verdict is checked to be (text, text, number, bool, text) (so nothing nested is
    kept, whatever the file holds), a column at a time: the file holds tens of thousands of
    verdicts and a replay reads it at the start of every sweep.
    """
    if not isinstance(data, dict) or data.get("format") not in (1, _FORMAT):
        raise ValueError("not a verdicts file of this format")
    if data.get("code") != _code_digest():
        return None
    if data["format"] == 1:
        stored, gold, score, matched, reason = _row_columns(data.get("verdicts"))
    else:
        columns: list[Any] = [data.get(name) for name in _COLUMNS]
        if not all(type(column) is list for column in columns):
            raise ValueError("the verdicts are not five lists")
        if len(set(map(len, columns))) != 1:
            raise ValueError("the verdicts' columns differ in length")
        stored, gold, score, matched, reason = columns
    if not (
        _STR.issuperset(map(type, stored))
        and _STR.issuperset(map(type, gold))
        and _NUMBER.issuperset(map(type, score))
        and _BOOL.issuperset(map(type, matched))
        and _STR.issuperset(map(type, reason))
    ):
        raise ValueError("a verdict row is not (text, text, score, matched, reason)")
    # One (frozen) result per distinct verdict: a few hundred objects for tens of thousands
    # of rows, so reading the file leaves little for the garbage collector to walk.
    verdicts = list(zip(score, matched, reason, strict=True))
    shared = {v: MatchResult(float(v[0]), v[1], v[2]) for v in set(verdicts)}
    # One string per distinct text: the parser makes a new one per occurrence, and a text is
    # in a pair with every text of the other side of its owner (about 20 times each).
    texts: dict[str, str] = {}
    keys = zip(
        map(texts.setdefault, stored, stored), map(texts.setdefault, gold, gold), strict=True
    )
    return dict(zip(keys, map(shared.__getitem__, verdicts), strict=True))


def _row_columns(rows: Any) -> tuple[Any, ...]:
    """The five columns of format 1's rows (each ``[stored, gold, score, matched, reason]``)."""
    if type(rows) is not list or not _LIST.issuperset(map(type, rows)):
        raise ValueError("the verdicts are not a list of rows")
    if not _FIVE.issuperset(map(len, rows)):
        raise ValueError("a verdict row is not (text, text, score, matched, reason)")
    return tuple(zip(*rows, strict=True)) if rows else ((),) * 5


# The exact types json.loads gives (a bool is a number too, as isinstance(True, int) says).
_LIST = frozenset({list})
_STR = frozenset({str})
_NUMBER = frozenset({int, float, bool})
_BOOL = frozenset({bool})
_FIVE = frozenset({5})
