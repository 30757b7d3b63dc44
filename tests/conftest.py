"""Fixtures: one migrated database per backend, the app over it, clients, a live server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from fastapi import FastAPI
from hypothesis import settings

from sitetools.app import create_app
from sitetools.core.config import Settings
from sitetools.core.migrate import migrate
from tests.support import MovableClock, free_port, served

# CI runs a fixed set of generated examples (a rare random failure must not block a landing);
# local runs explore new ones each time and report what they find.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

PG_URL = os.environ.get("SITETOOLS_TEST_DATABASE_URL")
BACKENDS = ["sqlite", *(["postgresql"] if PG_URL else [])]


def _pg_admin_url() -> str:
    assert PG_URL
    return PG_URL.replace("postgresql+asyncpg://", "postgresql://")


@contextlib.contextmanager
def fresh_database(backend: str, directory: Path) -> Iterator[str]:
    """A newly migrated database of ``backend`` (SQLite under ``directory``), dropped after."""
    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{directory / 'sitetools.db'}"
        migrate(url)
        yield url
        return
    name = f"sitetools_test_{uuid.uuid4().hex[:10]}"
    admin = _pg_admin_url()

    async def run(sql: str) -> None:
        connection = await asyncpg.connect(admin)
        try:
            await connection.execute(sql)
        finally:
            await connection.close()

    asyncio.run(run(f'CREATE DATABASE "{name}"'))
    base = admin.rsplit("/", 1)[0]
    url = f"{base}/{name}".replace("postgresql://", "postgresql+asyncpg://")
    migrate(url)
    try:
        yield url
    finally:
        asyncio.run(run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session", params=BACKENDS)
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A freshly migrated database for the whole session (one per backend)."""
    with fresh_database(request.param, tmp_path_factory.mktemp("db")) as url:
        yield url


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data")


def make_settings(data_dir: Path, database_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "database_url": database_url,
        "base_url": "http://testserver",
        "password_hash_time_cost": 1,
        "password_hash_memory_kib": 1024,
        "db_pool_size": 5,
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture(scope="session")
def clock() -> MovableClock:
    return MovableClock()


@pytest.fixture(autouse=True)
def _reset_clock(clock: MovableClock) -> Iterator[None]:
    yield
    clock.offset = clock.offset.__class__()


@pytest.fixture(scope="session")
async def app(data_dir: Path, database_url: str, clock: MovableClock) -> AsyncIterator[FastAPI]:
    application = create_app(make_settings(data_dir, database_url), clock=clock)
    yield application
    await application.state.engine.dispose()


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        yield http


class LiveServer:
    """uvicorn serving its own app instance over the same database, in a thread."""

    def __init__(self, settings: Settings, clock: MovableClock, *, worker: bool = False) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        settings = settings.model_copy(update={"base_url": self.url, "port": self.port})
        self.app = create_app(settings, clock=clock, worker=worker)
        # Idle connections outlive the clients' own expiry (httpx: 5 s), so a client never
        # reuses one the server is closing at that moment.
        self._serving = served(self.app, self.port, timeout_keep_alive=75)

    def __enter__(self) -> LiveServer:
        self._serving.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._serving.__exit__(*exc)


@pytest.fixture(scope="session")
def live_server(data_dir: Path, database_url: str, clock: MovableClock) -> Iterator[LiveServer]:
    with LiveServer(make_settings(data_dir, database_url), clock) as server:
        yield server


@pytest.fixture(scope="session")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real HTTPS webhook receiver (tests/webhooks/receiver.py), one per session."""
    from tests.webhooks.receiver import RunningReceiver

    with RunningReceiver(tmp_path_factory.mktemp("receiver")) as running:
        yield running
