"""Who may reach which MCP endpoint, and the HTTP answers otherwise (spec: "Authentication"
3-5): 401 with the endpoint's own metadata, 403, 404, 409 ``mcp_not_hosted``, Host and
Origin checks, and the protected-resource metadata documents."""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from sitetools.accounts.models import Membership
from sitetools.auth.permissions import Role
from sitetools.mcp_endpoints.endpoint import McpHub
from sitetools.mcp_endpoints.server import McpServers
from sitetools.tools.models import Integration
from tests.jobs.conftest import Runner
from tests.mcp_endpoints.test_account_endpoint import INITIALIZE, MCP_HEADERS
from tests.support import ctx_for, new_integration, new_person


async def _post(url: str, token: str | None = None, **headers: str) -> httpx.Response:
    sent = dict(MCP_HEADERS, **headers)
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(url, json=INITIALIZE, headers=sent)


def _code(response: httpx.Response) -> str:
    body: dict[str, Any] = response.json()
    assert set(body["error"]) == {"code", "message", "retryable", "docs_url", "details"}
    return str(body["error"]["code"])


async def test_without_credentials_each_endpoint_names_its_own_metadata(runner: Runner) -> None:
    base = runner.server.url
    for path in ("/mcp", f"/mcp/integrations/{runner.integration_id}"):
        response = await _post(base + path)
        assert response.status_code == 401
        assert _code(response) == "unauthorized"
        metadata = f"{base}/.well-known/oauth-protected-resource{path}"
        assert response.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata}"'
        async with httpx.AsyncClient() as http:
            document = (await http.get(metadata)).json()
        assert document["resource"] == base + path
        assert document["authorization_servers"] == [base]
        assert "header" in document["bearer_methods_supported"]
        assert "runs:create" in document["scopes_supported"]
    # /v1 names the account endpoint's metadata.
    async with httpx.AsyncClient() as http:
        rest = await http.get(f"{base}/v1/jobs")
    assert rest.status_code == 401
    assert "/.well-known/oauth-protected-resource/mcp" in rest.headers["www-authenticate"]


async def test_a_bad_or_session_credential_is_refused(runner: Runner) -> None:
    url = f"{runner.server.url}/mcp"
    assert (await _post(url, "svc_nope")).status_code == 401
    assert (await _post(url, "garbage")).status_code == 401
    session = await _post(url, runner.person.session_token)
    assert session.status_code == 401
    assert _code(session) == "unauthorized"
    async with httpx.AsyncClient(
        timeout=30, cookies={"sitetools_session": runner.person.session_token}
    ) as http:
        cookie = await http.post(url, json=INITIALIZE, headers=MCP_HEADERS)
    assert cookie.status_code == 401


async def test_an_integration_key_only_on_its_own_endpoint(runner: Runner) -> None:
    key = await runner.person.key("shop", integration_id=runner.integration_id)
    base = runner.server.url
    own = await _post(f"{base}/mcp/integrations/{runner.integration_id}", key.secret)
    assert own.status_code == 200
    account = await _post(f"{base}/mcp", key.secret)
    assert account.status_code == 403
    assert _code(account) == "forbidden"
    other_id = await new_integration(runner.person.app, account_id=runner.person.account_id)
    other = await _post(f"{base}/mcp/integrations/{other_id}", key.secret)
    assert other.status_code == 403


async def test_unknown_foreign_disabled_and_unhosted_integrations(runner: Runner) -> None:
    base = runner.server.url
    unknown = await _post(f"{base}/mcp/integrations/int_{'0' * 32}", runner.key)
    assert unknown.status_code == 404
    assert _code(unknown) == "not_found"
    stranger = await new_person(runner.person.app)
    foreign = await _post(
        f"{base}/mcp/integrations/{runner.integration_id}", (await stranger.key("k")).secret
    )
    assert foreign.status_code == 404
    unhosted = await new_integration(runner.person.app, account_id=runner.person.account_id)
    async with ctx_for(runner.person.app) as ctx:
        await ctx.db.execute(
            update(Integration).where(Integration.id == unhosted).values(mcp_hosted=False)
        )
        await ctx.db.commit()
    refused = await _post(f"{base}/mcp/integrations/{unhosted}", runner.key)
    assert refused.status_code == 409
    assert _code(refused) == "mcp_not_hosted"
    async with ctx_for(runner.person.app) as ctx:
        await ctx.db.execute(
            update(Integration).where(Integration.id == unhosted).values(status="disabled")
        )
        await ctx.db.commit()
    assert (await _post(f"{base}/mcp/integrations/{unhosted}", runner.key)).status_code == 404
    async with httpx.AsyncClient() as http:
        metadata = await http.get(
            f"{base}/.well-known/oauth-protected-resource/mcp/integrations/{unhosted}"
        )
    assert metadata.status_code == 404


async def test_a_member_who_left_is_refused(runner: Runner) -> None:
    owner = await new_person(runner.person.app, account_type="business")
    member = await new_person(runner.person.app, role=Role.MEMBER, account_id=owner.account_id)
    key = await member.key("member key")
    url = f"{runner.server.url}/mcp"
    assert (await _post(url, key.secret)).status_code == 200
    async with ctx_for(runner.person.app) as ctx:
        await ctx.db.execute(
            update(Membership)
            .where(Membership.id == member.membership_id)
            .values(ended_at=ctx.now())
        )
        await ctx.db.commit()
    left = await _post(url, key.secret)
    assert left.status_code == 403
    assert _code(left) == "organization_access_removed"


@pytest.mark.parametrize(
    ("origin", "status"),
    [(None, 200), ("same", 200), ("https://evil.example", 403)],
)
async def test_browser_origins_must_be_allowed(
    runner: Runner, origin: str | None, status: int
) -> None:
    headers = {}
    if origin is not None:
        headers["Origin"] = runner.server.url if origin == "same" else origin
    response = await _post(f"{runner.server.url}/mcp", runner.key, **headers)
    assert response.status_code == status
    if status == 403:
        assert _code(response) == "forbidden"


async def test_the_host_header_is_checked(runner: Runner) -> None:
    response = await _post(f"{runner.server.url}/mcp", runner.key, Host="rebound.example")
    assert response.status_code == 403
    assert _code(response) == "forbidden"


async def test_a_session_belongs_to_the_credential_that_opened_it(runner: Runner) -> None:
    url = f"{runner.server.url}/mcp"
    opened = await _post(url, runner.key)
    session_id = opened.headers["mcp-session-id"]
    stranger = await new_person(runner.person.app)
    other_key = (await stranger.key("k")).secret
    async with httpx.AsyncClient(timeout=30) as http:
        hijack = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={
                **MCP_HEADERS,
                "Authorization": f"Bearer {other_key}",
                "mcp-session-id": session_id,
            },
        )
    assert hijack.status_code == 404


async def test_an_account_that_cannot_be_verified_is_503(app: FastAPI) -> None:
    """The database is unreachable while admitting the caller: 503 ``account_unavailable``."""

    def unreachable() -> Any:
        raise OSError("connection refused")

    # No fast reader either: every read goes to the (unreachable) database.
    services = dataclasses.replace(app.state.services, reader=None)
    hub = McpHub(services, unreachable, McpServers(services, unreachable, [], {}))  # type: ignore[arg-type]
    transport = httpx.ASGITransport(app=hub)
    host = services.settings.base_url.split("//", 1)[1]
    async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as http:
        response = await http.post(
            "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": "Bearer svc_x"}
        )
    assert response.status_code == 503
    assert _code(response) == "account_unavailable"
    assert response.json()["error"]["retryable"] is True
