"""No API key or session secret is stored in clear or written to a log line."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from sitetools.core.logging import configure_logging, get_logger
from sitetools.models import Base
from tests.support import ctx_for, new_person


async def _all_rows_text(app: FastAPI) -> str:
    parts = []
    async with ctx_for(app) as ctx:
        for table in Base.metadata.sorted_tables:
            rows = (await ctx.db.execute(select(table))).all()
            parts.append(repr(rows))
    return "\n".join(parts)


async def test_no_secret_in_the_database_or_logs(
    app: FastAPI, client: httpx.AsyncClient, capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    configure_logging("INFO", "json")
    try:
        person = await new_person(app)
        created = await client.post("/v1/api-keys", json={"name": "leak?"}, headers=person.auth())
        secret = created.json()["secret"]
        rotated = await client.post(
            f"/v1/api-keys/{created.json()['id']}/rotate", headers=person.auth()
        )
        new_secret = rotated.json()["secret"]
        await client.get("/v1/account", headers={"Authorization": f"Bearer {new_secret}"})
        await client.get("/v1/account", headers={"Authorization": f"Bearer {secret}"})  # refused
        get_logger("sitetools.test").info("probe", authorization=new_secret)
    finally:
        logging.getLogger().handlers[:] = []
    output = capsys.readouterr()
    logs = output.out + output.err
    assert '"event": "request"' in logs  # the access log did run
    assert '"authorization": "[redacted]"' in logs
    for value in (secret, new_secret, person.session_token):
        assert value not in logs
    stored = await _all_rows_text(app)
    for value in (secret, new_secret, person.session_token):
        assert value not in stored
    url = str(app.state.engine.url)
    if url.startswith("sqlite"):
        raw = b"".join(
            p.read_bytes() for p in Path(url.split("///", 1)[1]).parent.glob("sitetools.db*")
        )
        for value in (secret, new_secret, person.session_token):
            assert value.encode() not in raw
