"""spec: "API keys" - create, defaults, limits, connect keys, rotate, revoke, dashboard delivery."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from fastapi import FastAPI

from sitetools.accounts import sessions
from sitetools.auth.permissions import Role
from sitetools.auth.resolve import resolve_caller
from sitetools.core.errors import ServiceError
from sitetools.keys import service as keys
from tests.support import Person, ctx_for, error_code, new_integration, new_person

DEFAULT_FOR_MEMBER = [
    "jobs:cancel",
    "jobs:read",
    "logins:manage",
    "logins:read",
    "runs:create",
    "tools:build",
    "tools:read",
    "usage:read",
]


async def create(client: httpx.AsyncClient, person: Person, token: str | None = None, **body):  # type: ignore[no-untyped-def]
    body.setdefault("name", "key")
    return await client.post("/v1/api-keys", json=body, headers=person.auth(token))


async def test_create_shows_the_secret_once_with_defaults(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    response = await create(client, person, name="CI")
    assert response.status_code == 201
    key = response.json()
    assert key["id"].startswith("key_")
    assert len(key["id"]) == 36
    assert key["secret"].startswith("svc_")
    assert len(key["secret"]) >= 4 + 43
    assert key["secret_hint"] == "svc_…" + key["secret"][-4:]
    assert key["permissions"] == DEFAULT_FOR_MEMBER
    assert key["integration_id"] is None
    created = key["created_at"]
    assert key["expires_at"][:10] != created[:10]
    listed = (await client.get("/v1/api-keys", headers=person.auth())).json()["data"]
    assert "secret" not in listed[0]
    assert key["secret"] not in str(listed)
    works = await client.get("/v1/account", headers=person.auth(key["secret"]))
    assert works.status_code == 200


async def test_default_expiry_is_90_days_and_bounds_hold(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    from datetime import datetime

    person = await new_person(app)
    key = (await create(client, person)).json()
    span = datetime.fromisoformat(key["expires_at"]) - datetime.fromisoformat(key["created_at"])
    assert span.days == 90
    for days in (1, 365):
        assert (await create(client, person, expires_in_days=days)).status_code == 201
    for days in (0, 366, "ninety", 1.5):
        response = await create(client, person, expires_in_days=days)
        assert response.status_code == 400, days
        assert response.json()["error"]["details"]["issues"][0]["path"] == "/body/expires_in_days"


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("a", True),
        ("x" * 100, True),
        ("My key 2", True),
        ("", False),
        ("x" * 101, False),
        (" lead", False),
        ("trail ", False),
        ("\tx", False),
    ],
)
async def test_name_rules(app: FastAPI, client: httpx.AsyncClient, name: str, ok: bool) -> None:
    person = await new_person(app)
    response = await create(client, person, name=name)
    assert response.status_code == (201 if ok else 400)
    if not ok:
        assert error_code(response) == "invalid_request"


@pytest.mark.parametrize(
    "body",
    [
        {"name": "k", "permissions": []},
        {"name": "k", "permissions": ["tools:read"] * 17},
        {"name": "k", "permissions": ["root"]},
        {"name": "k", "permissions": ["credentials:manage"]},
        {"name": "k", "integration_id": "int_nothex"},
        {"name": "k", "deliver": "email"},
        {"name": "k", "purpose": "other"},
        {"name": "k", "scopes": ["x"]},
        {"permissions": ["tools:read"]},
    ],
)
async def test_create_body_rules(
    app: FastAPI, client: httpx.AsyncClient, body: dict[str, object]
) -> None:
    person = await new_person(app)
    response = await client.post("/v1/api-keys", json=body, headers=person.auth())
    assert response.status_code == 400
    assert error_code(response) == "invalid_request"


async def test_named_only_permissions_and_permission_not_held(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    owner = await new_person(app, account_type="business")
    member = await new_person(app, account_id=owner.account_id, role=Role.MEMBER)
    named = await create(client, owner, permissions=["team:manage", "billing:manage"])
    assert named.status_code == 201
    assert named.json()["permissions"] == ["billing:manage", "team:manage"]
    refused = await create(client, member, permissions=["tools:read", "team:manage"])
    assert refused.status_code == 403
    assert error_code(refused) == "permission_not_held"
    assert refused.json()["error"]["details"]["permissions"] == ["team:manage"]


async def test_integration_key_scope(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app)
    public = await new_integration(app)
    key = await create(client, person, integration_id=public)
    assert key.status_code == 201
    assert key.json()["integration_id"] == public
    assert key.json()["permissions"] == ["jobs:cancel", "jobs:read", "runs:create", "tools:read"]
    wide = await create(client, person, integration_id=public, permissions=["usage:read"])
    assert wide.status_code == 400
    assert wide.json()["error"]["details"]["issues"][0]["path"] == "/body/permissions"
    other = await new_person(app)
    private = await new_integration(app, account_id=other.account_id)
    hidden = await create(client, person, integration_id=private)
    assert hidden.status_code == 404
    assert error_code(hidden) == "not_found"
    missing = await create(client, person, integration_id="int_" + "0" * 32)
    assert missing.status_code == 404


async def test_create_and_rotate_need_a_fresh_sign_in(
    app: FastAPI,
    client: httpx.AsyncClient,
    clock,  # type: ignore[no-untyped-def]
) -> None:
    person = await new_person(app)
    key = (await create(client, person)).json()
    clock.advance(301)
    stale = await create(client, person)
    assert stale.status_code == 403
    assert error_code(stale) == "FreshAuthenticationRequired"
    rotate = await client.post(f"/v1/api-keys/{key['id']}/rotate", headers=person.auth())
    assert rotate.status_code == 403
    assert error_code(rotate) == "FreshAuthenticationRequired"
    # Listing and revoking need no fresh sign-in.
    assert (await client.get("/v1/api-keys", headers=person.auth())).status_code == 200
    assert (
        await client.delete(f"/v1/api-keys/{key['id']}", headers=person.auth())
    ).status_code == 204


async def test_an_api_key_creates_only_through_the_dashboard(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    manager = await person.key("manager", permissions=["api_keys:manage", "tools:read"])
    direct = await create(client, person, manager.secret, permissions=["tools:read"])
    assert direct.status_code == 403
    assert error_code(direct) == "FreshAuthenticationRequired"
    beyond = await create(client, person, manager.secret, permissions=["usage:read"])
    assert error_code(beyond) == "permission_not_held"
    delivered = await create(
        client, person, manager.secret, permissions=["tools:read"], deliver="dashboard"
    )
    assert delivered.status_code == 200
    assert set(delivered.json()) == {"dashboard_url", "expires_at"}
    assert delivered.json()["dashboard_url"].startswith(
        "http://testserver/dashboard/api-keys/new?intent="
    )


async def test_dashboard_delivery_creates_nothing_until_finished_once(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    before = (await client.get("/v1/api-keys", headers=person.auth())).json()["data"]
    delivered = await create(
        client, person, name="later", permissions=["tools:read"], deliver="dashboard"
    )
    assert delivered.status_code == 200
    after = (await client.get("/v1/api-keys", headers=person.auth())).json()["data"]
    assert after == before
    intent = parse_qs(urlparse(delivered.json()["dashboard_url"]).query)["intent"][0]
    async with ctx_for(app) as ctx:
        caller = await resolve_caller(ctx, person.session_token)
        made = await keys.complete_dashboard_intent(ctx, caller, intent)
        await ctx.db.commit()
    assert made.name == "later"
    assert made.permissions == ["tools:read"]
    async with ctx_for(app) as ctx:
        caller = await resolve_caller(ctx, person.session_token)
        with pytest.raises(Exception, match="not_found"):
            await keys.complete_dashboard_intent(ctx, caller, intent)
        with pytest.raises(Exception, match="not_found"):
            await keys.complete_dashboard_intent(ctx, caller, intent[:-2] + "xx")
    other = await new_person(app)
    async with ctx_for(app) as ctx:
        caller = await resolve_caller(ctx, other.session_token)
        with pytest.raises(Exception, match="not_found"):
            await keys.complete_dashboard_intent(ctx, caller, intent)


async def test_dashboard_intent_expires(app: FastAPI, client: httpx.AsyncClient, clock) -> None:  # type: ignore[no-untyped-def]
    person = await new_person(app)
    delivered = await create(client, person, deliver="dashboard")
    intent = parse_qs(urlparse(delivered.json()["dashboard_url"]).query)["intent"][0]
    clock.advance(16 * 60)
    async with ctx_for(app) as ctx:
        fresh = await sessions.create_session(ctx, person.user_id)  # signed in again just now
        caller = await resolve_caller(ctx, fresh.token)
        with pytest.raises(ServiceError) as refused:
            await keys.complete_dashboard_intent(ctx, caller, intent)
    assert refused.value.code == "not_found"


async def test_rotate_keeps_id_permissions_expiry_and_stops_old_secret(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    key = (await create(client, person, permissions=["tools:read"])).json()
    response = await client.post(f"/v1/api-keys/{key['id']}/rotate", headers=person.auth())
    assert response.status_code == 200
    rotated = response.json()
    for field in ("id", "permissions", "expires_at", "created_at", "name"):
        assert rotated[field] == key[field]
    assert rotated["secret"] != key["secret"]
    old = await client.get("/v1/account", headers=person.auth(key["secret"]))
    assert old.status_code == 401
    new = await client.get("/v1/account", headers=person.auth(rotated["secret"]))
    assert new.status_code == 200


async def test_rotate_needs_the_keys_permissions(app: FastAPI, client: httpx.AsyncClient) -> None:
    owner = await new_person(app, account_type="business")
    admin = await new_person(app, account_id=owner.account_id, role=Role.ADMIN)
    key = (await create(client, admin, permissions=["team:manage"])).json()
    from sqlalchemy import update

    from sitetools.accounts.models import Membership

    async with ctx_for(app) as ctx:
        await ctx.db.execute(
            update(Membership).where(Membership.id == admin.membership_id).values(role="member")
        )
        await ctx.db.commit()
    response = await client.post(f"/v1/api-keys/{key['id']}/rotate", headers=admin.auth())
    assert response.status_code == 403
    assert error_code(response) == "permission_not_held"


async def test_rotate_with_dashboard_delivery_changes_nothing(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    key = (await create(client, person)).json()
    response = await client.post(
        f"/v1/api-keys/{key['id']}/rotate", json={"deliver": "dashboard"}, headers=person.auth()
    )
    assert response.status_code == 200
    assert f"/dashboard/api-keys/{key['id']}/rotate?intent=" in response.json()["dashboard_url"]
    still = await client.get("/v1/account", headers=person.auth(key["secret"]))
    assert still.status_code == 200
    bad = await client.post(
        f"/v1/api-keys/{key['id']}/rotate", json={"deliver": "sms"}, headers=person.auth()
    )
    assert bad.status_code == 400


async def test_other_members_keys_are_not_found(app: FastAPI, client: httpx.AsyncClient) -> None:
    owner = await new_person(app, account_type="business")
    member = await new_person(app, account_id=owner.account_id, role=Role.MEMBER)
    key = (await create(client, member)).json()
    for method, path in (
        ("POST", f"/v1/api-keys/{key['id']}/rotate"),
        ("DELETE", f"/v1/api-keys/{key['id']}"),
        ("DELETE", "/v1/api-keys/key_" + "f" * 32),
        ("DELETE", "/v1/api-keys/not-an-id"),
    ):
        response = await client.request(method, path, headers=owner.auth())
        assert response.status_code == 404, path
        assert error_code(response) == "not_found"
    listed = (await client.get("/v1/api-keys", headers=owner.auth())).json()["data"]
    assert key["id"] not in {k["id"] for k in listed}


async def test_revoke_rules_for_key_callers(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app)
    manager = await person.key("manager", permissions=["api_keys:manage", "tools:read"])
    narrow = await person.key("narrow", permissions=["tools:read"])
    wide = await person.key("wide", permissions=["usage:read"])
    refused = await client.delete(f"/v1/api-keys/{wide.id}", headers=person.auth(manager.secret))
    assert refused.status_code == 403
    assert error_code(refused) == "forbidden"
    within = await client.delete(f"/v1/api-keys/{narrow.id}", headers=person.auth(manager.secret))
    assert within.status_code == 204
    assert within.content == b""
    itself = await client.delete(f"/v1/api-keys/{manager.id}", headers=person.auth(manager.secret))
    assert itself.status_code == 204
    gone = await client.get("/v1/account", headers=person.auth(manager.secret))
    assert gone.status_code == 401


async def test_revoked_keys_stay_listed_with_revoked_at_and_cannot_rotate(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    key = (await create(client, person)).json()
    assert (
        await client.delete(f"/v1/api-keys/{key['id']}", headers=person.auth())
    ).status_code == 204
    again = await client.delete(f"/v1/api-keys/{key['id']}", headers=person.auth())
    assert again.status_code == 204
    listed = (await client.get("/v1/api-keys", headers=person.auth())).json()["data"]
    assert next(k for k in listed if k["id"] == key["id"])["revoked_at"] is not None
    rotate = await client.post(f"/v1/api-keys/{key['id']}/rotate", headers=person.auth())
    assert rotate.status_code == 404


async def test_fifty_key_limit(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app)
    for index in range(keys.KEYS_PER_MEMBER):
        assert (await create(client, person, name=f"k{index}")).status_code == 201
    response = await create(client, person, name="one too many")
    assert response.status_code == 409
    assert error_code(response) == "api_key_limit_reached"
    listed = (await client.get("/v1/api-keys?limit=100", headers=person.auth())).json()["data"]
    await client.delete(f"/v1/api-keys/{listed[0]['id']}", headers=person.auth())
    assert (await create(client, person, name="room again")).status_code == 201


async def test_connect_keys_keep_three_unused_per_integration(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    integration = await new_integration(app)
    made = [
        (
            await create(
                client, person, name=f"c{i}", purpose="connect", integration_id=integration
            )
        ).json()
        for i in range(3)
    ]
    used = made[0]
    assert (
        await client.get("/v1/account/preferences", headers=person.auth(used["secret"]))
    ).status_code == 200
    account_level = (await create(client, person, name="acct", purpose="connect")).json()
    for i in range(2):
        made.append(
            (
                await create(
                    client, person, name=f"d{i}", purpose="connect", integration_id=integration
                )
            ).json()
        )
    listed = {
        k["id"]: k for k in (await client.get("/v1/api-keys", headers=person.auth())).json()["data"]
    }
    assert listed[used["id"]]["revoked_at"] is None  # used: never revoked this way
    assert listed[made[1]["id"]]["revoked_at"] is not None  # oldest unused beyond three
    for key in made[2:]:
        assert listed[key["id"]]["revoked_at"] is None
    assert listed[account_level["id"]]["revoked_at"] is None  # its own scope
    assert listed[made[2]["id"]]["purpose"] == "connect"


async def test_connect_keys_are_throttled_at_twenty_an_hour(
    app: FastAPI,
    client: httpx.AsyncClient,
    clock,  # type: ignore[no-untyped-def]
) -> None:
    person = await new_person(app)
    for i in range(20):
        assert (await create(client, person, name=f"c{i}", purpose="connect")).status_code == 201
    response = await create(client, person, name="c20", purpose="connect")
    assert response.status_code == 429
    assert error_code(response) == "api_key_create_throttled"
    assert (await create(client, person, name="plain")).status_code == 201


async def test_connect_key_at_the_limit_revokes_oldest_unused_connect_key(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    integrations = [await new_integration(app) for _ in range(2)]
    connect = [
        (
            await create(
                client, person, name=f"c{i}", purpose="connect", integration_id=integrations[i]
            )
        ).json()
        for i in range(2)
    ]
    await client.get("/v1/account/preferences", headers=person.auth(connect[0]["secret"]))
    for index in range(keys.KEYS_PER_MEMBER - 2):
        assert (await create(client, person, name=f"k{index}")).status_code == 201
    plain = await create(client, person, name="plain")
    assert error_code(plain) == "api_key_limit_reached"
    made = await create(client, person, name="new connect", purpose="connect")
    assert made.status_code == 201
    listed = {
        k["id"]: k
        for k in (await client.get("/v1/api-keys?limit=100", headers=person.auth())).json()["data"]
    }
    assert listed[connect[0]["id"]]["revoked_at"] is None  # used
    assert listed[connect[1]["id"]]["revoked_at"] is not None  # oldest unused connect key
    again = await create(client, person, name="another", purpose="connect")
    assert again.status_code == 201  # the previous connect key was unused: it gives way
    listed = {
        k["id"]: k
        for k in (await client.get("/v1/api-keys?limit=100", headers=person.auth())).json()["data"]
    }
    assert listed[made.json()["id"]]["revoked_at"] is not None


@pytest.mark.parametrize(
    "value",
    [
        "a",
        "My key 2",
        "\x85ab",
        "ab\xa0",
        "a\ufeff",
        "\u2003x",
        "x\u3000",
        "a\x00b",
        "a\nb",
        "ok\u200bok",
        "tab\there",
        " lead",
        "trail ",
    ],
)
def test_documented_key_name_pattern_agrees_with_validation(value: str) -> None:
    """The document's pattern (read as ECMA-262 by clients) and the server accept the same."""
    import re

    from pydantic import ValidationError

    from sitetools.keys.schemas import KEY_NAME_PATTERN, CreateKeyIn

    documented = re.fullmatch(KEY_NAME_PATTERN, value) is not None
    try:
        CreateKeyIn(name=value)
        accepted = True
    except ValidationError:
        accepted = False
    assert documented == accepted
