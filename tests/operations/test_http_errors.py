"""Every failure answers the spec's envelope (spec: "Errors"; issue: "Errors")."""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi import FastAPI

from tests.support import error_code, new_person


async def test_unknown_path_answers_not_found_envelope(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/no-such-thing")
    assert response.status_code == 404
    assert error_code(response) == "not_found"
    body = response.json()["error"]
    assert body["docs_url"] == "http://testserver/docs/errors#not_found"
    assert body["retryable"] is False
    assert body["details"] == {}


async def test_wrong_method_answers_method_not_allowed_with_allow(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/v1/account")
    assert response.status_code == 405
    assert error_code(response) == "method_not_allowed"
    assert "GET" in response.headers["allow"]


async def test_missing_credentials_answer_401_with_resource_metadata(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/v1/account")
    assert response.status_code == 401
    assert error_code(response) == "unauthorized"
    assert response.headers["www-authenticate"] == (
        'Bearer resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp"'
    )


@pytest.mark.parametrize(
    "header",
    ["Bearer svc_notarealkeyatall", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer sst_nope", "token"],
)
async def test_bad_credentials_answer_unauthorized(client: httpx.AsyncClient, header: str) -> None:
    response = await client.get("/v1/account", headers={"Authorization": header})
    assert response.status_code == 401
    assert error_code(response) == "unauthorized"
    assert "resource_metadata=" in response.headers["www-authenticate"]


async def test_malformed_json_is_invalid_request(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app)
    response = await client.put(
        "/v1/account/name", content=b'{"first_name": ', headers=person.auth()
    )
    assert response.status_code == 400
    assert error_code(response) == "invalid_request"
    assert response.json()["error"]["details"]["issues"] == [
        {"path": "/body", "message": "The body is not valid JSON."}
    ]


async def test_validation_issues_point_at_fields_and_never_echo_values(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    secret_looking = "\u202eSECRET-VALUE-" + "x" * 200
    response = await client.put(
        "/v1/account/name",
        json={"first_name": secret_looking, "last_name": 7, "extra": "EXTRA-VALUE"},
        headers=person.auth(),
    )
    assert response.status_code == 400
    issues = response.json()["error"]["details"]["issues"]
    paths = {issue["path"] for issue in issues}
    assert paths == {"/body/first_name", "/body/last_name", "/body/extra"}
    assert "SECRET-VALUE" not in response.text
    assert "EXTRA-VALUE" not in response.text


async def test_query_validation_points_under_query(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app)
    response = await client.get("/v1/api-keys?limit=0", headers=person.auth())
    assert response.status_code == 400
    assert response.json()["error"]["details"]["issues"][0]["path"] == "/query/limit"
    response = await client.get("/v1/api-keys?cursor=%%%garbage", headers=person.auth())
    assert response.status_code == 400
    assert response.json()["error"]["details"]["issues"][0]["path"] == "/query/cursor"


async def test_body_over_one_mebibyte_is_refused_by_declared_length(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    body = json.dumps({"first_name": "a" * (1024 * 1024 + 10)})
    response = await client.put("/v1/account/name", content=body, headers=person.auth())
    assert response.status_code == 413
    assert error_code(response) == "request_too_large"


async def test_body_over_limit_is_refused_while_streaming(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """Chunked upload without Content-Length: refused once the limit passes, not at the end."""
    person = await new_person(app)
    sent = 0

    async def chunks():  # type: ignore[no-untyped-def]
        nonlocal sent
        for _ in range(64):  # 4 MiB offered in total
            sent += 65536
            yield b" " * 65536

    response = await client.put("/v1/account/name", content=chunks(), headers=person.auth())
    assert response.status_code == 413
    assert error_code(response) == "request_too_large"
    assert sent < 2 * 1024 * 1024  # stopped reading soon after 1 MiB


async def test_unexpected_exception_is_internal_error_without_internals(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sitetools.accounts import service

    async def boom(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("database password is hunter2")

    monkeypatch.setattr(service, "get_account", boom)
    person = await new_person(app)
    response = await client.get("/v1/account", headers=person.auth())
    assert response.status_code == 500
    assert error_code(response) == "internal_error"
    assert "hunter2" not in response.text
    assert "Traceback" not in response.text
    assert len(response.headers["x-request-id"]) == 32


async def test_every_answer_carries_a_request_id(client: httpx.AsyncClient) -> None:
    first = await client.get("/healthz")
    second = await client.get("/v1/openapi.json")
    assert first.headers["x-request-id"] != second.headers["x-request-id"]


async def test_health_and_readiness(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["database"] == "ok"


async def test_error_codes_page_lists_every_code(client: httpx.AsyncClient) -> None:
    from sitetools.core.errors import CATALOGUE

    page = await client.get("/docs/errors")
    assert page.status_code == 200
    for code, spec in CATALOGUE.items():
        assert f'id="{code}"' in page.text
        assert spec.advice in page.text


async def test_database_outage_answers_temporarily_unavailable(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A database that cannot be reached is a retryable 503, never a 500."""
    from sitetools.app import create_app
    from tests.conftest import make_settings
    from tests.support import free_port

    dead = f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/nowhere"
    app = create_app(make_settings(tmp_path, dead))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        response = await http.get(
            "/v1/account", headers={"Authorization": "Bearer svc_" + "a" * 43}
        )
        assert response.status_code == 503
        assert error_code(response) == "temporarily_unavailable"
        assert response.json()["error"]["retryable"] is True
        ready = await http.get("/readyz")
        assert ready.status_code == 503
    await app.state.engine.dispose()


@pytest.mark.parametrize(
    ("method", "path", "body", "pointer"),
    [
        ("GET", "/v1/tools?integration_id=int_%00x", None, "/query/integration_id"),
        ("GET", "/v1/tools?query=a%00b", None, "/query/query"),
        ("GET", "/v1/tools/tool_%00", None, "/path/id"),
        ("DELETE", "/v1/api-keys/key_%00", None, "/path/id"),
        ("POST", "/v1/api-keys", {"name": "a\u0000b"}, "/body/name"),
    ],
)
async def test_nul_characters_are_refused_not_a_server_error(
    app: FastAPI, client: httpx.AsyncClient, method: str, path: str, body: object, pointer: str
) -> None:
    person = await new_person(app)
    response = await client.request(method, path, json=body, headers=person.auth())
    assert response.status_code == 400
    assert response.json()["error"]["details"]["issues"][0]["path"] == pointer


async def test_lone_surrogates_are_refused_and_pairs_accepted(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    lone = await client.post(
        "/v1/api-keys", content=b'{"name": "a\\ud800b"}', headers=person.auth()
    )
    assert lone.status_code == 400
    paired = await client.post(
        "/v1/api-keys", content=b'{"name": "mug \\ud83d\\ude00"}', headers=person.auth()
    )
    assert paired.status_code == 201
    assert paired.json()["name"] == "mug \U0001f600"


async def test_optional_body_empty_is_absent_but_whitespace_is_not_json(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    empty = await client.patch("/v1/account/preferences", content=b"", headers=person.auth())
    assert empty.status_code == 200
    blank = await client.patch("/v1/account/preferences", content=b"\t", headers=person.auth())
    assert blank.status_code == 400
    assert error_code(blank) == "invalid_request"


async def test_a_repeated_query_parameter_is_refused(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    response = await client.get("/v1/api-keys?limit=5&limit=6", headers=person.auth())
    assert response.status_code == 400
    assert response.json()["error"]["details"]["issues"][0]["path"] == "/query/limit"
