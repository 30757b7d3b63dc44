"""Quota operations (spec: "Quota and billing")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sitetools.auth.permissions import Permission
from sitetools.operations.registry import Operation, OpRequest
from sitetools.quota import service
from sitetools.quota.schemas import QuotaOut

__all__ = ["OPERATIONS"]


async def _get(req: OpRequest[Any, Any, Any]) -> BaseModel:
    return await service.get_quota(req.ctx, req.user)


OPERATIONS = [
    Operation(
        operation_id="quota.get",
        method="GET",
        path="/v1/quota",
        summary="Tool calls today and new integrations this month: limit, used, reserved",
        effect="read",
        callers=("session", "oauth", "api_key"),
        permission=Permission.USAGE_READ,
        handler=_get,
        responses={200: QuotaOut},
    ),
]
