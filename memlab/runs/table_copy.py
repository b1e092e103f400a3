"""Columnar copies of a run's tables, so that reading a large run again skips the row parse.

Reading ``calls.jsonl`` and ``sessions.jsonl`` of a 1,000-owner run (80,000 rows each) checks
every row against its model and builds a DataFrame from the row dicts: about 4 s of CPU in
every process that reads the run (``memlab report``, ``memlab compare``, a notebook). A command
that read a whole run and succeeded (``memlab report``, ``memlab compare``) keeps a columnar
copy of each table it parsed in ``cache/<table>.npz`` (:meth:`RunDir.table_copy`):
numeric columns as NumPy arrays, a column of text as its distinct values (one JSON list) and
each row's index into them, any other column as one JSON list, and a header naming the SHA-256
of the table the copy was made from (a table's text repeats: the four lanes of a run share
their replies, a lane names itself in every row). Later reads use the copy when that hash is
the one the manifest records (and :func:`memlab.runs.run.load_run` checked) and the copy reads
back whole; otherwise they read the table. Reading alone never writes into the run directory
(a command refused after reading leaves it as it was).
A lane's final facts (read from its 1,000 owner records) are kept the same way,
``cache/<lane>.final_facts.npz``, named by the SHA-256 of the records they were read from
(:meth:`memlab.runs.run.Run.final_facts`).

A copy is written only when it reads back as exactly the frame read from the table (columns,
dtypes, values), so a frame is the same whichever way it was read. It holds no pickled objects
(NumPy loads it with ``allow_pickle=False``): a copy in a run directory received from someone
else cannot run code. A copy that cannot be written (a read-only directory) is skipped.
"""

from __future__ import annotations

import io
import json
import logging
import zipfile
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from memlab.core.base.files import MAX_TABLE_BYTES, FileReadError
from memlab.runs.records import read_rows
from memlab.runs.rundir import RunDir, RunError

__all__ = ["COPY_FORMAT", "decode_table", "encode_table", "keep_copy", "read_copy", "read_table"]

logger = logging.getLogger(__name__)

COPY_FORMAT = 2
"""Version of the copy's layout; a copy of another version is ignored (and written again)."""
_HEADER = "header"
_NUMERIC = "biuf"  # NumPy kinds kept as arrays: bool, signed and unsigned integers, floats


def read_table(
    run_dir: RunDir,
    name: str,
    model: type[BaseModel],
    expected: dict[str, Any] | None,
    *,
    copy: bool = False,
) -> tuple[pd.DataFrame, bytes | None]:
    """The table ``name`` of the run as a DataFrame: from its columnar copy when the copy was
    made from the table whose checksum the manifest records (``expected``), else from the
    table. With ``copy``, a table read from its rows also gives its encoded copy for
    :func:`keep_copy` (``None`` otherwise, or when it cannot be copied exactly); a read never
    writes.

    Raises:
        RecordError: The table has a bad row (as :func:`memlab.runs.records.read_rows`).
    """
    sha256 = expected.get("sha256") if isinstance(expected, dict) else None
    if isinstance(sha256, str):
        frame = read_copy(run_dir, name, sha256)
        if frame is not None:
            return frame, None
    frame = pd.DataFrame(read_rows(run_dir.file(name), model, inside=run_dir.path))
    if copy and isinstance(sha256, str):
        return frame, encode_table(frame, sha256)
    return frame, None


def keep_copy(run_dir: RunDir, name: str, data: bytes) -> None:
    """Write ``data`` as the columnar copy of the table ``name``; a directory that cannot take
    it (read-only, a file in the way) is logged and left as it is."""
    path = run_dir.table_copy(name)
    try:
        run_dir.make_dir(path.parent, "table copies")
        run_dir.write_bytes(path, data, durable=False)
    except (OSError, RunError) as exc:
        logger.info("%s: columnar copy not written (%s)", path, exc)


def read_copy(run_dir: RunDir, name: str, sha256: str) -> pd.DataFrame | None:
    """The frame the copy ``name`` holds when it was made from the data whose checksum is
    ``sha256``; ``None`` when there is no such copy (missing, stale, damaged: logged)."""
    copy = run_dir.table_copy(name)
    try:
        data = run_dir.read_file_bytes(copy, "table copy", MAX_TABLE_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, FileReadError, RunError) as exc:
        logger.info("%s: columnar copy ignored (%s)", copy, exc)
        return None
    frame = decode_table(data, sha256)
    if frame is None:
        logger.info("%s: columnar copy ignored (stale or unreadable)", copy)
    return frame


