"""spec: "Account" operations - the account, the caller's name, preferences."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from sitetools.auth.permissions import Role
from tests.support import error_code, new_integration, new_person

MEMBER_PERMISSIONS = [
    "api_keys:manage",
    "credentials:manage",
    "jobs:cancel",
    "jobs:read",
    "logins:manage",
    "logins:read",
    "runs:create",
    "tools:build",
    "tools:read",
    "usage:read",
]


async def test_personal_account_is_owned_with_a_plan(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app, plan="premium")
    body = (await client.get("/v1/account", headers=person.auth())).json()
    assert body["id"] == person.account_id
    assert body["type"] == "personal"
    assert body["plan"] == "premium"
    assert body["role"] == "owner"
    assert body["permissions"] == sorted([*MEMBER_PERMISSIONS, "billing:manage", "team:manage"])
    assert body["features"] == {
        "teams": False,
        "webhooks": True,
        "billing": True,
        "sms_numbers": False,
        "builds": True,
        "code": False,
    }


@pytest.mark.parametrize(
    ("role", "extra"),
    [
        (Role.OWNER, ["billing:manage", "team:manage"]),
        (Role.ADMIN, ["team:manage"]),
        (Role.MEMBER, []),
    ],
)
async def test_business_roles_carry_the_decided_permissions(
    app: FastAPI, client: httpx.AsyncClient, role: Role, extra: list[str]
) -> None:
    owner = await new_person(app, account_type="business")
    person = (
        owner
        if role is Role.OWNER
        else await new_person(app, account_id=owner.account_id, role=role)
    )
    body = (await client.get("/v1/account", headers=person.auth())).json()
    assert body["type"] == "business"
    assert body["plan"] is None
    assert body["role"] == role.value
    assert body["permissions"] == sorted(MEMBER_PERMISSIONS + extra)
    assert body["features"]["teams"] is True
    assert body["features"]["billing"] is False


async def test_service_tier_has_no_billing(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app, account_type="service")
    body = (await client.get("/v1/account", headers=person.auth())).json()
    assert body["type"] == "service"
    assert body["features"]["billing"] is False


async def test_set_name_trims_and_is_idempotent(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app)
    body = {"first_name": "  Ada ", "last_name": " Lovelace  "}
    first = await client.put("/v1/account/name", json=body, headers=person.auth())
    second = await client.put("/v1/account/name", json=body, headers=person.auth())
    assert first.status_code == second.status_code == 200
    assert (
        first.json()
        == second.json()
        == {
            "user_id": person.user_id,
            "email": person.email,
            "first_name": "Ada",
            "last_name": "Lovelace",
            "name": "Ada Lovelace",
        }
    )


@pytest.mark.parametrize("last_name", [None, "", "   ", "omit"])
async def test_last_name_omitted_null_or_blank_means_none(
    app: FastAPI, client: httpx.AsyncClient, last_name: str | None
) -> None:
    person = await new_person(app)
    await client.put(
        "/v1/account/name", json={"first_name": "X", "last_name": "Old"}, headers=person.auth()
    )
    body: dict[str, object] = {"first_name": "Grace"}
    if last_name != "omit":
        body["last_name"] = last_name
    response = await client.put("/v1/account/name", json=body, headers=person.auth())
    assert response.status_code == 200
    assert response.json()["last_name"] is None
    assert response.json()["name"] == "Grace"


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"first_name": ""}, "/body/first_name"),
        ({"first_name": "    "}, "/body/first_name"),
        ({"first_name": "a" * 101}, "/body/first_name"),
        ({"first_name": "Ada\u0000"}, "/body/first_name"),
        ({"first_name": "Ada\u202e"}, "/body/first_name"),
        ({"first_name": "Ada\u2066x"}, "/body/first_name"),
        ({"first_name": "Ada", "last_name": "b" * 101}, "/body/last_name"),
        ({"first_name": "Ada", "last_name": "Lo\nve"}, "/body/last_name"),
        ({"first_name": 5}, "/body/first_name"),
        ({"last_name": "Only"}, "/body/first_name"),
        ({"first_name": "Ada", "middle": "X"}, "/body/middle"),
    ],
)
async def test_bad_names_are_refused(
    app: FastAPI, client: httpx.AsyncClient, body: dict[str, object], path: str
) -> None:
    person = await new_person(app)
    response = await client.put("/v1/account/name", json=body, headers=person.auth())
    assert response.status_code == 400
    assert error_code(response) == "invalid_request"
    assert [i["path"] for i in response.json()["error"]["details"]["issues"]] == [path]


async def test_name_limits_count_after_trimming(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app)
    response = await client.put(
        "/v1/account/name",
        json={"first_name": "  " + "a" * 100 + "  ", "last_name": "b" * 100},
        headers=person.auth(),
    )
    assert response.status_code == 200


async def test_name_change_touches_only_the_caller(app: FastAPI, client: httpx.AsyncClient) -> None:
    owner = await new_person(app, account_type="business")
    member = await new_person(app, account_id=owner.account_id, role=Role.MEMBER)
    await client.put("/v1/account/name", json={"first_name": "Owner"}, headers=owner.auth())
    await client.put("/v1/account/name", json={"first_name": "Member"}, headers=member.auth())
    again = await client.put("/v1/account/name", json={"first_name": "Owner"}, headers=owner.auth())
    assert again.json()["user_id"] == owner.user_id
    assert again.json()["first_name"] == "Owner"


async def test_preferences_defaults_and_session_has_no_connection(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    body = (await client.get("/v1/account/preferences", headers=person.auth())).json()
    assert body == {"question_delivery": "agent", "connection": None, "build_emails": True}


async def test_connection_override_wins_and_null_returns_to_default(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    key = await person.key("agent")
    headers = person.auth(key.secret)
    patched = await client.patch(
        "/v1/account/preferences",
        json={"question_delivery": "agent", "connection": {"question_delivery": "form"}},
        headers=headers,
    )
    assert patched.status_code == 200
    assert patched.json()["connection"] == {
        "id": key.id,
        "kind": "api_key",
        "question_delivery": "form",
    }
    # Another connection of the same member does not see this override.
    other = await person.key("other")
    seen = (await client.get("/v1/account/preferences", headers=person.auth(other.secret))).json()
    assert seen["connection"] == {"id": other.id, "kind": "api_key", "question_delivery": None}
    cleared = await client.patch(
        "/v1/account/preferences", json={"connection": {"question_delivery": None}}, headers=headers
    )
    assert cleared.json()["connection"]["question_delivery"] is None


async def test_omitted_fields_keep_their_value(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app)
    await client.patch(
        "/v1/account/preferences",
        json={"question_delivery": "form", "build_emails": False},
        headers=person.auth(),
    )
    body = (await client.patch("/v1/account/preferences", json={}, headers=person.auth())).json()
    assert body["question_delivery"] == "form"
    assert body["build_emails"] is False
    empty = await client.patch("/v1/account/preferences", headers=person.auth())
    assert empty.status_code == 200


async def test_connection_refused_from_a_dashboard_session(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    response = await client.patch(
        "/v1/account/preferences",
        json={"connection": {"question_delivery": "form"}},
        headers=person.auth(),
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"]["issues"][0]["path"] == "/body/connection"


@pytest.mark.parametrize(
    "body",
    [
        {"question_delivery": "email"},
        {"question_delivery": None},
        {"build_emails": "yes please"},
        {"connection": {}},
        {"connection": {"question_delivery": "form", "x": 1}},
        {"colour": "blue"},
    ],
)
async def test_bad_preferences_are_refused(
    app: FastAPI, client: httpx.AsyncClient, body: dict[str, object]
) -> None:
    person = await new_person(app)
    response = await client.patch("/v1/account/preferences", json=body, headers=person.auth())
    assert response.status_code == 400
    assert error_code(response) == "invalid_request"


async def test_integration_key_may_change_only_its_connection(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    key = await person.key("scoped", integration_id=await new_integration(app))
    headers = person.auth(key.secret)
    ok = await client.patch(
        "/v1/account/preferences",
        json={"connection": {"question_delivery": "form"}},
        headers=headers,
    )
    assert ok.status_code == 200
    refused = await client.patch(
        "/v1/account/preferences", json={"question_delivery": "form"}, headers=headers
    )
    assert refused.status_code == 403
    assert error_code(refused) == "forbidden"


@pytest.mark.parametrize(
    "value",
    [
        "Ada",
        "  Ada  ",
        "a" * 100,
        " " + "a" * 100 + "\t",
        "",
        " ",
        "a" * 101,
        "A\u0000b",
        "A\u202eb",
        "\u2067",
        "Zoë",
        "李",
        "A\u200db",
        "\nAda\n",
        "A\tb",
        "\x85Ada",
        "\x1cAda",
        "\ufeffAda",
        "\u3000Ada\u3000",
        "Ada\u2028",
    ],
)
async def test_documented_pattern_agrees_with_the_validator(value: str) -> None:
    import re

    from pydantic import ValidationError

    from sitetools.accounts.schemas import FIRST_NAME_PATTERN, SetNameIn

    documented = re.fullmatch(FIRST_NAME_PATTERN, value) is not None
    try:
        SetNameIn(first_name=value)
        accepted = True
    except ValidationError:
        accepted = False
    assert documented == accepted
