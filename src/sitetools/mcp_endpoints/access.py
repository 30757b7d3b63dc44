"""Who may use an MCP endpoint (spec: "Authentication" 2-5; decisions: "MCP").

OAuth access tokens whose audience is exactly this endpoint's URL, and API keys: an account
key on ``/mcp`` and on any integration endpoint it may reach, an integration key only on its
own integration's endpoint. A Dashboard session is refused. Checked on every HTTP request and
again before every action a tool takes.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from sitetools.auth.caller import Caller
from sitetools.auth.resolve import resolve_caller
from sitetools.auth.resources import account_mcp_url, integration_mcp_url
from sitetools.core.context import Ctx
from sitetools.core.errors import ServiceError
from sitetools.tools.models import Integration, Tool
from sitetools.tools.service import visible_integration

__all__ = ["Endpoint", "admit", "request_token"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    url: str
    integration_id: str | None = None

    @classmethod
    def account(cls, base_url: str) -> Endpoint:
        return cls(account_mcp_url(base_url))

    @classmethod
    def integration(cls, base_url: str, integration_id: str) -> Endpoint:
        return cls(integration_mcp_url(base_url, integration_id), integration_id)


def request_token(request: Request) -> str | None:
    """The bearer token of ``Authorization`` only: a session cookie never counts on MCP."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ServiceError("unauthorized")
    return token.strip()


@dataclass(frozen=True, slots=True)
class Admitted:
    caller: Caller
    integration: Integration | None = None
    tools: tuple[Tool, ...] = ()


async def admit(ctx: Ctx, token: str | None, endpoint: Endpoint) -> Admitted:
    if token is None:
        raise ServiceError("unauthorized")
    caller = await resolve_caller(ctx, token)
    if caller.kind == "session":
        raise ServiceError("unauthorized", reason="session_not_accepted_on_mcp")
    if caller.kind == "oauth" and caller.audience != endpoint.url:
        raise ServiceError("unauthorized", reason="token_audience")
    if endpoint.integration_id is None:
        if caller.kind == "integration_key":
            raise ServiceError("forbidden", reason="integration_key_on_account_endpoint")
        return Admitted(caller)
    if caller.integration_id is not None and caller.integration_id != endpoint.integration_id:
        raise ServiceError("forbidden", reason="other_integration")
    integration, tools = await visible_integration(ctx, caller, endpoint.integration_id)
    if not integration.mcp_hosted:
        raise ServiceError("mcp_not_hosted")
    return Admitted(caller, integration, tuple(tools))
