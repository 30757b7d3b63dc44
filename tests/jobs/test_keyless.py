"""Keyless runs (spec: "What the service does" 6; decisions: "Keyless runs"): public read-only
tools that need no login, without credentials, counted per network and overall per day."""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from sitetools.app import create_app
from sitetools.jobs.models import Job
from sitetools.tools import service as catalog
from sitetools.tools.models import Tool
from sitetools.tools.package import IntegrationPackage, load_integration
from tests.conftest import LiveServer, make_settings
from tests.jobs.conftest import DEMO, Runner
from tests.jobs.tools import TEST_TOOLS
from tests.shop import Shop
from tests.support import MovableClock, ctx_for, error_code

Tools = dict[str, str]


async def _import(app: FastAPI, package: IntegrationPackage, account_id: str | None) -> Tools:
    package = dataclasses.replace(package, key=f"keyless-{uuid.uuid4().hex[:8]}")
    async with ctx_for(app) as ctx:
        imported = await catalog.import_package(ctx, package, account_id=account_id)
        await ctx.db.commit()
        rows = await ctx.db.execute(
            select(Tool.mcp_name, Tool.id).where(Tool.integration_id == imported.integration_id)
        )
        return {row[0]: row[1] for row in rows.all()}


@pytest.fixture
async def public_tools(app: FastAPI, shop: Shop) -> Tools:
    """The demo integration, public, on the test shop."""
    package = dataclasses.replace(load_integration(DEMO), site_url=shop.url)
    return await _import(app, package, None)


def _network() -> str:
    """A /24 of its own, so counts of other tests never mix in."""
    return f"198.{random.randint(0, 255)}.{random.randint(0, 255)}"


