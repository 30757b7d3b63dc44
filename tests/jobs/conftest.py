"""A service with its embedded worker over real HTTP, the Demo Shop, and test tools."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from sitetools.tools import service as catalog
from sitetools.tools.models import Tool
from sitetools.tools.package import IntegrationPackage, load_integration
from tests.conftest import LiveServer, make_settings
from tests.jobs.tools import TEST_TOOLS
from tests.shop import Shop, running_shop
from tests.support import MovableClock, Person, ctx_for, new_person
from tests.webhooks.receiver import Receiver

DEMO = Path(__file__).resolve().parents[2] / "examples/integrations/demo-shop"


@pytest.fixture(scope="session")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shop]:
    with running_shop(tmp_path_factory.mktemp("jobs-shop")) as site:
        yield site


@pytest.fixture(scope="session")
def jobs_server(
    data_dir: Path, database_url: str, clock: MovableClock, shop: Shop, receiver: Receiver
) -> Iterator[LiveServer]:
    settings = make_settings(
        data_dir,
        database_url,
        egress_allow=shop.allow,
        webhook_allow=receiver.allow,
        webhook_ca_file=receiver.ca_file,
        worker_concurrency=6,
        runtime_memory_mb=1024,
        runtime_max_processes=48,
    )
    with LiveServer(settings, clock, worker=True) as server:
        yield server


@dataclass
class Runner:
    """A person with an API key and a private integration of the demo and test tools."""

    person: Person
    key: str
    key_id: str
    integration_id: str
    tools: dict[str, str]
    http: httpx.AsyncClient
    server: LiveServer

    async def run(self, tool: str, tool_input: dict[str, Any], **fields: Any) -> httpx.Response:
        body = {"tool_id": self.tools[tool], "input": tool_input, **fields}
        return await self.http.post("/v1/runs", json=body)

    async def job(self, job_id: str) -> dict[str, Any]:
        response = await self.http.get(f"/v1/jobs/{job_id}")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def until(self, job_id: str, *statuses: str, seconds: float = 60) -> dict[str, Any]:
        """Poll the job (without taking a result: the Dashboard view) until a status."""
        deadline = time.monotonic() + seconds
        while True:
            response = await self.http.get(f"/v1/jobs/{job_id}", headers=self.person.auth())
            body: dict[str, Any] = response.json()
            if body.get("status") in statuses:
                return body
            assert time.monotonic() < deadline, f"job stayed {body.get('status')}: {body}"
            await asyncio.sleep(0.1)


def _with_site(package: IntegrationPackage, url: str) -> IntegrationPackage:
    return dataclasses.replace(package, site_url=url)


async def import_private(
    app: FastAPI, person: Person, package: IntegrationPackage
) -> catalog.ImportResult:
    async with ctx_for(app) as ctx:
        result = await catalog.import_package(ctx, package, account_id=person.account_id)
        await ctx.db.commit()
    return result


@pytest.fixture
async def runner(app: FastAPI, jobs_server: LiveServer, shop: Shop) -> AsyncIterator[Runner]:
    """A fresh person per test (their own jobs, counts and quota)."""
    person = await new_person(app, plan="premium")
    demo = _with_site(load_integration(DEMO), shop.url)
    tests = IntegrationPackage(
        key="test-tools",
        name="Test tools",
        description="Tools that exercise the runtime",
        site_url=shop.url,
        site_name="Demo Shop",
        mcp_hosted=True,
        tools=list(TEST_TOOLS),
    )
    demo_ids = await import_private(app, person, demo)
    test_ids = await import_private(app, person, tests)
    async with ctx_for(app) as ctx:
        rows = await ctx.db.execute(
            select(Tool.mcp_name, Tool.id).where(
                Tool.integration_id.in_([demo_ids.integration_id, test_ids.integration_id])
            )
        )
        tools = {row[0]: row[1] for row in rows.all()}
    key = await person.key("runner")
    async with httpx.AsyncClient(
        base_url=jobs_server.url,
        headers={"Authorization": f"Bearer {key.secret}"},
        timeout=90,
    ) as http:
        yield Runner(person, key.secret, key.id, demo_ids.integration_id, tools, http, jobs_server)
        # Jobs a test left waiting would hold the worker's slots for the tests after it.
        active = await http.get(
            "/v1/jobs", params={"status": "queued,running,needs_input", "limit": 50}
        )
        for job in active.json().get("data", []):
            await http.post(f"/v1/jobs/{job['id']}/cancel")
