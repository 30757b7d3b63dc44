"""The OAuth 2.1 authorization server: the ``mcp`` SDK's OAuth client discovers it from a 401,
registers, gets consent on the Dashboard (Chromium), calls tools; and the refusals: wrong
audience, wrong PKCE verifier, expired and revoked tokens, refresh rotation and reuse."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from playwright.async_api import Browser
from sqlalchemy import select

from sitetools.oauth.models import OAuthToken as TokenRow
from tests.jobs.conftest import Runner
from tests.mcp_endpoints.test_account_endpoint import INITIALIZE, MCP_HEADERS
from tests.support import MovableClock, chromium, ctx_for, signed_in_page

REDIRECT = "http://127.0.0.1:59999/callback"


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def _consent(browser: Browser, runner: Runner, url: str, *, approve: bool = True) -> str:
    """Open the authorization URL signed in, look at the consent page, decide; the URL the
    browser was sent back to (with the code, or the error)."""
    page = await signed_in_page(browser, runner.server.url, runner.person.session_token)
    landed: list[str] = []

    async def capture(route: Any) -> None:
        landed.append(route.request.url)
        await route.fulfill(status=200, body="done")

    await page.route(f"{REDIRECT}*", capture)
    await page.goto(url)
    await page.wait_for_selector("#consent")
    assert await page.inner_text("#client-name")
    assert (
        await page.inner_text("#resource")
        == parse_qs(urlsplit(url).query).get("resource", [f"{runner.server.url}/mcp"])[0]
    )
    permissions = await page.inner_text("#permissions")
    assert "tools:read" in permissions
    await page.click("#approve" if approve else "#deny")
    for _ in range(100):
        if landed:
            break
        await page.wait_for_timeout(50)
    await page.context.close()
    assert landed, "the browser never came back to the client"
    return landed[0]


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as running:
        yield running


async def test_the_sdk_oauth_client_connects_after_consent(
    runner: Runner, browser: Browser
) -> None:
    url = f"{runner.server.url}/mcp"
    storage = MemoryStorage()
    redirected: list[str] = []

    async def redirect_handler(authorization_url: str) -> None:
        redirected.append(await _consent(browser, runner, authorization_url))

    async def callback_handler() -> tuple[str, str | None]:
        query = parse_qs(urlsplit(redirected[-1]).query)
        return query["code"][0], query.get("state", [None])[0]

    auth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="Test agent",
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with (
        httpx.AsyncClient(auth=auth, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = await session.list_tools()
        result = await session.call_tool(
            "run_tool", {"tool_id": runner.tools["noop"], "input": {}, "wait_seconds": 30}
        )
    assert "run_tool" in {tool.name for tool in tools.tools}
    assert result.structuredContent is not None
    assert result.structuredContent["kind"] == "result"
    assert storage.tokens is not None
    assert storage.tokens.access_token.startswith("soa_")
    assert storage.client is not None
    assert storage.client.client_id is not None
    assert storage.client.client_id.startswith("app_")

    # The token works on /v1 with the member's permissions and sees the same job.
    token = storage.tokens.access_token
    job_id = result.structuredContent["job_id"]
    async with httpx.AsyncClient(base_url=runner.server.url) as http:
        headers = {"Authorization": f"Bearer {token}"}
        job = await http.get(f"/v1/jobs/{job_id}", headers=headers)
        apps = await http.get("/v1/connected-apps", headers=runner.person.auth())
    assert job.status_code == 410  # the run_tool call took its result
    listed = apps.json()["data"]
    assert [app["id"] for app in listed] == [storage.client.client_id]
    assert listed[0]["name"] == "Test agent"
    assert listed[0]["resources"] == [url]


@dataclass
class Flow:
    """A client registered by hand, to drive the endpoints step by step."""

    runner: Runner
    client_id: str
    verifier: str

    @property
    def challenge(self) -> str:
        digest = hashlib.sha256(self.verifier.encode()).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def authorize_url(self, resource: str, scope: str | None = None) -> str:
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": self.challenge,
            "code_challenge_method": "S256",
            "state": "s1",
            "resource": resource,
        }
        if scope:
            params["scope"] = scope
        return f"{self.runner.server.url}/oauth/authorize?{urlencode(params)}"

    async def token(self, **form: str) -> httpx.Response:
        async with httpx.AsyncClient() as http:
            return await http.post(
                f"{self.runner.server.url}/oauth/token",
                data={"client_id": self.client_id, **form},
            )


async def _flow(runner: Runner) -> Flow:
    async with httpx.AsyncClient() as http:
        registered = await http.post(
            f"{runner.server.url}/oauth/register",
            json={
                "client_name": "Hand-made",
                "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
            },
        )
    assert registered.status_code == 201, registered.text
    return Flow(runner, registered.json()["client_id"], secrets.token_urlsafe(48))


async def _code(flow: Flow, browser: Browser, resource: str, scope: str | None = None) -> str:
    landed = await _consent(browser, flow.runner, flow.authorize_url(resource, scope))
    query = parse_qs(urlsplit(landed).query)
    assert query["state"] == ["s1"]
    return query["code"][0]


async def _tokens(flow: Flow, browser: Browser, resource: str) -> dict[str, Any]:
    code = await _code(flow, browser, resource)
    response = await flow.token(
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT,
        code_verifier=flow.verifier,
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def _mcp_status(url: str, token: str) -> int:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(
            url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"}
        )
    return response.status_code


async def test_metadata_and_registration(runner: Runner) -> None:
    async with httpx.AsyncClient() as http:
        server = await http.get(f"{runner.server.url}/.well-known/oauth-authorization-server")
    document = server.json()
    assert document["issuer"].rstrip("/") == runner.server.url
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert "runs:create" in document["scopes_supported"]
    assert document["registration_endpoint"].endswith("/oauth/register")
    flow = await _flow(runner)
    assert flow.client_id.startswith("app_")


async def test_a_wrong_pkce_verifier_is_refused_and_the_code_is_single_use(
    runner: Runner, browser: Browser
) -> None:
    flow = await _flow(runner)
    code = await _code(flow, browser, f"{runner.server.url}/mcp")
    wrong = await flow.token(
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT,
        code_verifier=secrets.token_urlsafe(48),
    )
    assert wrong.status_code == 400
    assert wrong.json()["error"] == "invalid_grant"
    right = await flow.token(
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT,
        code_verifier=flow.verifier,
    )
    assert right.status_code == 200
    again = await flow.token(
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT,
        code_verifier=flow.verifier,
    )
    assert again.status_code == 400
    # A code presented twice revokes what it gave.
    assert await _mcp_status(f"{runner.server.url}/mcp", right.json()["access_token"]) == 401


async def test_a_token_works_only_on_its_own_resource(runner: Runner, browser: Browser) -> None:
    base = runner.server.url
    integration_url = f"{base}/mcp/integrations/{runner.integration_id}"
    flow = await _flow(runner)
    account = await _tokens(flow, browser, f"{base}/mcp")
    scoped = await _tokens(flow, browser, integration_url)
    assert await _mcp_status(f"{base}/mcp", account["access_token"]) == 200
    assert await _mcp_status(integration_url, account["access_token"]) == 401
    assert await _mcp_status(integration_url, scoped["access_token"]) == 200
    assert await _mcp_status(f"{base}/mcp", scoped["access_token"]) == 401
    assert set(scoped["scope"].split()) <= {"tools:read", "runs:create", "jobs:read", "jobs:cancel"}
    async with httpx.AsyncClient(base_url=base) as http:
        ok = await http.get(
            "/v1/jobs", headers={"Authorization": f"Bearer {account['access_token']}"}
        )
        refused = await http.get(
            "/v1/jobs", headers={"Authorization": f"Bearer {scoped['access_token']}"}
        )
    assert ok.status_code == 200
    assert refused.status_code == 401
    # Not one of our resources, or spelled differently: no consent page at all.
    async with httpx.AsyncClient() as http:
        for resource in (f"{base}/mcp/", f"{base}/mcp?x=1", "https://elsewhere.example/mcp"):
            denied = await http.get(flow.authorize_url(resource))
            assert denied.status_code in (302, 400)
            assert "consent" not in denied.headers.get("location", "")


async def test_scopes_narrow_the_token(runner: Runner, browser: Browser) -> None:
    flow = await _flow(runner)
    code = await _code(flow, browser, f"{runner.server.url}/mcp", scope="tools:read jobs:read")
    tokens = (
        await flow.token(
            grant_type="authorization_code",
            code=code,
            redirect_uri=REDIRECT,
            code_verifier=flow.verifier,
        )
    ).json()
    assert tokens["scope"] == "jobs:read tools:read"
    async with httpx.AsyncClient(base_url=runner.server.url) as http:
        run = await http.post(
            "/v1/runs",
            json={"tool_id": runner.tools["noop"], "input": {}},
            headers={"Authorization": f"Bearer {tokens['access_token']}"},
        )
    assert run.status_code == 403


async def test_a_denied_consent_sends_access_denied(runner: Runner, browser: Browser) -> None:
    flow = await _flow(runner)
    landed = await _consent(
        browser, runner, flow.authorize_url(f"{runner.server.url}/mcp"), approve=False
    )
    query = parse_qs(urlsplit(landed).query)
    assert query["error"] == ["access_denied"]
    assert query["state"] == ["s1"]


async def test_refresh_rotates_and_reuse_revokes_the_family(
    runner: Runner, browser: Browser
) -> None:
    url = f"{runner.server.url}/mcp"
    flow = await _flow(runner)
    first = await _tokens(flow, browser, url)
    second = await flow.token(grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert second.status_code == 200
    rotated = second.json()
    assert rotated["refresh_token"] != first["refresh_token"]
    assert await _mcp_status(url, rotated["access_token"]) == 200
    reused = await flow.token(grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert reused.status_code == 400
    assert reused.json()["error"] == "invalid_grant"
    # The whole family is gone: the newest access and refresh tokens too.
    assert await _mcp_status(url, rotated["access_token"]) == 401
    newest = await flow.token(grant_type="refresh_token", refresh_token=rotated["refresh_token"])
    assert newest.status_code == 400


async def test_expired_and_revoked_tokens(
    runner: Runner, browser: Browser, clock: MovableClock
) -> None:
    url = f"{runner.server.url}/mcp"
    flow = await _flow(runner)
    tokens = await _tokens(flow, browser, url)
    clock.advance(3601)
    assert await _mcp_status(url, tokens["access_token"]) == 401
    clock.offset = clock.offset.__class__()
    assert await _mcp_status(url, tokens["access_token"]) == 200
    async with httpx.AsyncClient() as http:
        revoked = await http.post(
            f"{runner.server.url}/oauth/revoke",
            data={"client_id": flow.client_id, "token": tokens["access_token"]},
        )
    assert revoked.status_code == 200
    assert await _mcp_status(url, tokens["access_token"]) == 401
    # Disconnecting the app revokes the refresh token too.
    fresh = await _tokens(flow, browser, url)
    async with httpx.AsyncClient(base_url=runner.server.url) as http:
        gone = await http.delete(
            f"/v1/connected-apps/{flow.client_id}", headers=runner.person.auth()
        )
        again = await http.delete(
            f"/v1/connected-apps/{flow.client_id}", headers=runner.person.auth()
        )
    assert gone.status_code == 204
    assert again.status_code == 404
    assert await _mcp_status(url, fresh["access_token"]) == 401
    refreshed = await flow.token(grant_type="refresh_token", refresh_token=fresh["refresh_token"])
    assert refreshed.status_code == 400


async def test_tokens_are_stored_as_digests(runner: Runner, browser: Browser) -> None:
    flow = await _flow(runner)
    tokens = await _tokens(flow, browser, f"{runner.server.url}/mcp")
    async with ctx_for(runner.person.app) as ctx:
        digests = list(await ctx.db.scalars(select(TokenRow.digest)))
    assert tokens["access_token"] not in digests
    assert tokens["refresh_token"] not in digests
    keyring = runner.person.app.state.services.keyring
    assert keyring.token_digest(tokens["access_token"]) in digests
