"""The SQLite committed-data reader returns what the async engine returns, and sees commits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime

import pytest
from fastapi import FastAPI
from sqlalchemy import bindparam, select, update

from sitetools.app import create_app
from sitetools.auth.resolve import _KEY_LOOKUP
from sitetools.core.fastread import CommittedReader
from sitetools.core.migrate import migrate
from sitetools.keys.models import ApiKey
from sitetools.keys.service import _FIRST_PAGE, _LATER_PAGE
from tests.conftest import make_settings
from tests.support import MovableClock, ctx_for, new_person


@pytest.fixture(scope="module")
async def sqlite_app(
    tmp_path_factory: pytest.TempPathFactory, clock: MovableClock
) -> AsyncIterator[FastAPI]:
    """The reader serves SQLite only, so these tests have their own SQLite app on every pass."""
    folder = tmp_path_factory.mktemp("reader")
    url = f"sqlite+aiosqlite:///{folder / 'sitetools.db'}"
    migrate(url)
    application = create_app(make_settings(folder, url), clock=clock)
    yield application
    await application.state.engine.dispose()


@pytest.fixture
def reader(sqlite_app: FastAPI) -> CommittedReader:
    reader = sqlite_app.state.services.reader
    assert isinstance(reader, CommittedReader)
    return reader


async def test_reader_rows_equal_async_engine_rows(
    sqlite_app: FastAPI, reader: CommittedReader
) -> None:
    app = sqlite_app
    person = await new_person(app)
    made = [await person.key(f"k{i}", permissions=["tools:read"]) for i in range(3)]
    async with ctx_for(app) as ctx:
        digest = ctx.keyring.token_digest(made[0].secret)
        cases = [
            (_KEY_LOOKUP, {"digest": digest}),
            (
                _FIRST_PAGE,
                {"membership_id": person.membership_id, "revoked_after": ctx.now(), "limit": 2},
            ),
            (
                _LATER_PAGE,
                {
                    "membership_id": person.membership_id,
                    "revoked_after": ctx.now(),
                    "after_at": datetime.fromisoformat(str(made[2].created_at)),
                    "after_id": made[2].id,
                    "limit": 5,
                },
            ),
        ]
        for statement, params in cases:
            expected = [tuple(r) for r in (await ctx.db.execute(statement, params)).all()]
            got = [tuple(r) for r in reader.all(statement, params)]
            assert got == expected
            assert got, "the case must return rows to compare"
            for a, b in zip(got[0], expected[0], strict=True):
                assert type(a) is type(b)
    row = reader.all(_KEY_LOOKUP, {"digest": digest})[0]
    assert row.permissions == ["tools:read"]
    assert row.expires_at.tzinfo is not None


async def test_reader_sees_each_commit_at_once(
    sqlite_app: FastAPI, reader: CommittedReader
) -> None:
    app = sqlite_app
    person = await new_person(app)
    key = await person.key("k")
    by_id = select(ApiKey.revoked_at).where(ApiKey.id == bindparam("id"))
    assert reader.all(by_id, {"id": key.id})[0].revoked_at is None
    async with ctx_for(app) as ctx:
        now = ctx.now()
        await ctx.db.execute(update(ApiKey).where(ApiKey.id == key.id).values(revoked_at=now))
        assert reader.all(by_id, {"id": key.id})[0].revoked_at is None  # not yet committed
        await ctx.db.commit()
    assert reader.all(by_id, {"id": key.id})[0].revoked_at == now


def test_reader_cannot_write(reader: CommittedReader) -> None:
    import sqlite3

    with pytest.raises(sqlite3.OperationalError):
        reader._connection().execute("DELETE FROM api_keys")