def _client(app: FastAPI, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


async def test_a_keyless_run_of_a_public_read_tool_answers_its_result_once(
    jobs_server: LiveServer, public_tools: Tools
) -> None:
    async with httpx.AsyncClient(base_url=jobs_server.url, timeout=60) as http:
        response = await http.post(
            "/v1/runs",
            json={
                "tool_id": public_tools["search_products"],
                "input": {"query": "mug"},
                "wait_seconds": 30,
            },
        )
        assert response.status_code == 201, response.text
        job = response.json()
        assert job["status"] == "succeeded"
        assert {p["name"] for p in job["result"]["products"]} >= {"Blue ceramic mug"}
        # No person watches a keyless job on the Dashboard.
        assert job["watch_url"] is None
        again = await http.get(f"/v1/jobs/{job['id']}")
        assert again.status_code == 410
        assert error_code(again) == "result_expired"
        # Listing needs credentials: keyless jobs are read one by one.
        assert (await http.get("/v1/jobs")).status_code == 401


@pytest.fixture
async def keyless_app(
    data_dir: Path, database_url: str, clock: MovableClock
) -> AsyncIterator[FastAPI]:
    """Small daily limits; the clock on a day of this test's own (the overall count is
    shared by every network)."""
    settings = make_settings(
        data_dir, database_url, keyless_daily_runs_per_network=2, keyless_daily_runs=3
    )
    application = create_app(settings, clock=clock)
    clock.advance(86400 * random.randint(400, 40000))
    yield application
    await application.state.engine.dispose()


async def _run(http: httpx.AsyncClient, tool_id: str, tool_input: dict[str, Any]) -> httpx.Response:
    return await http.post("/v1/runs", json={"tool_id": tool_id, "input": tool_input})


async def test_keyless_runs_are_limited_per_network_and_overall(
    keyless_app: FastAPI, public_tools: Tools
) -> None:
    net, other = _network(), _network()
    search = public_tools["search_products"]
    async with (
        _client(keyless_app, f"{net}.5") as first,
        _client(keyless_app, f"{net}.77") as same_network,
        _client(keyless_app, f"{other}.1") as elsewhere,
    ):
        for _ in range(2):
            assert (await _run(first, search, {"query": "mug"})).status_code == 201
        # Bad input is refused before anything is counted.
        bad = await _run(same_network, search, {"nope": 1})
        assert bad.status_code == 400
        assert error_code(bad) == "invalid_input"
        refused = await _run(same_network, search, {"query": "mug"})
        assert refused.status_code == 429
        assert error_code(refused) == "try_limit_reached"
        details = refused.json()["error"]["details"]
        assert details["scope"] == "network"
        assert details["reset_at"].endswith("T00:00:00Z")
        assert int(refused.headers["retry-after"]) == details["retry_after_seconds"]
        assert refused.json()["error"]["retryable"] is True
        assert (await _run(elsewhere, search, {"query": "mug"})).status_code == 201
        overall = await _run(elsewhere, search, {"query": "mug"})
        assert overall.status_code == 429
        assert overall.json()["error"]["details"]["scope"] == "overall"


async def test_keyless_runs_reach_only_public_read_tools_without_login(
    keyless_app: FastAPI, public_tools: Tools, runner: Runner
) -> None:
    async with _client(keyless_app, f"{_network()}.9") as http:
        for name, tool_input in (
            ("list_orders", {}),  # needs a login
            ("place_order", {"product_id": 1, "quantity": 1}),  # writes
        ):
            response = await _run(http, public_tools[name], tool_input)
            assert response.status_code == 401, name
            assert error_code(response) == "unauthorized"
        # Another account's private tool, and one that does not exist.
        for tool_id in (runner.tools["search_products"], "tool_" + "0" * 32):
            response = await _run(http, tool_id, {"query": "mug"})
            assert response.status_code == 401
        # Nothing was counted: the network still has both of its runs.
        for _ in range(2):
            ran = await _run(http, public_tools["search_products"], {"query": "mug"})
            assert ran.status_code == 201


async def test_a_keyless_job_belongs_to_the_network_that_started_it(
    keyless_app: FastAPI, public_tools: Tools, runner: Runner
) -> None:
    net = _network()
    async with (
        _client(keyless_app, f"{net}.5") as starter,
        _client(keyless_app, f"{net}.6") as neighbour,
        _client(keyless_app, f"{_network()}.5") as stranger,
    ):
        job = (await _run(starter, public_tools["search_products"], {"query": "mug"})).json()
        assert job["status"] == "queued"
        assert (await neighbour.get(f"/v1/jobs/{job['id']}")).status_code == 200
        missing = await stranger.get(f"/v1/jobs/{job['id']}")
        assert missing.status_code == 404
        assert error_code(missing) == "not_found"
        assert (await stranger.post(f"/v1/jobs/{job['id']}/cancel")).status_code == 404
        # A signed-in caller does not see it either, nor does a keyless caller see theirs.
        as_member = await starter.get(
            f"/v1/jobs/{job['id']}", headers={"Authorization": f"Bearer {runner.key}"}
        )
        assert as_member.status_code == 404
        theirs = (await runner.run("noop", {})).json()
        assert (await starter.get(f"/v1/jobs/{theirs['id']}")).status_code == 404
        # The starting network may cancel it (the run may have finished by now: a finished
        # job is answered unchanged).
        cancelled = await starter.post(f"/v1/jobs/{job['id']}/cancel")
        assert cancelled.status_code == 200
        assert cancelled.json()["status"] in ("cancelled", "succeeded")
    async with ctx_for(keyless_app) as ctx:
        stored = await ctx.db.get(Job, job["id"])
        assert stored is not None
        assert stored.account_id is None
        assert stored.client_id == f"net:{net}.0/24"


@pytest.mark.parametrize("setting", [{"keyless_enabled": False}, {"keyless_daily_runs": 0}])
async def test_keyless_runs_switched_off_answer_try_tier_unavailable(
    data_dir: Path, database_url: str, public_tools: Tools, setting: dict[str, Any]
) -> None:
    app = create_app(make_settings(data_dir, database_url, **setting))
    try:
        async with _client(app, f"{_network()}.5") as http:
            response = await _run(http, public_tools["search_products"], {"query": "mug"})
            assert response.status_code == 503
            assert error_code(response) == "try_tier_unavailable"
            assert response.json()["error"]["retryable"] is False
            read = await http.get(f"/v1/jobs/job_{'0' * 32}")
            assert read.status_code == (401 if "keyless_enabled" in setting else 404)
    finally:
        await app.state.engine.dispose()


async def test_a_keyless_tool_asking_for_a_secret_fails_at_once(
    app: FastAPI, jobs_server: LiveServer, shop: Shop
) -> None:
    package = IntegrationPackage(
        key="secret",
        name="Secret asker",
        description="Asks for a code",
        site_url=shop.url,
        site_name="Demo Shop",
        mcp_hosted=True,
        tools=[t for t in TEST_TOOLS if t.mcp_name == "secret_code"],
    )
    tools = await _import(app, package, None)
    async with httpx.AsyncClient(base_url=jobs_server.url, timeout=60) as http:
        response = await http.post(
            "/v1/runs", json={"tool_id": tools["secret_code"], "input": {}, "wait_seconds": 30}
        )
        job = response.json()
        assert job["status"] == "failed", job
        assert job["error"]["code"] == "execution_failed"
        assert job["error"]["details"]["reason"] == "sign_in_required"
