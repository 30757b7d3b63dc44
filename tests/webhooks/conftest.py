"""Webhook tests run over their own database, so no other test's worker claims deliveries."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from sitetools.app import create_app
from sitetools.webhooks.dispatcher import Dispatcher
from tests.conftest import BACKENDS, fresh_database, make_settings
from tests.support import MovableClock, Person, new_person
from tests.webhooks.receiver import Receiver


@pytest.fixture(scope="session", params=BACKENDS)
def hooks_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with fresh_database(request.param, tmp_path_factory.mktemp("hooks-db")) as url:
        yield url


def hook_settings(data_dir: Path, url: str, receiver: Receiver, **overrides: Any) -> Any:
    values: dict[str, Any] = {
        "webhook_allow": receiver.allow,
        "webhook_ca_file": receiver.ca_file,
        "webhook_timeout_seconds": 1.0,
        **overrides,
    }
    return make_settings(data_dir, url, **values)


@pytest.fixture(scope="session")
async def hooks_app(
    data_dir: Path, hooks_database: str, clock: MovableClock, receiver: Receiver
) -> AsyncIterator[FastAPI]:
    application = create_app(hook_settings(data_dir, hooks_database, receiver), clock=clock)
    yield application
    await application.state.engine.dispose()


@pytest.fixture
async def http(hooks_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=hooks_app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


@pytest.fixture
async def person(hooks_app: FastAPI) -> Person:
    return await new_person(hooks_app, plan="premium")


@pytest.fixture
async def dispatcher(hooks_app: FastAPI) -> AsyncIterator[Dispatcher]:
    state = hooks_app.state
    worker = Dispatcher(state.services, state.sessions, "test-dispatcher")
    yield worker
    await worker.close()
