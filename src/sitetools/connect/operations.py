"""Device sign-in over REST (tag ``connect``; decisions: "MCP" - device sign-in)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sitetools.accounts.sessions import network_of
from sitetools.auth.permissions import CallerKind
from sitetools.connect import service
from sitetools.connect.schemas import SignInIn, SignInOut, SignInPath, SignInPoll
from sitetools.operations.registry import Operation, OpRequest

__all__ = ["OPERATIONS"]

Req = OpRequest[Any, Any, Any]
_CALLERS: tuple[CallerKind, ...] = ("session", "oauth", "api_key", "integration_key")


async def _start(req: Req) -> BaseModel:
    host = req.request.client.host if req.request.client else None
    name = req.body.client_name if req.body is not None else None
    return await service.start(req.ctx, network_of(host), name)


async def _poll(req: Req) -> BaseModel:
    return await service.poll(req.ctx, req.path.id)


OPERATIONS = [
    Operation(
        operation_id="connect.sign_in",
        method="POST",
        path="/v1/sign-in",
        summary="Start a device sign-in: a code the person approves on the Dashboard",
        description="No credentials needed. Show the `user_code` and `verification_url` to the "
        "person; they sign in, check the code and approve what the key will hold. Then poll "
        "`POST /v1/sign-in/{id}/poll` every `interval` seconds: the first poll after approval "
        "returns the new API key's secret, once. Codes last 10 minutes; a network starts a "
        "limited number per day (`sign_in_limit_reached`).",
        effect="write",
        callers=_CALLERS,
        permission="identity",
        handler=_start,
        body_model=SignInIn,
        body_required=False,
        responses={201: SignInOut},
        errors=("sign_in_limit_reached", "sign_in_unavailable"),
        public=True,
    ),
    Operation(
        operation_id="connect.poll_sign_in",
        method="POST",
        path="/v1/sign-in/{id}/poll",
        summary="Poll a device sign-in: pending, or approved with the API key (once)",
        description="`access_denied` when the person declined; `expired_token` when the code "
        "expired or its key was already handed out.",
        effect="write",
        callers=_CALLERS,
        permission="identity",
        handler=_poll,
        path_model=SignInPath,
        responses={200: SignInPoll},
        errors=("not_found", "access_denied", "expired_token"),
        public=True,
    ),
]
