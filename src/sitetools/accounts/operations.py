"""Account operations (spec: "Endpoints" - "Account")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sitetools.accounts import service
from sitetools.accounts.schemas import (
    AccountOut,
    AccountUserOut,
    PreferencesIn,
    PreferencesOut,
    SetNameIn,
)
from sitetools.operations.registry import Operation, OpRequest

__all__ = ["OPERATIONS"]

Req = OpRequest[Any, Any, Any]


async def _get(req: Req) -> BaseModel:
    return await service.get_account(req.ctx, req.user)


async def _set_name(req: Req) -> BaseModel:
    return await service.set_name(req.ctx, req.user, req.body)


async def _get_preferences(req: Req) -> BaseModel:
    return await service.get_preferences(req.ctx, req.user)


async def _update_preferences(req: Req) -> BaseModel:
    return await service.update_preferences(req.ctx, req.user, req.body or PreferencesIn())


OPERATIONS = [
    Operation(
        operation_id="account.get",
        method="GET",
        path="/v1/account",
        summary="The account: type, plan, the caller's role and permissions, features",
        effect="read",
        callers=("session", "oauth", "api_key"),
        permission="identity",
        handler=_get,
        responses={200: AccountOut},
    ),
    Operation(
        operation_id="account.set_name",
        method="PUT",
        path="/v1/account/name",
        summary="Change the caller's own first and last name",
        description="Repeating the same call answers the same. `last_name` omitted, null or "
        "blank means none.",
        effect="write",
        callers=("session", "oauth", "api_key"),
        permission="identity",
        handler=_set_name,
        body_model=SetNameIn,
        responses={200: AccountUserOut},
    ),
    Operation(
        operation_id="account.get_preferences",
        method="GET",
        path="/v1/account/preferences",
        summary="Where questions of the caller's jobs go, and build emails",
        effect="read",
        callers=("session", "oauth", "api_key", "integration_key"),
        permission="identity",
        handler=_get_preferences,
        responses={200: PreferencesOut},
    ),
    Operation(
        operation_id="account.update_preferences",
        method="PATCH",
        path="/v1/account/preferences",
        summary="Change the account default, this connection's override, or build emails",
        description="Omitted fields keep their value. `connection.question_delivery` null "
        "returns to the default; `connection` is refused from a Dashboard session. An "
        "integration key may change only its `connection`.",
        effect="write",
        callers=("session", "oauth", "api_key", "integration_key"),
        permission="identity",
        handler=_update_preferences,
        body_model=PreferencesIn,
        body_required=False,
        responses={200: PreferencesOut},
    ),
]
