"""What a service function needs besides its caller: one database session and the app's tools."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sitetools.core.clock import Clock
from sitetools.core.config import Settings
from sitetools.core.crypto import Keyring, PasswordHashing
from sitetools.core.errors import ServiceError
from sitetools.core.fastread import AnySelect, CommittedReader
from sitetools.core.signals import Signals

__all__ = ["AppServices", "Ctx", "unit"]


@dataclass(frozen=True, slots=True)
class AppServices:
    """Created once per process in ``create_app`` (or the CLI) and shared by every request."""

    settings: Settings
    clock: Clock
    keyring: Keyring
    passwords: PasswordHashing
    # Set on SQLite: hot-path reads without the async driver's thread hop.
    reader: CommittedReader | None = None
    # Wake-ups between requests, the worker and waiters in this process.
    signals: Signals = field(default_factory=Signals)


class Ctx:
    """One unit of work: a transaction owned by the caller of the service (habit 1).

    Given a session factory instead of a session, the session is opened on first use, so a
    request that never touches the database (its reads served by ``app.reader``) pays nothing.
    """

    __slots__ = ("_after_commit", "_db", "_sessions", "app")

    def __init__(
        self,
        db: AsyncSession | None,
        app: AppServices,
        sessions: async_sessionmaker[AsyncSession] | None = None,
    ) -> None:
        if db is None and sessions is None:
            raise ValueError("a Ctx needs a session or a session factory")
        self._db = db
        self._sessions = sessions
        self.app = app
        self._after_commit: list[Callable[[], None]] = []

    @property
    def db(self) -> AsyncSession:
        if self._db is None:
            assert self._sessions is not None
            self._db = self._sessions()
        return self._db

    @property
    def opened(self) -> bool:
        """Whether a database session was opened."""
        return self._db is not None

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once this unit commits (wake-ups must not precede the data)."""
        self._after_commit.append(callback)

    async def commit(self) -> None:
        """Commit this unit (the caller of the services owns it) and run its after-commit work."""
        if self._db is not None:
            await self._db.commit()
        callbacks, self._after_commit = self._after_commit, []
        for callback in callbacks:
            callback()

    async def rollback(self) -> None:
        self._after_commit.clear()
        if self._db is not None:
            await self._db.rollback()

    @property
    def settings(self) -> Settings:
        return self.app.settings

    @property
    def keyring(self) -> Keyring:
        return self.app.keyring

    def now(self) -> datetime:
        return self.app.clock.now()

    async def read(
        self, statement: AnySelect, params: dict[str, Any], *, once: bool = False
    ) -> Sequence[Any]:
        """Rows of a prebuilt Core select over committed data (not this unit's own writes).

        Rows unpack as tuples and name their columns as attributes. On SQLite the read runs on
        a read-only connection without thread hops; on PostgreSQL on this unit's connection.
        ``once`` marks a statement built for this call (not kept prepared).
        """
        if self.app.reader is not None:
            return self.app.reader.all(statement, params, once=once)
        rows: Sequence[Any] = (await self.db.execute(statement, params)).all()
        return rows


@asynccontextmanager
async def unit(
    services: AppServices, sessions: async_sessionmaker[AsyncSession]
) -> AsyncIterator[Ctx]:
    """One unit of work (a request, a worker step): committed on success, rolled back on error,
    except a refusal that records something (``ServiceError.commit_changes``), which commits
    before it is raised. The session is opened on first use."""
    ctx = Ctx(None, services, sessions)
    try:
        yield ctx
        await ctx.commit()
    except ServiceError as error:
        await (ctx.commit() if error.commit_changes else ctx.rollback())
        raise
    except BaseException:
        await ctx.rollback()
        raise
    finally:
        if ctx.opened:
            await ctx.db.close()