def encode_table(frame: pd.DataFrame, sha256: str) -> bytes | None:
    """The columnar copy of ``frame`` (read from the table whose checksum is ``sha256``), or
    ``None`` when the copy would not read back as exactly ``frame``."""
    if not isinstance(frame.index, pd.RangeIndex) or frame.index.start != 0:
        return None
    arrays: dict[str, np.ndarray[Any, Any]] = {}
    columns = []
    try:
        for i, column in enumerate(frame.columns):
            values = frame[column]
            kind = _kind(values.dtype)
            if kind == "array":
                arrays[f"c{i}"] = values.to_numpy()
            else:
                kind = _encode_cells(values, i, arrays)
            columns.append([str(column), str(values.dtype), kind])
    except (TypeError, ValueError):  # a value JSON cannot hold
        return None
    header = {"format": COPY_FORMAT, "sha256": sha256, "rows": len(frame), "columns": columns}
    arrays[_HEADER] = _text_array(json.dumps(header))
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    data = buffer.getvalue()
    back = decode_table(data, sha256)
    if back is None or not _same(back, frame):
        return None
    return data


def decode_table(data: bytes, sha256: str) -> pd.DataFrame | None:
    """The frame a columnar copy holds, or ``None`` when it is not a copy of the table whose
    checksum is ``sha256`` or does not read back whole (truncated, edited, another format)."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as found:
            header = json.loads(found[_HEADER].tobytes())
            if not (
                isinstance(header, dict)
                and header.get("format") == COPY_FORMAT
                and header.get("sha256") == sha256
            ):
                return None
            rows, columns = header["rows"], {}
            for i, (name, dtype, kind) in enumerate(header["columns"]):
                distinct = found[f"u{i}"] if kind == "text" else None
                column = _column(found[f"c{i}"], str(dtype), kind, distinct)
                if len(column) != rows or name in columns:
                    return None
                columns[str(name)] = column
        return pd.DataFrame(columns, index=pd.RangeIndex(rows))
    except (OSError, ValueError, TypeError, KeyError, EOFError, zipfile.BadZipFile):
        return None


def _kind(dtype: Any) -> str:
    return "array" if isinstance(dtype, np.dtype) and dtype.kind in _NUMERIC else "json"


def _text_array(text: str) -> np.ndarray[Any, Any]:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def _encode_cells(values: pd.Series, i: int, arrays: dict[str, np.ndarray[Any, Any]]) -> str:
    """Store the cells of column ``i`` in ``arrays`` and give their kind: ``text`` (every
    cell text, none missing: the distinct values once and each row's index into them) or
    ``json``."""
    cells = values.to_numpy(dtype=object)
    if len(cells) and pd.api.types.infer_dtype(cells, skipna=False) == "string":
        codes, distinct = pd.factorize(cells)
        arrays[f"c{i}"] = codes.astype(np.int64, copy=False)
        arrays[f"u{i}"] = _text_array(json.dumps(distinct.tolist(), ensure_ascii=False))
        return "text"
    arrays[f"c{i}"] = _text_array(json.dumps(values.tolist(), ensure_ascii=False))
    return "json"


def _column(
    array: np.ndarray[Any, Any], dtype: str, kind: str, distinct: np.ndarray[Any, Any] | None
) -> Any:
    if kind == "array":
        if array.ndim != 1 or str(array.dtype) != dtype:
            raise ValueError(f"column of {array.dtype}, the header says {dtype}")
        return array
    if kind == "text" and distinct is not None:
        cells = _text_cells(array, distinct)
    elif kind == "json" and array.dtype == np.uint8:
        values = json.loads(array.tobytes())
        if not isinstance(values, list):
            raise ValueError("a JSON column is not a list")
        cells = np.fromiter(values, dtype=object, count=len(values))
    else:
        raise ValueError(f"unknown column kind {kind!r}")
    if dtype == "object":  # lists stay values of one cell; text stays of dtype object
        return pd.Series(cells, dtype=object, copy=False)
    return pd.Series(cells, dtype=pd.api.types.pandas_dtype(dtype))


def _text_cells(codes: np.ndarray[Any, Any], distinct: np.ndarray[Any, Any]) -> Any:
    """The cells of a ``text`` column: its distinct values taken at each row's index."""
    if distinct.dtype != np.uint8 or codes.dtype != np.int64 or codes.ndim != 1:
        raise ValueError("a text column is not an index into a list of values")
    values = json.loads(distinct.tobytes())
    if not isinstance(values, list) or not all(type(value) is str for value in values):
        raise ValueError("a text column's values are not a list of text")
    if len(codes) and (codes.min() < 0 or codes.max() >= len(values)):
        raise ValueError("a text column indexes past its values")
    return np.fromiter(values, dtype=object, count=len(values))[codes]


def _same(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    return (
        list(a.columns) == list(b.columns)
        and list(map(str, a.dtypes)) == list(map(str, b.dtypes))
        and a.equals(b)
    )
