"""The OpenAPI document is generated from the registry and agrees with the routes."""

from __future__ import annotations

import re

import httpx
from fastapi import FastAPI
from openapi_spec_validator import validate
from starlette.routing import Route

from sitetools.core.errors import CATALOGUE
from sitetools.operations.catalog import all_operations
from sitetools.operations.registry import TAGS

SPEC_TAGS = [
    "account",
    "api_keys",
    "connected_apps",
    "usage",
    "quota",
    "billing",
    "integrations",
    "connect",
    "code",
    "logins",
    "two_factor",
    "login_access",
    "tools",
    "webhooks",
    "runs",
    "builds",
    "jobs",
    "suggestions",
    "files",
    "team",
]


async def _document(client: httpx.AsyncClient) -> dict:  # type: ignore[type-arg]
    response = await client.get("/v1/openapi.json")
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


async def test_document_is_public_valid_openapi_31_version_1(client: httpx.AsyncClient) -> None:
    document = await _document(client)
    validate(document)
    assert document["openapi"].startswith("3.1")
    assert document["info"]["version"] == "1"


def test_registry_tags_are_the_spec_tags() -> None:
    assert list(TAGS) == SPEC_TAGS


async def test_every_operation_is_declared_with_id_tag_and_extensions(
    client: httpx.AsyncClient,
) -> None:
    document = await _document(client)
    seen = set()
    for path, methods in document["paths"].items():
        assert path.startswith("/v1/")
        for method, operation in methods.items():
            op_id = operation["operationId"]
            assert re.fullmatch(r"[a-z_]+\.[a-z_]+", op_id), op_id
            tag = op_id.split(".")[0]
            assert operation["tags"] == [tag]
            assert tag in SPEC_TAGS
            assert operation["x-service-effect"] in {"read", "write", "destructive"}
            assert set(operation["x-service-callers"]) <= {
                "session",
                "oauth",
                "api_key",
                "integration_key",
            }
            assert operation["x-service-permission"]
            assert op_id not in seen
            seen.add(op_id)
            assert method in {"get", "post", "put", "patch", "delete"}


async def test_routes_and_document_agree(app: FastAPI, client: httpx.AsyncClient) -> None:
    """A route missing from the document, or a documented path with no route, fails here."""
    document = await _document(client)
    documented = {
        (method.upper(), path) for path, item in document["paths"].items() for method in item
    }
    served = set()
    for route in app.routes:
        if isinstance(route, Route) and route.path.startswith("/v1/"):
            if route.path == "/v1/openapi.json":
                continue
            served |= {(m, route.path) for m in (route.methods or set()) if m != "HEAD"}
    assert served == documented
    assert {(op.method, op.path) for op in all_operations()} == documented


async def test_every_documented_error_uses_the_envelope_and_known_codes(
    client: httpx.AsyncClient,
) -> None:
    document = await _document(client)
    error_schema = document["components"]["schemas"]["Error"]
    assert error_schema["required"] == ["error"]
    assert set(error_schema["properties"]["error"]["required"]) == {
        "code",
        "message",
        "retryable",
        "docs_url",
        "details",
    }
    for methods in document["paths"].values():
        for operation in methods.values():
            statuses = {int(s) for s in operation["responses"]}
            for common in (400, 401, 403, 500, 503):
                assert common in statuses, operation["operationId"]
            if "requestBody" in operation:
                assert 413 in statuses
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    ref = response["content"]["application/json"]["schema"]["$ref"]
                    assert ref == "#/components/schemas/Error"
                    for code in response["x-service-error-codes"]:
                        assert CATALOGUE[code].status == int(status)


async def test_account_and_key_operations_declare_spec_callers_and_permissions(
    client: httpx.AsyncClient,
) -> None:
    document = await _document(client)
    paths = document["paths"]
    assert paths["/v1/account"]["get"]["x-service-callers"] == ["session", "oauth", "api_key"]
    assert set(paths["/v1/account/preferences"]["get"]["x-service-callers"]) == {
        "session",
        "oauth",
        "api_key",
        "integration_key",
    }
    for path in ("/v1/account", "/v1/account/name", "/v1/api-keys", "/v1/api-keys/{id}"):
        for operation in paths[path].values():
            assert operation["x-service-permission"] == "identity"
    for operation in paths["/v1/api-keys"].values():
        assert operation["x-service-key-permission"] == "api_keys:manage"
    create = paths["/v1/api-keys"]["post"]
    assert create["operationId"] == "api_keys.create"
    codes = {c for r in create["responses"].values() for c in r.get("x-service-error-codes", [])}
    assert {
        "permission_not_held",
        "forbidden",
        "not_found",
        "api_key_limit_reached",
        "api_key_create_throttled",
        "FreshAuthenticationRequired",
    } <= codes
    assert paths["/v1/account"]["get"]["x-service-effect"] == "read"
    assert paths["/v1/account/name"]["put"]["x-service-effect"] == "write"
    assert paths["/v1/api-keys/{id}"]["delete"]["x-service-effect"] == "destructive"


async def test_create_key_body_refuses_other_fields_in_the_document(
    client: httpx.AsyncClient,
) -> None:
    document = await _document(client)
    schemas = document["components"]["schemas"]
    ref = document["paths"]["/v1/api-keys"]["post"]["requestBody"]["content"]["application/json"][
        "schema"
    ]["$ref"]
    body = schemas[ref.rsplit("/", 1)[1]]
    assert body["additionalProperties"] is False
    assert body["required"] == ["name"]


def test_every_catalogue_status_is_an_http_error() -> None:
    for code, spec in CATALOGUE.items():
        assert 400 <= spec.status < 600, code
