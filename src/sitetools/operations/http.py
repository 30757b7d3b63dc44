"""HTTP plumbing shared by every route: request ids, access logs, body limits, error envelopes."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from typing import Any

import sqlalchemy.exc
import structlog
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sitetools.auth.resources import account_mcp_url, resource_metadata_url
from sitetools.core.errors import ServiceError, envelope
from sitetools.core.logging import get_logger

__all__ = ["HttpMiddleware", "error_response", "install_handlers", "is_outage"]

_log = get_logger("sitetools.http")
_stdlib_log = logging.getLogger("sitetools.http")


def is_outage(error: BaseException) -> bool:
    """A failure to reach or lock the database: the same request may work shortly (503)."""
    if isinstance(error, sqlalchemy.exc.TimeoutError | sqlalchemy.exc.InterfaceError):
        return True
    if isinstance(error, sqlalchemy.exc.OperationalError | sqlite3.OperationalError):
        return True
    return isinstance(error, OSError | asyncio.TimeoutError)


def error_response(
    error: ServiceError, base_url: str, *, resource: str | None = None
) -> JSONResponse:
    """The envelope; a 401 names the metadata of ``resource`` (spec: "Authentication" 3 - on
    /v1 the account MCP endpoint's)."""
    headers: dict[str, str] = {}
    if error.status == 401:
        metadata = resource_metadata_url(resource or account_mcp_url(base_url))
        headers["WWW-Authenticate"] = f'Bearer resource_metadata="{metadata}"'
    if error.status == 429 and "retry_after_seconds" in error.details:
        headers["Retry-After"] = str(error.details["retry_after_seconds"])
    return JSONResponse(envelope(error, base_url), status_code=error.status, headers=headers)


def install_handlers(app: Any, base_url: str) -> None:
    """Map every failure to the spec's envelope (never FastAPI's or Starlette's own shapes)."""

    async def on_service_error(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ServiceError)
        return error_response(exc, base_url)

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 405:
            response = error_response(ServiceError("method_not_allowed"), base_url)
            if exc.headers and "Allow" in exc.headers:
                response.headers["Allow"] = exc.headers["Allow"]
            return response
        if exc.status_code == 404:
            return error_response(ServiceError("not_found"), base_url)
        _log.warning("unexpected_http_exception", status=exc.status_code, path=request.url.path)
        return error_response(ServiceError("invalid_request", issues=[]), base_url)

    app.add_exception_handler(ServiceError, on_service_error)
    app.add_exception_handler(HTTPException, on_http_error)


class HttpMiddleware:
    """Around every request: a request id on each log line and in ``X-Request-Id``, the body
    limit (spec: 413 ``request_too_large``, checked while the body streams in, not after), an
    access log line, and any crash turned into a 500 envelope without internals.
    """

    def __init__(self, app: ASGIApp, base_url: str, max_body_bytes: int) -> None:
        self.app = app
        self.base_url = base_url
        self.max_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = os.urandom(16).hex()
        # Each request runs in its own task with its own copy of the context: nothing leaks in.
        structlog.contextvars.bind_contextvars(request_id=request_id)
        started = time.perf_counter()
        status = 500
        response_started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                response_started = True
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            has_body = False
            for name, value in scope["headers"]:
                if name == b"content-length":
                    declared = int(value) if value.isdigit() else 0
                    if declared > self.max_bytes:
                        await self._refuse(scope, receive, send_with_id)
                        return
                    has_body = has_body or declared > 0
                elif name == b"transfer-encoding":
                    has_body = True
            await self.app(scope, self._limited(receive) if has_body else receive, send_with_id)
        except Exception as error:
            unavailable = is_outage(error)
            _log.exception(
                "database_unavailable" if unavailable else "unhandled_error",
                method=scope["method"],
                path=scope["path"],
            )
            if response_started:
                raise
            code = "temporarily_unavailable" if unavailable else "internal_error"
            response = error_response(ServiceError(code), self.base_url)
            await response(scope, receive, send_with_id)
        finally:
            if _stdlib_log.isEnabledFor(logging.INFO):
                _log.info(
                    "request",
                    method=scope["method"],
                    path=scope["path"],
                    status=status,
                    duration_ms=round((time.perf_counter() - started) * 1000, 2),
                )
            structlog.contextvars.clear_contextvars()

    def _limited(self, receive: Receive) -> Receive:
        seen = 0

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise ServiceError("request_too_large", max_bytes=self.max_bytes)
            return message

        return counting_receive

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        error = ServiceError("request_too_large", max_bytes=self.max_bytes)
        response = error_response(error, self.base_url)
        response.headers["Connection"] = "close"
        await response(scope, receive, send)
