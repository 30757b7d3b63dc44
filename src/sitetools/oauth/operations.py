"""Connected apps (tag ``connected_apps``; decisions: "MCP")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sitetools.auth.permissions import CallerKind
from sitetools.oauth import service
from sitetools.oauth.schemas import ConnectedAppPage, ConnectedAppPath
from sitetools.operations.registry import Operation, OpRequest

__all__ = ["OPERATIONS"]

Req = OpRequest[Any, Any, Any]
_CALLERS: tuple[CallerKind, ...] = ("session", "oauth", "api_key")


async def _list(req: Req) -> BaseModel:
    return ConnectedAppPage(data=await service.connected_apps(req.ctx, req.user))


async def _delete(req: Req) -> None:
    await service.disconnect(req.ctx, req.user, req.path.id)


OPERATIONS = [
    Operation(
        operation_id="connected_apps.list",
        method="GET",
        path="/v1/connected-apps",
        summary="The OAuth apps the member connected (approved on the consent page)",
        description="One entry per app with a live grant: the MCP endpoints its tokens are "
        "bound to and the permissions approved. Tokens never appear.",
        effect="read",
        callers=_CALLERS,
        permission="identity",
        handler=_list,
        responses={200: ConnectedAppPage},
    ),
    Operation(
        operation_id="connected_apps.delete",
        method="DELETE",
        path="/v1/connected-apps/{id}",
        summary="Disconnect an app: revoke every token it holds for the member",
        description="Its access and refresh tokens stop working at once; connecting again "
        "needs a new consent.",
        effect="destructive",
        callers=_CALLERS,
        permission="identity",
        handler=_delete,
        path_model=ConnectedAppPath,
        responses={204: None},
        errors=("not_found",),
    ),
]
