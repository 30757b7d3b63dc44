"""Catalog operations (spec: "Tools and integrations")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sitetools.auth.permissions import CallerKind, Permission
from sitetools.core.errors import ServiceError
from sitetools.operations.registry import Operation, OpRequest
from sitetools.tools import service
from sitetools.tools.reference import integration_reference
from sitetools.tools.schemas import (
    IntegrationPath,
    ListToolsQuery,
    ReferenceOut,
    ToolOut,
    ToolPage,
    ToolPath,
)

__all__ = ["OPERATIONS"]

Req = OpRequest[Any, Any, Any]
_CALLERS: tuple[CallerKind, ...] = ("session", "oauth", "api_key", "integration_key")


async def _list(req: Req) -> BaseModel:
    if req.caller is None and not req.ctx.settings.keyless_enabled:
        raise ServiceError("unauthorized")
    return await service.list_tools(req.ctx, req.caller, req.query)


async def _get(req: Req) -> BaseModel:
    return await service.get_tool(req.ctx, req.user, req.path.id)


async def _reference(req: Req) -> BaseModel:
    return await integration_reference(req.ctx, req.user, req.path.id)


OPERATIONS = [
    Operation(
        operation_id="tools.list",
        method="GET",
        path="/v1/tools",
        summary="Find tools: by words, by website, by integration",
        description="Public tools and the caller's private ones; an integration key sees its "
        "integration only. Without credentials (keyless use) only public read-only tools that "
        "need no login, with a `notice`. `possible_matches` (first page, with both `query` and "
        "`site_url`): up to 50 other tools of the site.",
        effect="read",
        callers=_CALLERS,
        permission=Permission.TOOLS_READ,
        handler=_list,
        query_model=ListToolsQuery,
        responses={200: ToolPage},
        public=True,
    ),
    Operation(
        operation_id="tools.get",
        method="GET",
        path="/v1/tools/{id}",
        summary="One tool (`tool_…`, or `op_` + its UUID)",
        effect="read",
        callers=_CALLERS,
        permission=Permission.TOOLS_READ,
        handler=_get,
        path_model=ToolPath,
        responses={200: ToolOut},
        errors=("not_found",),
    ),
    Operation(
        operation_id="integrations.reference",
        method="GET",
        path="/v1/integrations/{id}/reference",
        summary="How to use an integration: MCP URL, tools, inputs and sample calls (Markdown)",
        effect="read",
        callers=_CALLERS,
        permission=Permission.TOOLS_READ,
        handler=_reference,
        path_model=IntegrationPath,
        responses={200: ReferenceOut},
        errors=("not_found",),
    ),
]
