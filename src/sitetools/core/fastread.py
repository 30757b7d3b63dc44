"""Reads of committed data on SQLite without the async driver's thread hops.

aiosqlite runs every call (cursor, execute, fetch, close, commit, reset) on a helper thread;
for a short indexed read those hops cost many times the query itself. SQLite in WAL mode lets
readers run beside the writer without blocking, and a read outside a transaction sees every
transaction committed before it started, so a revoked key is refused on the very next request.
The connections are read-only (``mode=ro``, ``query_only``): they never hold a write lock, so
they never wait on one while the event loop runs them. PostgreSQL does not use this.

Statements are prepared once: SQLAlchemy compiles them for SQLite, and each bound value and
result column goes through the column type's own ``bind_processor``/``result_processor``, so
values come back exactly as the async engine would return them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import namedtuple
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite
from sqlalchemy.engine import Compiled
from sqlalchemy.sql import Select

AnySelect = Select[*tuple[Any, ...]]

__all__ = ["AnySelect", "CommittedReader"]

_Processor = Callable[[Any], Any] | None


@dataclass(frozen=True, slots=True)
class _Prepared:
    statement: AnySelect
    compiled: Compiled
    sql: str
    names: tuple[str, ...]
    binds: tuple[_Processor, ...]
    results: tuple[_Processor, ...]
    row: type[tuple[Any, ...]]


class CommittedReader:
    """Read-only SQLite connections (one per thread) running prebuilt Core statements.

    Pass statements built once (module constants) with ``bindparam`` values: they are prepared
    on first use and kept for the life of the reader.
    """

    def __init__(self, path: str) -> None:
        self._uri = f"file:{path}?mode=ro"
        self._local = threading.local()
        self._dialect = SQLiteDialect_pysqlite(paramstyle="qmark")
        self._prepared: dict[int, _Prepared] = {}
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(
                self._uri, uri=True, isolation_level=None, check_same_thread=False
            )
            connection.execute("PRAGMA query_only=ON")
            connection.execute("PRAGMA busy_timeout=2000")
            self._local.connection = connection
        return connection

    def _prepare(self, statement: AnySelect, *, keep: bool = True) -> _Prepared:
        compiled = statement.compile(dialect=self._dialect)
        names = tuple(compiled.positiontup or ())
        dialect = self._dialect
        binds = tuple(
            compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
            for name in names
        )
        columns = list(statement.selected_columns)
        results = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns
        )
        keys = [str(getattr(column, "key", None) or f"c{i}") for i, column in enumerate(columns)]
        row = namedtuple("Row", keys, rename=True)  # type: ignore[misc]
        prepared = _Prepared(statement, compiled, str(compiled), names, binds, results, row)
        if keep:
            with self._lock:
                self._prepared[id(statement)] = prepared
        return prepared

    def all(
        self, statement: AnySelect, params: dict[str, Any], *, once: bool = False
    ) -> Sequence[Any]:
        """Every row, as named tuples whose values have their column types' Python types.

        ``once``: a statement built for this call only (compiled, used, not kept).
        """
        prepared = None if once else self._prepared.get(id(statement))
        if prepared is None or prepared.statement is not statement:
            prepared = self._prepare(statement, keep=not once)
        # construct_params fills in the values of bind parameters SQLAlchemy itself added.
        given = prepared.compiled.construct_params(params) or {}
        values = [
            bind(given[name]) if bind else given[name]
            for name, bind in zip(prepared.names, prepared.binds, strict=True)
        ]
        raw = self._connection().execute(prepared.sql, values).fetchall()
        results, row = prepared.results, prepared.row
        return [
            row(*[proc(v) if proc else v for proc, v in zip(results, item, strict=True)])
            for item in raw
        ]

    def close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
