"""API key operations (spec: "Endpoints" - "API keys")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sitetools.auth.permissions import CallerKind, Permission
from sitetools.keys import service
from sitetools.keys.schemas import (
    ApiKeyPage,
    ApiKeyWithSecret,
    CreateKeyIn,
    DashboardDelivery,
    KeyPath,
    ListKeysQuery,
    RotateKeyIn,
)
from sitetools.operations.registry import Operation, OpRequest, Reply

__all__ = ["OPERATIONS"]

Req = OpRequest[Any, Any, Any]
_CALLERS: tuple[CallerKind, ...] = ("session", "oauth", "api_key")


async def _list(req: Req) -> BaseModel:
    return await service.list_keys(req.ctx, req.user, req.query.cursor, req.query.limit)


async def _create(req: Req) -> BaseModel | Reply:
    result = await service.create_key(req.ctx, req.user, req.body)
    if isinstance(result, DashboardDelivery):
        return Reply(200, result)
    return result


async def _rotate(req: Req) -> BaseModel:
    deliver = req.body.deliver if req.body is not None else None
    return await service.rotate_key(req.ctx, req.user, req.path.id, deliver)


async def _revoke(req: Req) -> None:
    await service.revoke_key(req.ctx, req.user, req.path.id)


OPERATIONS = [
    Operation(
        operation_id="api_keys.list",
        method="GET",
        path="/v1/api-keys",
        summary="The caller's API keys, newest first (never a secret)",
        effect="read",
        callers=_CALLERS,
        permission="identity",
        key_permission=Permission.API_KEYS_MANAGE,
        handler=_list,
        query_model=ListKeysQuery,
        responses={200: ApiKeyPage},
    ),
    Operation(
        operation_id="api_keys.create",
        method="POST",
        path="/v1/api-keys",
        summary="Create an API key (secret shown once), or a Dashboard link to finish it",
        description="Needs a sign-in within the last five minutes unless `deliver` is "
        "`dashboard`. `purpose: connect` keeps at most three unused connect keys per "
        "integration or account.",
        effect="write",
        callers=_CALLERS,
        permission="identity",
        key_permission=Permission.API_KEYS_MANAGE,
        handler=_create,
        body_model=CreateKeyIn,
        responses={201: ApiKeyWithSecret, 200: DashboardDelivery},
        errors=(
            "permission_not_held",
            "FreshAuthenticationRequired",
            "not_found",
            "api_key_limit_reached",
            "api_key_create_throttled",
        ),
    ),
    Operation(
        operation_id="api_keys.rotate",
        method="POST",
        path="/v1/api-keys/{id}/rotate",
        summary="Replace a key's secret; same ID, permissions and expiry",
        description="The old secret stops working at once. With `deliver: dashboard` nothing "
        "changes until the person finishes on the Dashboard.",
        effect="write",
        callers=_CALLERS,
        permission="identity",
        key_permission=Permission.API_KEYS_MANAGE,
        handler=_rotate,
        path_model=KeyPath,
        body_model=RotateKeyIn,
        body_required=False,
        responses={200: (ApiKeyWithSecret, DashboardDelivery)},
        errors=("permission_not_held", "FreshAuthenticationRequired", "not_found"),
    ),
    Operation(
        operation_id="api_keys.revoke",
        method="DELETE",
        path="/v1/api-keys/{id}",
        summary="Revoke a key; requests with it are refused from now on",
        effect="destructive",
        callers=_CALLERS,
        permission="identity",
        key_permission=Permission.API_KEYS_MANAGE,
        handler=_revoke,
        path_model=KeyPath,
        responses={204: None},
        errors=("permission_not_held", "not_found"),
    ),
]
