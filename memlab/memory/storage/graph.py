"""The procedural memory's graph: procedures, their ordered steps and the triggers that
activate them, in Kuzu, an embedded graph database queried in Cypher.

The graph follows the seed's model::

    (:Trigger {text})-[:ACTIVATES]->(:Procedure {name})-[:HAS_STEP]->(:Step {text})

with what the seed leaves implicit made explicit: each step keeps its ``position`` (Cypher's
``collect`` promises no order), a procedure keeps how many steps and triggers it was written
with (so a reader can tell a whole procedure from a partial one), and triggers are kept
case-folded (Cypher's ``CONTAINS`` is case-sensitive). A procedure is learned with the seed's
``CREATE ... UNWIND $steps ... UNWIND $triggers`` statement and recalled with its
``MATCH (t:Trigger)-[:ACTIVATES]->(p:Procedure)-[:HAS_STEP]->(s:Step) WHERE $context CONTAINS
t.text`` query. A procedure learned again under the same name (case-folded) replaces the
earlier one, in the same transaction.

Crash safety: every write is one Kuzu transaction (write-ahead log, replayed or dropped on
the next open), so a process killed mid-write leaves either the whole procedure or none of
it. Opening checks the file first, read-only: a file that is not Kuzu's, a Kuzu database
that is not memlab's, or one whose procedures are not whole, is refused with one line
(:class:`CorruptGraphError`) and left byte-identical.

Kuzu is an optional dependency (``memlab[procedural]``); without it opening raises
:class:`GraphUnavailableError`, naming the extra.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memlab.core.jsondoc.document import normalize_fact_text
from memlab.core.pipeline.storage import StorageError
from memlab.memory.storage.database import to_us

__all__ = [
    "GRAPH_SCHEMA",
    "CorruptGraphError",
    "GraphUnavailableError",
    "ProceduralGraph",
    "Procedure",
    "clean_triggers",
    "graph_available",
    "graph_files",
    "recall_procedures",
]

GRAPH_SCHEMA = "memlab-procedural/1"
"""The ``schema`` value of a graph's ``Meta`` node; another value is refused."""

_TABLES = (
    "CREATE NODE TABLE Meta(key STRING, value STRING, PRIMARY KEY(key))",
    "CREATE NODE TABLE Procedure(id STRING, name STRING, key STRING, source STRING, "
    "created_us INT64, steps INT64, triggers INT64, PRIMARY KEY(id))",
    "CREATE NODE TABLE Step(id STRING, text STRING, position INT64, PRIMARY KEY(id))",
    "CREATE NODE TABLE Trigger(id STRING, text STRING, PRIMARY KEY(id))",
    "CREATE REL TABLE HAS_STEP(FROM Procedure TO Step)",
    "CREATE REL TABLE ACTIVATES(FROM Trigger TO Procedure)",
)

# The seed's learn_procedure, with positions, ids and the counts a reader checks.
_LEARN = """
CREATE (p:Procedure {id: $id, name: $name, key: $key, source: $source, created_us: $at,
                     steps: size($steps), triggers: size($triggers)})
WITH p
UNWIND range(1, size($steps)) AS i
CREATE (s:Step {id: $id + '/step/' + cast(i, 'STRING'), text: $steps[i], position: i})
CREATE (p)-[:HAS_STEP]->(s)
WITH DISTINCT p
UNWIND range(1, size($triggers)) AS j
CREATE (t:Trigger {id: $id + '/trigger/' + cast(j, 'STRING'), text: $triggers[j]})
CREATE (t)-[:ACTIVATES]->(p)
"""

# The seed's recall_procedure: steps come back with their positions (ordered here) and a
# procedure two triggers activate comes back once.
_RECALL = """
MATCH (t:Trigger)-[:ACTIVATES]->(p:Procedure)
WHERE $context CONTAINS t.text
WITH DISTINCT p
MATCH (p)-[:HAS_STEP]->(s:Step)
RETURN p.id, p.name, collect([cast(s.position, 'STRING'), s.text])
"""

_ALL = """
MATCH (p:Procedure)
OPTIONAL MATCH (p)-[:HAS_STEP]->(s:Step)
WITH p, collect([cast(s.position, 'STRING'), s.text]) AS steps
OPTIONAL MATCH (t:Trigger)-[:ACTIVATES]->(p)
RETURN p.id, p.name, p.source, p.created_us, p.steps, p.triggers, steps, collect(t.text)
"""

_FORGET = (
    "MATCH (p:Procedure {key: $key})-[:HAS_STEP]->(s:Step) DETACH DELETE s",
    "MATCH (t:Trigger)-[:ACTIVATES]->(p:Procedure {key: $key}) DETACH DELETE t",
    "MATCH (p:Procedure {key: $key}) DETACH DELETE p",
)

# Kuzu reserves address space for its buffer pool and database: a lane's graph is small.
_BUFFER_POOL_BYTES = 64 << 20
_MAX_DB_BYTES = 1 << 32


