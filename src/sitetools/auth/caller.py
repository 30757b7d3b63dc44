"""The Caller: who is making a request, for which account, with which effective permissions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sitetools.auth.permissions import CallerKind, Permission, Role
from sitetools.core.errors import ServiceError

__all__ = ["Caller"]


@dataclass(frozen=True, slots=True)
class Caller:
    kind: CallerKind
    account_id: str
    account_type: str
    plan: str | None
    account_name: str
    account_created_at: datetime
    user_id: str
    membership_id: str
    role: Role
    # Effective: the credential's own permissions ∩ the member's current role.
    permissions: frozenset[Permission]
    credential_id: str
    # The client that starts and may read jobs: "dashboard", the API key's ID or the OAuth app's.
    client_id: str
    integration_id: str | None = None
    signed_in_at: datetime | None = None
    # An OAuth access token's resource (audience): the exact MCP endpoint URL it was issued for.
    audience: str | None = None

    def has(self, permission: Permission) -> bool:
        return permission in self.permissions

    def require(self, permission: Permission) -> None:
        if permission not in self.permissions:
            raise ServiceError("forbidden", permission=permission.value)

    def require_fresh_sign_in(self, now: datetime, window_seconds: int) -> None:
        """spec: "Authentication" 7 - a sign-in within the last five minutes."""
        if self.signed_in_at is None or now - self.signed_in_at > timedelta(seconds=window_seconds):
            raise ServiceError("FreshAuthenticationRequired")
