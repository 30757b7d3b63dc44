"""Who may call what: caller kinds × permissions for every operation of this area."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from sitetools.accounts.models import Account, Membership
from sitetools.auth.permissions import Role
from tests.support import Person, ctx_for, error_code, new_integration, new_person


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: dict | None = None  # type: ignore[type-arg]


CALLS = {
    "account.get": Call("GET", "/v1/account"),
    "account.set_name": Call("PUT", "/v1/account/name", {"first_name": "Ada"}),
    "account.get_preferences": Call("GET", "/v1/account/preferences"),
    "account.update_preferences": Call("PATCH", "/v1/account/preferences", {}),
    "api_keys.list": Call("GET", "/v1/api-keys"),
    "api_keys.create": Call("POST", "/v1/api-keys", {"name": "n", "deliver": "dashboard"}),
    "quota.get": Call("GET", "/v1/quota"),
}

# Expected status per caller: session, full key (with api_keys:manage), plain key (default
# permissions), integration key, no credential.
MATRIX = {
    "account.get": (200, 200, 200, 403, 401),
    "account.set_name": (200, 200, 200, 403, 401),
    "account.get_preferences": (200, 200, 200, 200, 401),
    "account.update_preferences": (200, 200, 200, 200, 401),
    "api_keys.list": (200, 200, 403, 403, 401),
    "api_keys.create": (200, 200, 403, 403, 401),
    "quota.get": (200, 200, 200, 403, 401),
}


@pytest.fixture
async def callers(app: FastAPI) -> tuple[Person, dict[str, str | None]]:
    person = await new_person(app)
    full = await person.key("full", permissions=["api_keys:manage", "usage:read", "tools:read"])
    plain = await person.key("plain")
    integration_id = await new_integration(app)
    scoped = await person.key("scoped", integration_id=integration_id)
    return person, {
        "session": person.session_token,
        "full_key": full.secret,
        "plain_key": plain.secret,
        "integration_key": scoped.secret,
        "none": None,
    }


@pytest.mark.parametrize("operation", sorted(CALLS))
async def test_caller_matrix(
    client: httpx.AsyncClient,
    callers: tuple[Person, dict[str, str | None]],
    operation: str,
) -> None:
    _, tokens = callers
    call = CALLS[operation]
    for (kind, token), expected in zip(tokens.items(), MATRIX[operation], strict=True):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = await client.request(call.method, call.path, json=call.body, headers=headers)
        assert response.status_code == expected, (operation, kind, response.text)
        if expected >= 400:
            assert error_code(response) == {401: "unauthorized", 403: "forbidden"}[expected]


async def test_key_without_usage_read_cannot_read_quota(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    key = await person.key("no-usage", permissions=["tools:read"])
    response = await client.get("/v1/quota", headers=person.auth(key.secret))
    assert response.status_code == 403
    assert error_code(response) == "forbidden"


async def test_revoked_key_is_refused_at_once(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app)
    key = await person.key("k")
    assert (await client.get("/v1/account", headers=person.auth(key.secret))).status_code == 200
    revoke = await client.delete(f"/v1/api-keys/{key.id}", headers=person.auth())
    assert revoke.status_code == 204
    response = await client.get("/v1/account", headers=person.auth(key.secret))
    assert response.status_code == 401
    assert error_code(response) == "unauthorized"


async def test_expired_key_is_refused(app: FastAPI, client, clock) -> None:  # type: ignore[no-untyped-def]
    person = await new_person(app)
    key = await person.key("short", expires_in_days=1)
    clock.advance(86400 - 5)
    assert (await client.get("/v1/account", headers=person.auth(key.secret))).status_code == 200
    clock.advance(10)
    response = await client.get("/v1/account", headers=person.auth(key.secret))
    assert response.status_code == 401


async def test_member_who_left_loses_every_credential(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    owner = await new_person(app, account_type="business")
    member = await new_person(app, account_id=owner.account_id, role=Role.MEMBER)
    key = await member.key("member-key")
    async with ctx_for(app) as ctx:
        await ctx.db.execute(
            update(Membership)
            .where(Membership.id == member.membership_id)
            .values(ended_at=ctx.now())
        )
        await ctx.db.commit()
    for token in (key.secret, member.session_token):
        response = await client.get("/v1/account", headers=member.auth(token))
        assert response.status_code == 403
        assert error_code(response) == "organization_access_removed"


async def test_key_never_holds_more_than_its_member(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    owner = await new_person(app, account_type="business")
    admin = await new_person(app, account_id=owner.account_id, role=Role.ADMIN)
    key = await admin.key("admin-key", permissions=["team:manage", "usage:read"])
    before = (await client.get("/v1/account", headers=admin.auth(key.secret))).json()
    assert before["permissions"] == ["team:manage", "usage:read"]
    async with ctx_for(app) as ctx:
        await ctx.db.execute(
            update(Membership).where(Membership.id == admin.membership_id).values(role="member")
        )
        await ctx.db.commit()
    after = (await client.get("/v1/account", headers=admin.auth(key.secret))).json()
    assert after["permissions"] == ["usage:read"]
    assert after["role"] == "member"


async def test_account_being_deleted_refuses_callers(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    async with ctx_for(app) as ctx:
        await ctx.db.execute(
            update(Account).where(Account.id == person.account_id).values(status="deletion_pending")
        )
        await ctx.db.commit()
    response = await client.get("/v1/account", headers=person.auth())
    assert response.status_code == 403
    assert error_code(response) == "account_deletion_pending"


async def test_session_cookie_works_like_the_bearer_token(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    client.cookies.set("sitetools_session", person.session_token)
    try:
        response = await client.get("/v1/account")
    finally:
        client.cookies.clear()
    assert response.status_code == 200


async def test_expired_and_idle_sessions_are_refused(app: FastAPI, client, clock) -> None:  # type: ignore[no-untyped-def]
    person = await new_person(app)
    clock.advance(2 * 86400 + 1)  # idle two days
    assert (await client.get("/v1/account", headers=person.auth())).status_code == 401
    active = await new_person(app)
    for _ in range(8):  # active every 36 hours: never idle, but 14 days is the end
        clock.advance(36 * 3600)
        status = (await client.get("/v1/account", headers=active.auth())).status_code
    assert status == 200
    clock.advance(36 * 3600 * 2)
    assert (await client.get("/v1/account", headers=active.auth())).status_code == 401


async def test_last_used_at_written_at_most_once_a_minute(app: FastAPI, client, clock) -> None:  # type: ignore[no-untyped-def]
    person = await new_person(app)
    key = await person.key("touch", permissions=["api_keys:manage"])

    async def last_used() -> str | None:
        page = (await client.get("/v1/api-keys", headers=person.auth())).json()
        return next(k["last_used_at"] for k in page["data"] if k["id"] == key.id)

    assert await last_used() is None
    await client.get("/v1/account", headers=person.auth(key.secret))
    first = await last_used()
    assert first is not None
    clock.advance(30)
    await client.get("/v1/account", headers=person.auth(key.secret))
    assert await last_used() == first
    clock.advance(31)
    await client.get("/v1/account", headers=person.auth(key.secret))
    assert (await last_used()) != first


async def test_caller_matrix_for_rotate_and_revoke(
    app: FastAPI,
    client: httpx.AsyncClient,
    callers: tuple[Person, dict[str, str | None]],
) -> None:
    """Rotate (through the Dashboard) and revoke, for each caller kind, on a fresh target key."""
    person, tokens = callers
    expected = {
        "session": (200, 204),
        "full_key": (200, 204),
        "plain_key": (403, 403),
        "integration_key": (403, 403),
        "none": (401, 401),
    }
    for kind, token in tokens.items():
        target = await person.key(f"target-{kind}", permissions=["tools:read"])
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        rotate = await client.post(
            f"/v1/api-keys/{target.id}/rotate", json={"deliver": "dashboard"}, headers=headers
        )
        revoke = await client.delete(f"/v1/api-keys/{target.id}", headers=headers)
        assert (rotate.status_code, revoke.status_code) == expected[kind], kind
