"""REST routes generated from the registry: authenticate, authorize, parse, call, render."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import structlog
from fastapi import FastAPI
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sitetools.auth.caller import Caller
from sitetools.auth.resolve import resolve_caller
from sitetools.auth.resources import account_mcp_url
from sitetools.core.context import AppServices, Ctx, unit
from sitetools.core.errors import ServiceError
from sitetools.operations.parsing import parse_json_body, parse_model
from sitetools.operations.registry import Operation, OpRequest, Reply

__all__ = [
    "NO_BODY",
    "SESSION_COOKIE",
    "authorize",
    "bearer_token",
    "execute",
    "mount_operations",
]

SESSION_COOKIE = "sitetools_session"
_JSON = "application/json"
# ``execute``'s body when the request has none (``None`` is a JSON body: ``null``).
NO_BODY: Any = object()


def bearer_token(request: Request, *, allow_cookie: bool = True) -> str | None:
    """The bearer secret of a request: ``Authorization: Bearer`` first, then the session cookie."""
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ServiceError("unauthorized")
        return token.strip()
    if allow_cookie:
        return request.cookies.get(SESSION_COOKIE)
    return None


def authorize(operation: Operation, caller: Caller) -> None:
    """The caller kinds and permissions the operation declares (authenticated by default)."""
    if caller.kind not in operation.callers:
        raise ServiceError("forbidden", reason="caller_not_accepted")
    if operation.permission != "identity":
        caller.require(operation.permission)
    if operation.key_permission is not None and caller.kind != "session":
        caller.require(operation.key_permission)


def _single_values(request: Request) -> dict[str, str]:
    """Query parameters, each given once: a repeated one is refused, never silently dropped."""
    values: dict[str, str] = {}
    for name, value in request.query_params.multi_items():
        if name in values:
            raise ServiceError(
                "invalid_request",
                issues=[{"path": f"/query/{name}", "message": "Give this parameter once."}],
            )
        values[name] = value
    return values


def _render(operation: Operation, result: BaseModel | Reply | None) -> Response:
    if isinstance(result, Reply):
        status, body, headers = result.status, result.body, dict(result.headers)
    else:
        status, body, headers = operation.success_status, result, {}
    if body is None:
        return Response(status_code=status, headers=headers)
    return Response(body.model_dump_json(), status_code=status, media_type=_JSON, headers=headers)


async def execute(
    operation: Operation,
    ctx: Ctx,
    caller: Caller | None,
    request: Request,
    *,
    path_params: Mapping[str, Any],
    query_params: Mapping[str, str],
    body: Any = NO_BODY,
    surface: Literal["rest", "mcp"] = "rest",
) -> BaseModel | Reply | None:
    """Authorize, parse and run one operation: the one path REST and MCP share, so every rule
    and error holds the same on both. ``body`` is the decoded JSON (absent: no body)."""
    if caller is not None:
        if caller.kind == "oauth" and caller.audience != account_mcp_url(ctx.settings.base_url):
            # spec: "Authentication" 2 - an integration endpoint's token does not work on /v1.
            raise ServiceError("unauthorized")
        authorize(operation, caller)
    elif not operation.public:
        raise ServiceError("unauthorized")
    path = parse_model(operation.path_model, path_params, "path") if operation.path_model else None
    query = (
        parse_model(operation.query_model, query_params, "query") if operation.query_model else None
    )
    parsed = None
    if operation.body_model is not None:
        if body is not NO_BODY:
            parsed = parse_model(operation.body_model, body, "body")
        elif operation.body_required:
            raise ServiceError(
                "invalid_request", issues=[{"path": "/body", "message": "A JSON body is required."}]
            )
    return await operation.handler(OpRequest(ctx, caller, path, query, parsed, request, surface))


def _endpoint(
    operation: Operation, services: AppServices, sessions: async_sessionmaker[AsyncSession]
) -> Any:
    async def endpoint(request: Request) -> Response:
        token = bearer_token(request)
        async with unit(services, sessions) as ctx:
            caller = None
            if token is not None:
                caller = await resolve_caller(ctx, token)
                structlog.contextvars.bind_contextvars(
                    account_id=caller.account_id, credential_id=caller.credential_id
                )
            body: Any = NO_BODY
            if operation.body_model is not None:
                raw = await request.body()
                if raw:  # only an empty body is "no body"; whitespace is not JSON
                    body = parse_json_body(raw)
            result = await execute(
                operation,
                ctx,
                caller,
                request,
                path_params=request.path_params,
                query_params=_single_values(request) if operation.query_model else {},
                body=body,
            )
        return _render(operation, result)

    endpoint.__name__ = operation.operation_id.replace(".", "_")
    return endpoint


def mount_operations(
    app: FastAPI,
    operations: Iterable[Operation],
    services: AppServices,
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # Plain Starlette routes: the endpoint parses its own input, so FastAPI's dependency
    # solving would only add work to every request.
    for operation in operations:
        app.router.routes.append(
            Route(
                operation.path,
                _endpoint(operation, services, sessions),
                methods=[operation.method],
                name=operation.operation_id,
            )
        )