class GraphUnavailableError(StorageError):
    """Kuzu is not installed (the procedural memory needs ``memlab[procedural]``)."""

    def __init__(self) -> None:
        super().__init__(
            "the procedural memory needs the Kuzu graph database: pip install 'memlab[procedural]'"
        )


class CorruptGraphError(StorageError):
    """The file is not a readable procedural memory graph; it was left untouched.

    Attributes:
        path: The graph file.
        detail: What Kuzu (or the check on opening) reported.
    """

    def __init__(self, path: Path, detail: str) -> None:
        self.path = path
        self.detail = detail
        first_line = detail.strip().splitlines()[0] if detail.strip() else "unreadable"
        super().__init__(
            f"procedural memory graph {path} is unreadable ({first_line}); it was left as it "
            "is. Move it away (a new run starts an empty graph) or restore it from a copy.",
            path=path,
        )


@dataclass(frozen=True)
class Procedure:
    """One learned procedure.

    Attributes:
        name: As the model named it.
        steps: In order.
        triggers: Case-folded texts whose occurrence in a context recalls it.
        source: The thread it was learned from.
        created_at: When it was learned (virtual time).
    """

    name: str
    steps: tuple[str, ...]
    triggers: tuple[str, ...]
    source: str = ""
    created_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the ``procedures`` list of the memory document a snapshot shows)."""
        return {"name": self.name, "steps": list(self.steps), "triggers": list(self.triggers)}


def graph_available() -> bool:
    """True when Kuzu can be imported."""
    try:
        importlib.import_module("kuzu")
    except ImportError:
        return False
    return True


def graph_files(path: Path) -> tuple[Path, ...]:
    """The graph file and the files Kuzu keeps beside it (its write-ahead log)."""
    return (path, Path(f"{path}.wal"), Path(f"{path}.shadow"))


def clean_triggers(triggers: Iterable[str]) -> tuple[str, ...]:
    """Triggers as stored: case-folded, stripped, empty ones and repeats dropped."""
    return tuple(dict.fromkeys(t for t in (normalize_fact_text(x) for x in triggers) if t))


def recall_procedures(
    procedures: Sequence[Mapping[str, Any]], context: str
) -> list[Mapping[str, Any]]:
    """The procedures (memory document entries) one of whose triggers occurs in ``context``,
    case-folded: the rule the graph's recall query applies, for a snapshot's copy."""
    text = normalize_fact_text(context)
    return [
        p
        for p in procedures
        if any(isinstance(t, str) and t and t in text for t in p.get("triggers", ()))
    ]


def _kuzu() -> Any:
    try:
        return importlib.import_module("kuzu")
    except ImportError:
        raise GraphUnavailableError() from None


def _rows(result: Any) -> list[list[Any]]:
    rows: list[list[Any]] = []
    while result.has_next():
        rows.append(list(result.get_next()))
    return rows


def _ordered(pairs: Sequence[Sequence[Any]]) -> tuple[str, ...]:
    """Step texts ordered by their positions (``[[position, text], ...]``, nulls dropped)."""
    kept = [(int(p), str(t)) for p, t in pairs if p is not None and t is not None]
    return tuple(text for _, text in sorted(kept))


class ProceduralGraph:
    """One lane owner's procedures in a Kuzu database file (see the module docstring).

    Args:
        path: The database file; ``None``: in memory.

    Raises:
        GraphUnavailableError: Kuzu is not installed.
        CorruptGraphError: ``path`` exists and is not a whole procedural memory graph.
    """

    def __init__(self, path: Path | None) -> None:
        kuzu = _kuzu()
        self.path = path
        self.lock = threading.RLock()
        if path is not None and path.exists():
            self._check(kuzu, path)
        elif path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._db = self._open(kuzu, path, read_only=False)
        self._conn = kuzu.Connection(self._db, num_threads=1)
        if path is None or not self._has_tables(self._conn):
            self._create()

    # ------------------------------------------------------------------ opening

    @staticmethod
    def _open(kuzu: Any, path: Path | None, read_only: bool) -> Any:
        return kuzu.Database(
            ":memory:" if path is None else str(path),
            read_only=read_only,
            buffer_pool_size=_BUFFER_POOL_BYTES,
            max_num_threads=1,
            max_db_size=_MAX_DB_BYTES,
        )

    @staticmethod
    def _has_tables(conn: Any) -> bool:
        names = {str(row[1]) for row in _rows(conn.execute("CALL show_tables() RETURN *"))}
        return "Meta" in names

    def _check(self, kuzu: Any, path: Path) -> None:
        """Refuse a file that is not a whole memlab graph, reading it only."""
        if path.stat().st_size == 0:
            raise CorruptGraphError(path, "an empty file")
        try:
            db = self._open(kuzu, path, read_only=True)
        except Exception as exc:  # Kuzu raises RuntimeError for every unreadable file
            raise CorruptGraphError(path, str(exc)) from None
        try:
            conn = kuzu.Connection(db, num_threads=1)
            if not self._has_tables(conn):
                raise CorruptGraphError(path, "a Kuzu database without memlab's tables")
            found = _rows(conn.execute("MATCH (m:Meta {key: 'schema'}) RETURN m.value"))
            if not found or found[0][0] != GRAPH_SCHEMA:
                raise CorruptGraphError(
                    path, f"schema {found[0][0] if found else 'none'!r}, expected {GRAPH_SCHEMA!r}"
                )
            partial = self._partial(conn)
            if partial:
                raise CorruptGraphError(path, f"procedure {partial!r} is not whole")
        except CorruptGraphError:
            raise
        except Exception as exc:
            raise CorruptGraphError(path, str(exc)) from None
        finally:
            db.close()

    @staticmethod
    def _partial(conn: Any) -> str | None:
        """The id of a procedure with fewer steps or triggers than it was written with."""
        for row in _rows(conn.execute(_ALL)):
            steps = [pair for pair in row[6] if pair[0] is not None]
            triggers = [t for t in row[7] if t is not None]
            if len(steps) != row[4] or len(triggers) != row[5]:
                return str(row[0])
        return None

    def _create(self) -> None:
        with self._transaction() as conn:
            for statement in _TABLES:
                conn.execute(statement)
        with self._transaction() as conn:
            conn.execute("CREATE (:Meta {key: 'schema', value: $v})", {"v": GRAPH_SCHEMA})

    # ------------------------------------------------------------------ writes and reads

    def _transaction(self) -> _Transaction:
        return _Transaction(self)

    def learn(self, procedure: Procedure, at: datetime) -> None:
        """Store ``procedure`` (replacing one of the same name), in one transaction.

        Raises:
            StorageError: The procedure has no step or no trigger, or the database failed
                (nothing written).
        """
        steps = [s.strip() for s in procedure.steps if s.strip()]
        triggers = list(clean_triggers(procedure.triggers))
        if not steps or not triggers:
            missing = "step" if not steps else "trigger"
            raise StorageError(f"procedure {procedure.name!r} has no {missing}; nothing was stored")
        key = normalize_fact_text(procedure.name)
        moment = to_us(at)
        params = {
            "id": f"{key}@{moment}",
            "name": procedure.name.strip(),
            "key": key,
            "source": procedure.source,
            "at": moment,
            "steps": steps,
            "triggers": triggers,
        }
        with self._transaction() as conn:
            for statement in _FORGET:
                conn.execute(statement, {"key": key})
            conn.execute(_LEARN, params)

    def recall(self, context: str) -> list[Procedure]:
        """The procedures one of whose triggers occurs in ``context`` (case-folded), in the
        order they were learned."""
        with self.lock:
            rows = _rows(self._conn.execute(_RECALL, {"context": normalize_fact_text(context)}))
        known = {p.name: p for p in self.procedures()}
        found = [Procedure(str(r[1]), _ordered(r[2]), known[str(r[1])].triggers) for r in rows]
        order = list(known)
        return sorted(found, key=lambda p: order.index(p.name))

    def procedures(self) -> list[Procedure]:
        """Every procedure, in the order they were learned."""
        with self.lock:
            rows = _rows(self._conn.execute(_ALL))
        rows.sort(key=lambda r: (int(r[3]), str(r[0])))
        return [
            Procedure(
                name=str(r[1]),
                steps=_ordered(r[6]),
                triggers=tuple(sorted(str(t) for t in r[7] if t is not None)),
                source=str(r[2]),
            )
            for r in rows
        ]

    def partial(self) -> str | None:
        """The id of a procedure that is not whole (``None``: every one is)."""
        with self.lock:
            return self._partial(self._conn)

    def close(self) -> None:
        """Close the database (Kuzu checkpoints its log into the file)."""
        with self.lock:
            self._conn.close()
            self._db.close()


class _Transaction:
    """``with graph._transaction() as conn``: committed on success, rolled back on error."""

    def __init__(self, graph: ProceduralGraph) -> None:
        self.graph = graph

    def __enter__(self) -> Any:
        self.graph.lock.acquire()
        try:
            self.graph._conn.execute("BEGIN TRANSACTION")
        except Exception as exc:
            self.graph.lock.release()
            raise StorageError(f"procedural memory graph {self.graph.path}: {exc}") from None
        return self.graph._conn

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        try:
            if exc is None:
                self.graph._conn.execute("COMMIT")
                return
            # Kuzu rolls back the transaction of a failed statement itself.
            with contextlib.suppress(RuntimeError):
                self.graph._conn.execute("ROLLBACK")
            if isinstance(exc, RuntimeError) and not isinstance(exc, StorageError):
                raise StorageError(f"procedural memory graph {self.graph.path}: {exc}") from None
        finally:
            self.graph.lock.release()
