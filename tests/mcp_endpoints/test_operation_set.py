"""Routes, the OpenAPI document and MCP agree on the operation set; MCP tool errors follow the
spec's rules for retries."""

from __future__ import annotations

import httpx
from starlette.routing import Route

from sitetools.core.errors import ServiceError
from sitetools.mcp_endpoints.receipts import tool_error
from sitetools.operations.catalog import all_operations
from tests.jobs.conftest import Runner
from tests.mcp_endpoints.conftest import error_of, mcp_session


async def test_routes_document_and_mcp_name_the_same_operations(runner: Runner) -> None:
    registry = {op.operation_id for op in all_operations()}
    routes = {
        route.name
        for route in runner.person.app.router.routes
        if isinstance(route, Route) and route.name in registry
    }
    async with httpx.AsyncClient() as http:
        document = (await http.get(f"{runner.server.url}/v1/openapi.json")).json()
    documented = {
        operation["operationId"]
        for path in document["paths"].values()
        for operation in path.values()
    }
    async with mcp_session(f"{runner.server.url}/mcp", runner.key) as session:
        found = await session.call_tool("search_service_api", {"limit": 100})
        assert found.structuredContent is not None
        searched = {entry["operation_id"] for entry in found.structuredContent["data"]}
        for operation_id in sorted(registry):
            described = await session.call_tool(
                "describe_service_api", {"operation_id": operation_id}
            )
            assert not described.isError, operation_id
    assert len(registry) < 100
    assert routes == registry
    assert documented == registry
    assert searched == registry
    assert {"connected_apps.list", "connected_apps.delete", "connect.sign_in"} <= registry


def test_a_retryable_error_says_when_to_retry() -> None:
    body = error_of(tool_error(ServiceError("temporarily_unavailable"), "http://x"))
    assert body["retryable"] is True
    assert body["retry_after_seconds"] == 1
    limited = error_of(tool_error(ServiceError("worker_lost", retry_after_seconds=7), "http://x"))
    assert limited["retry_after_seconds"] == 7
    final = error_of(tool_error(ServiceError("invalid_input", issues=[]), "http://x"))
    assert "retry_after_seconds" not in final


def test_a_write_without_retry_key_that_may_have_been_accepted_is_not_retryable() -> None:
    unknown = error_of(tool_error(ServiceError("temporarily_unavailable"), "http://x", write=True))
    assert unknown["retryable"] is False
    assert unknown["write_possibly_accepted"] is True
    assert "retry_after_seconds" not in unknown
    keyed = error_of(
        tool_error(ServiceError("temporarily_unavailable"), "http://x", write=True, retry_key="k")
    )
    assert keyed["retryable"] is True
    assert "write_possibly_accepted" not in keyed
    refused = error_of(tool_error(ServiceError("quota_exceeded"), "http://x", write=True))
    assert "write_possibly_accepted" not in refused
