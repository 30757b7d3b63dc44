"""Database engine, sessions, the declarative base and portable column types.

SQLite (WAL, foreign keys on) is the embedded default; PostgreSQL is selected by URL.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, MetaData, event
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

from sitetools.core.clock import utc

__all__ = [
    "Base",
    "JSONList",
    "UTCDateTime",
    "create_engine",
    "insert_if_missing",
    "is_sqlite",
    "session_factory",
]

_NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=_NAMING)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite keeps no offset)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = utc(value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else utc(value)


class JSONList(TypeDecorator[list[str]]):
    """A JSON array of strings; Python None is SQL NULL (not JSON null), so IS NULL finds it."""

    impl = JSON(none_as_null=True)
    cache_ok = True

    def process_bind_param(self, value: list[str] | None, dialect: Dialect) -> Any:
        return None if value is None else list(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> list[str] | None:
        return None if value is None else [str(item) for item in value]


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def create_engine(url: str, pool_size: int = 10) -> AsyncEngine:
    """An engine with persistent pooled connections (a connect per request costs 3-5x)."""
    if is_sqlite(url):
        engine = create_async_engine(
            url, pool_size=pool_size, max_overflow=0, connect_args={"timeout": 30}
        )

        @event.listens_for(engine.sync_engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        return engine
    return create_async_engine(url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)


async def insert_if_missing(db: AsyncSession, table: type[Base], **values: Any) -> None:
    """INSERT the row unless one with the same key exists (both backends' ON CONFLICT DO
    NOTHING), for counters that a conditional UPDATE then changes."""
    dialect = db.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    await db.execute(insert(table).values(**values).on_conflict_do_nothing())
