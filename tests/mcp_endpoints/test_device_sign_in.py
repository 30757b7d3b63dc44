"""Device sign-in (spec: "Authentication" 9): start without credentials, approve on the
Dashboard in Chromium, poll for the key once; denial, expiry, limits, switch-off."""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
import mcp.types as types
import pytest
from sqlalchemy import delete

from sitetools.connect import service as devices
from sitetools.connect.models import DeviceSignIn
from sitetools.core.context import Ctx
from sitetools.core.errors import ServiceError
from tests.jobs.conftest import Runner
from tests.mcp_endpoints.conftest import mcp_session
from tests.support import MovableClock, chromium, ctx_for, signed_in_page


async def _decide(runner: Runner, verification_url: str, *, approve: bool) -> str:
    async with chromium() as browser:
        page = await signed_in_page(browser, runner.server.url, runner.person.session_token)
        await page.goto(verification_url)
        shown = await page.inner_text("#user-code")
        assert "api_keys:manage" not in await page.inner_text("#permissions")
        await page.click("#approve" if approve else "#deny")
        await page.wait_for_selector("#outcome")
        outcome = await page.inner_text("#outcome")
    assert outcome
    return shown


async def _start(runner: Runner, **body: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=runner.server.url) as http:
        started = await http.post("/v1/sign-in", json=body)
    assert started.status_code == 201, started.text
    data: dict[str, Any] = started.json()
    return data


async def _poll(runner: Runner, sign_in_id: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=runner.server.url) as http:
        return await http.post(f"/v1/sign-in/{sign_in_id}/poll")


async def test_approved_on_the_dashboard_the_key_is_handed_out_once(runner: Runner) -> None:
    started = await _start(runner, client_name="CLI on laptop")
    assert set(started) == {"id", "user_code", "verification_url", "expires_at", "interval"}
    pending = await _poll(runner, started["id"])
    assert pending.json() == {"status": "pending", "api_key": None}
    shown = await _decide(runner, started["verification_url"], approve=True)
    assert shown == started["user_code"]
    approved = await _poll(runner, started["id"])
    assert approved.status_code == 200
    key = approved.json()["api_key"]
    assert key["secret"].startswith("svc_")
    assert key["name"] == "CLI on laptop"
    assert "api_keys:manage" not in key["permissions"]
    async with httpx.AsyncClient(base_url=runner.server.url) as http:
        account = await http.get(
            "/v1/account", headers={"Authorization": f"Bearer {key['secret']}"}
        )
    assert account.json()["id"] == runner.person.account_id
    again = await _poll(runner, started["id"])
    assert again.status_code == 410
    assert again.json()["error"]["code"] == "expired_token"


async def test_denied_and_expired_and_unknown(runner: Runner, clock: MovableClock) -> None:
    denied = await _start(runner)
    await _decide(runner, denied["verification_url"], approve=False)
    refused = await _poll(runner, denied["id"])
    assert refused.status_code == 410
    assert refused.json()["error"]["code"] == "access_denied"
    late = await _start(runner)
    clock.advance(601)
    expired = await _poll(runner, late["id"])
    assert expired.status_code == 410
    assert expired.json()["error"]["code"] == "expired_token"
    unknown = await _poll(runner, "signin_" + "0" * 32)
    assert unknown.status_code == 404


async def test_the_sign_in_tool_starts_and_polls(runner: Runner) -> None:
    async with mcp_session(f"{runner.server.url}/mcp", runner.key) as session:
        started = await session.call_tool("sign_in", {"client_name": "Agent"})
        assert started.structuredContent is not None
        data = started.structuredContent
        assert data["user_code"]
        await _decide(runner, data["verification_url"], approve=True)
        polled = await session.call_tool("sign_in", {"sign_in_id": data["id"]})
        assert polled.structuredContent is not None
        assert polled.structuredContent["status"] == "approved"
        assert polled.structuredContent["api_key"]["secret"].startswith("svc_")
        gone = await session.call_tool("sign_in", {"sign_in_id": data["id"]})
    assert gone.isError
    assert isinstance(gone.content[0], types.TextContent)
    assert '"code":"expired_token"' in gone.content[0].text


async def test_sign_ins_are_limited_per_network(runner: Runner) -> None:
    limit = runner.person.app.state.services.settings.device_sign_ins_per_network_daily
    async with httpx.AsyncClient(base_url=runner.server.url) as http:
        answers = [(await http.post("/v1/sign-in", json={})).status_code for _ in range(limit + 1)]
        refused = await http.post("/v1/sign-in")
    assert 429 in answers
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "sign_in_limit_reached"
    assert int(refused.headers["retry-after"]) > 0
    # Leave this network's count as it was for the tests after this one.
    async with ctx_for(runner.person.app) as ctx:
        await ctx.db.execute(delete(DeviceSignIn))
        await ctx.db.commit()


async def test_switched_off_device_sign_in_is_unavailable(runner: Runner) -> None:
    services = runner.person.app.state.services
    off = dataclasses.replace(
        services, settings=services.settings.model_copy(update={"device_sign_in_enabled": False})
    )
    async with ctx_for(runner.person.app) as ctx:
        with pytest.raises(ServiceError) as refused:
            await devices.start(Ctx(ctx.db, off), "127.0.0.0/24", None)
    assert refused.value.code == "sign_in_unavailable"
    assert refused.value.status == 503
