"""A read-only SQLite connection for hot-path lookups (credential resolution).

aiosqlite runs every statement on a helper thread; for a single indexed read that hop costs
several times the query itself. SQLite in WAL mode lets readers run beside the writer without
blocking, and a read in autocommit mode sees every transaction committed before it started,
so a revoked key is refused on the very next request. PostgreSQL does not use this.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any, Unpack

from sqlalchemy.dialects import sqlite
from sqlalchemy.sql import Select

__all__ = ["SQLiteReader", "compile_for_sqlite"]


def compile_for_sqlite(statement: Select[Unpack[tuple[Any, ...]]]) -> tuple[str, list[str]]:
    """The SQL text and the order of its bound parameter names."""
    compiled = statement.compile(dialect=sqlite.dialect())
    return str(compiled), list(compiled.positiontup or [])


class SQLiteReader:
    """One read-only connection per thread over the database file."""

    def __init__(self, path: str) -> None:
        self._uri = f"file:{path}?mode=ro"
        self._local = threading.local()

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(
                self._uri, uri=True, isolation_level=None, check_same_thread=False
            )
            connection.execute("PRAGMA query_only=ON")
            connection.execute("PRAGMA busy_timeout=5000")
            self._local.connection = connection
        return connection

    def first(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self._connection().execute(sql, params).fetchone()
        return row

    def close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
