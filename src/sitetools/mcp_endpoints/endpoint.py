"""The HTTP side of the MCP endpoints: methods, Host and Origin, credentials, then the SDK's
Streamable HTTP session manager of that endpoint (one per endpoint, started on first use).

spec: "Self-description and discovery" - the MCP resources accept POST only (405 otherwise);
"Authentication" 3-5 - 401 with ``WWW-Authenticate: Bearer resource_metadata=…`` naming the
endpoint's own metadata, 403, 404, 409 ``mcp_not_hosted``, 503 ``account_unavailable``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from sitetools.core.context import AppServices, unit
from sitetools.core.errors import ServiceError
from sitetools.mcp_endpoints.access import Endpoint, admit, request_token
from sitetools.mcp_endpoints.server import McpServers
from sitetools.operations.http import error_response, is_outage

__all__ = ["McpHub"]

_CORS_HEADERS = "authorization, content-type, mcp-session-id, mcp-protocol-version, last-event-id"


def _split(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


class McpHub:
    """Every MCP endpoint of the app: the ASGI entry and the session managers behind it."""

    def __init__(
        self,
        services: AppServices,
        sessions: async_sessionmaker[AsyncSession],
        servers: McpServers,
    ) -> None:
        self.services = services
        self.sessions = sessions
        self.servers = servers
        settings = services.settings
        self.base_url = settings.base_url
        base = urlsplit(self.base_url)
        self.hosts = {base.netloc.lower(), *(h.lower() for h in _split(settings.allowed_hosts))}
        self.origins = {
            f"{base.scheme}://{base.netloc}".lower(),
            *(o.rstrip("/").lower() for o in _split(settings.allowed_origins)),
        }
        self._managers: dict[str | None, StreamableHTTPSessionManager] = {}
        self._lock = anyio.Lock()
        self._group: TaskGroup | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run in the app's lifespan: the managers' sessions live in this task group."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                group.cancel_scope.cancel()
                self._group = None
                self._managers.clear()

    async def _manager(self, endpoint: Endpoint) -> StreamableHTTPSessionManager:
        key = endpoint.integration_id
        manager = self._managers.get(key)
        if manager is not None:
            return manager
        async with self._lock:
            manager = self._managers.get(key)
            if manager is None:
                if self._group is None:
                    raise ServiceError("temporarily_unavailable")
                manager = StreamableHTTPSessionManager(
                    app=self.servers.build(endpoint),
                    json_response=False,
                    stateless=False,
                    session_idle_timeout=self.services.settings.mcp_session_idle_seconds,
                    max_request_body_size=self.services.settings.max_body_bytes,
                )
                await self._group.start(self._serve, manager)
                self._managers[key] = manager
        return manager

    @staticmethod
    async def _serve(
        manager: StreamableHTTPSessionManager, *, task_status: TaskStatus[None]
    ) -> None:
        async with manager.run():
            task_status.started()
            await anyio.sleep_forever()

    def _origin_allowed(self, origin: str | None) -> bool:
        return origin is None or origin.rstrip("/").lower() in self.origins

    def _cors(self, origin: str | None) -> dict[str, str]:
        if origin is None or not self._origin_allowed(origin):
            return {}
        return {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Expose-Headers": "mcp-session-id, www-authenticate",
            "Vary": "Origin",
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        integration_id = scope.get("path_params", {}).get("integration_id")
        endpoint = (
            Endpoint.integration(self.base_url, integration_id)
            if integration_id
            else Endpoint.account(self.base_url)
        )
        origin = request.headers.get("origin")
        cors = self._cors(origin)
        try:
            if request.method == "OPTIONS" and cors:
                await self._preflight(cors)(scope, receive, send)
                return
            if request.method != "POST":
                raise ServiceError("method_not_allowed")
            if request.headers.get("host", "").lower() not in self.hosts:
                raise ServiceError("forbidden", reason="host_not_allowed")
            if not self._origin_allowed(origin):
                raise ServiceError("forbidden", reason="origin_not_allowed")
            token = request_token(request)
            try:
                async with unit(self.services, self.sessions) as ctx:
                    admitted = await admit(ctx, token, endpoint)
            except Exception as error:  # refusals pass through; only an outage is translated
                if not is_outage(error):
                    raise
                raise ServiceError("account_unavailable") from None
            manager = await self._manager(endpoint)
        except ServiceError as error:
            response = error_response(error, self.base_url, resource=endpoint.url)
            if error.code == "method_not_allowed":
                response.headers["Allow"] = "POST"
            response.headers.update(cors)
            await response(scope, receive, send)
            return
        caller = admitted.caller
        # The SDK binds a session to the principal that opened it (same app, same member).
        scope["user"] = AuthenticatedUser(
            AccessToken(
                token="", client_id=caller.client_id, scopes=[], subject=caller.membership_id
            )
        )

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start" and cors:
                headers = list(message.get("headers", []))
                headers.extend((k.lower().encode(), v.encode()) for k, v in cors.items())
                message = {**message, "headers": headers}
            await send(message)

        await manager.handle_request(scope, receive, send_with_cors)

    def _preflight(self, cors: dict[str, Any]) -> Response:
        return Response(
            status_code=204,
            headers={
                **cors,
                "Access-Control-Allow-Methods": "POST",
                "Access-Control-Allow-Headers": _CORS_HEADERS,
                "Access-Control-Max-Age": "600",
            },
        )
