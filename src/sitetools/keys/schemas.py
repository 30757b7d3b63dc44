"""Wire models of API keys (spec: "ApiKey", "API keys"; decisions: "ApiKey")."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sitetools.auth.permissions import KEY_PERMISSIONS
from sitetools.core.pagination import PageQuery
from sitetools.core.text import SPACE_CLASS

__all__ = [
    "ApiKeyOut",
    "ApiKeyPage",
    "ApiKeyWithSecret",
    "CreateKeyIn",
    "DashboardDelivery",
    "KeyPath",
    "KeyPermission",
    "ListKeysQuery",
    "RotateKeyIn",
]

KeyPermission = StrEnum(  # type: ignore[misc]
    "KeyPermission", {p.name: p.value for p in sorted(KEY_PERMISSIONS, key=lambda p: p.value)}
)


class ApiKeyOut(BaseModel):
    id: str
    name: str
    permissions: list[str]
    integration_id: str | None
    purpose: Literal["connect"] | None
    secret_hint: str
    created_at: datetime
    expires_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class ApiKeyWithSecret(ApiKeyOut):
    secret: str = Field(description="Shown once; only a digest is kept.")


class DashboardDelivery(BaseModel):
    dashboard_url: str
    expires_at: datetime


class ApiKeyPage(BaseModel):
    data: list[ApiKeyOut]
    next_cursor: str | None


class ListKeysQuery(PageQuery):
    pass


class KeyPath(BaseModel):
    id: str


# No leading or trailing space (core/text.py's set, plus U+0085), no NUL, no line break.
KEY_NAME_PATTERN = rf"^[^{SPACE_CLASS}\x85\x00](?:[^\x00\n]*[^{SPACE_CLASS}\x85\x00])?$"


class CreateKeyIn(BaseModel):
    """spec: "API keys" create body; no other fields."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, pattern=KEY_NAME_PATTERN)
    permissions: list[KeyPermission] | None = Field(default=None, min_length=1, max_length=16)
    integration_id: str | None = Field(default=None, pattern=r"^int_[0-9a-f]{32}$")
    expires_in_days: int = Field(default=90, ge=1, le=365)
    deliver: Literal["dashboard"] | None = None
    purpose: Literal["connect"] | None = None


class RotateKeyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    deliver: Literal["dashboard"] | None = None
