"""Permissions, roles and the role → permission table (decisions: "Roles and permissions")."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

__all__ = [
    "INTEGRATION_KEY_PERMISSIONS",
    "KEY_PERMISSIONS",
    "NAMED_ONLY_PERMISSIONS",
    "ROLE_PERMISSIONS",
    "CallerKind",
    "Permission",
    "Role",
]


class Permission(StrEnum):
    TOOLS_READ = "tools:read"
    USAGE_READ = "usage:read"
    TOOLS_BUILD = "tools:build"
    RUNS_CREATE = "runs:create"
    JOBS_READ = "jobs:read"
    JOBS_CANCEL = "jobs:cancel"
    LOGINS_READ = "logins:read"
    LOGINS_MANAGE = "logins:manage"
    API_KEYS_MANAGE = "api_keys:manage"
    BILLING_MANAGE = "billing:manage"
    TEAM_MANAGE = "team:manage"
    CREDENTIALS_MANAGE = "credentials:manage"


class Role(StrEnum):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"


CallerKind = Literal["session", "oauth", "api_key", "integration_key"]

_EVERY_MEMBER = frozenset(
    {
        Permission.TOOLS_READ,
        Permission.USAGE_READ,
        Permission.TOOLS_BUILD,
        Permission.RUNS_CREATE,
        Permission.JOBS_READ,
        Permission.JOBS_CANCEL,
        Permission.LOGINS_READ,
        Permission.LOGINS_MANAGE,
        Permission.API_KEYS_MANAGE,
        Permission.CREDENTIALS_MANAGE,
    }
)

ROLE_PERMISSIONS: dict[Role, frozenset[Permission]] = {
    Role.OWNER: _EVERY_MEMBER | {Permission.TEAM_MANAGE, Permission.BILLING_MANAGE},
    Role.ADMIN: _EVERY_MEMBER | {Permission.TEAM_MANAGE},
    Role.MEMBER: _EVERY_MEMBER,
}

# spec: "ApiKey" - the permission values an API key may carry.
KEY_PERMISSIONS: frozenset[Permission] = frozenset(Permission) - {Permission.CREDENTIALS_MANAGE}

# spec: "API keys" create body - these three only when named.
NAMED_ONLY_PERMISSIONS = frozenset(
    {Permission.API_KEYS_MANAGE, Permission.BILLING_MANAGE, Permission.TEAM_MANAGE}
)

# spec: "Authentication" 6 - what an integration key can ever carry.
INTEGRATION_KEY_PERMISSIONS = frozenset(
    {Permission.TOOLS_READ, Permission.RUNS_CREATE, Permission.JOBS_READ, Permission.JOBS_CANCEL}
)
