"""Turn a bearer secret into a Caller, re-checking everything on every request.

Keys and sessions are looked up by HMAC digest; the effective permissions are recomputed from
the member's current role each time, so a revoked key, an expired session, a member who left or
a role that lost a permission takes effect on the next request.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, select, update

from sitetools.accounts.models import Account, DashboardSession, Membership
from sitetools.auth.caller import Caller
from sitetools.auth.permissions import (
    INTEGRATION_KEY_PERMISSIONS,
    ROLE_PERMISSIONS,
    CallerKind,
    Permission,
    Role,
)
from sitetools.auth.resources import integration_of_resource
from sitetools.core.context import Ctx
from sitetools.core.errors import ServiceError
from sitetools.keys.models import ApiKey
from sitetools.oauth.models import OAuthGrant, OAuthToken

__all__ = ["API_KEY_PREFIX", "OAUTH_ACCESS_PREFIX", "SESSION_PREFIX", "resolve_caller"]

API_KEY_PREFIX = "svc_"
SESSION_PREFIX = "sst_"
OAUTH_ACCESS_PREFIX = "soa_"
# spec: "last_used_at is kept (at most one write per key per minute)"
_TOUCH_EVERY = timedelta(minutes=1)


def _check_membership(ended_at: datetime | None, account_status: str) -> None:
    if ended_at is not None:
        raise ServiceError("organization_access_removed")
    if account_status == "deletion_pending":
        raise ServiceError("account_deletion_pending")


def _permissions(role: str, own: list[str] | None) -> frozenset[Permission]:
    held = ROLE_PERMISSIONS[Role(role)]
    if own is None:
        return held
    return held & frozenset(_BY_VALUE[value] for value in own if value in _BY_VALUE)


_BY_VALUE = {p.value: p for p in Permission}


async def resolve_caller(ctx: Ctx, token: str) -> Caller:
    """The Caller for ``token``, or ServiceError ``unauthorized`` (and friends)."""
    if token.startswith(API_KEY_PREFIX):
        return await _resolve_api_key(ctx, token)
    if token.startswith(SESSION_PREFIX):
        return await _resolve_session(ctx, token)
    if token.startswith(OAUTH_ACCESS_PREFIX):
        return await _resolve_oauth(ctx, token)
    raise ServiceError("unauthorized")


# The member and account columns every credential lookup ends with (see ``_member_caller``).
_MEMBER_COLUMNS = (
    Membership.id,
    Membership.user_id,
    Membership.role,
    Membership.ended_at,
    Account.id,
    Account.type,
    Account.plan,
    Account.status,
    Account.name,
    Account.created_at,
)


def _member_caller(
    member: tuple[Any, ...],
    *,
    kind: CallerKind,
    own: list[str] | None,
    credential_id: str,
    client_id: str,
    integration_id: str | None = None,
    audience: str | None = None,
) -> Caller:
    """The Caller of a key or token from its ``_MEMBER_COLUMNS``: membership checked, its own
    permissions ∩ the role's (∩ the integration-key set when bound to one integration)."""
    (membership_id, user_id, role, ended_at, account_id, account_type, plan, status) = member[:8]
    account_name, account_created_at = member[8:10]
    _check_membership(ended_at, status)
    permissions = _permissions(role, own)
    if integration_id is not None:
        permissions &= INTEGRATION_KEY_PERMISSIONS
    return Caller(
        kind=kind,
        account_id=account_id,
        account_type=account_type,
        plan=plan,
        account_name=account_name,
        account_created_at=account_created_at,
        user_id=user_id,
        membership_id=membership_id,
        role=Role(role),
        permissions=permissions,
        credential_id=credential_id,
        client_id=client_id,
        integration_id=integration_id,
        audience=audience,
    )


# Built once: a statement built per request costs more than running it.
_KEY_LOOKUP = (
    select(
        ApiKey.id,
        ApiKey.permissions,
        ApiKey.integration_id,
        ApiKey.expires_at,
        ApiKey.revoked_at,
        ApiKey.last_used_at,
        *_MEMBER_COLUMNS,
    )
    .join(Membership, Membership.id == ApiKey.membership_id)
    .join(Account, Account.id == ApiKey.account_id)
    .where(ApiKey.token_digest == bindparam("digest"))
)


async def _resolve_api_key(ctx: Ctx, token: str) -> Caller:
    now = ctx.now()
    rows = await ctx.read(_KEY_LOOKUP, {"digest": ctx.keyring.token_digest(token)})
    if not rows:
        raise ServiceError("unauthorized")
    row: tuple[Any, ...] = tuple(rows[0])
    (key_id, own, integration_id, expires_at, revoked_at, last_used_at) = row[:6]
    if revoked_at is not None or expires_at <= now:
        raise ServiceError("unauthorized")
    caller = _member_caller(
        row[6:],
        kind="integration_key" if integration_id else "api_key",
        own=own,
        credential_id=key_id,
        client_id=key_id,
        integration_id=integration_id,
    )
    if last_used_at is None or now - last_used_at >= _TOUCH_EVERY:
        await ctx.db.execute(
            update(ApiKey)
            .where(ApiKey.id == key_id)
            .where((ApiKey.last_used_at.is_(None)) | (ApiKey.last_used_at <= now - _TOUCH_EVERY))
            .values(last_used_at=now)
        )
    return caller


async def _resolve_session(ctx: Ctx, token: str) -> Caller:
    now = ctx.now()
    row = (
        await ctx.db.execute(
            select(DashboardSession, Membership, Account)
            .join(Membership, Membership.id == DashboardSession.membership_id)
            .join(Account, Account.id == Membership.account_id)
            .where(DashboardSession.token_digest == ctx.keyring.token_digest(token))
        )
    ).first()
    if row is None:
        raise ServiceError("unauthorized")
    session, membership, account = row
    idle = timedelta(seconds=ctx.settings.session_idle_seconds)
    if (
        session.revoked_at is not None
        or session.expires_at <= now
        or session.last_seen_at + idle <= now
    ):
        raise ServiceError("unauthorized")
    _check_membership(membership.ended_at, account.status)
    if now - session.last_seen_at >= _TOUCH_EVERY:
        session.last_seen_at = now
    return Caller(
        kind="session",
        account_id=account.id,
        account_type=account.type,
        plan=account.plan,
        account_name=account.name,
        account_created_at=account.created_at,
        user_id=membership.user_id,
        membership_id=membership.id,
        role=Role(membership.role),
        permissions=_permissions(membership.role, None),
        credential_id=session.id,
        client_id="dashboard",
        signed_in_at=session.signed_in_at,
    )


_OAUTH_LOOKUP = (
    select(
        OAuthToken.kind,
        OAuthToken.expires_at,
        OAuthToken.revoked_at,
        OAuthGrant.id,
        OAuthGrant.client_id,
        OAuthGrant.resource,
        OAuthGrant.permissions,
        OAuthGrant.revoked_at,
        OAuthGrant.last_used_at,
        *_MEMBER_COLUMNS,
    )
    .join(OAuthGrant, OAuthGrant.id == OAuthToken.grant_id)
    .join(Membership, Membership.id == OAuthGrant.membership_id)
    .join(Account, Account.id == OAuthGrant.account_id)
    .where(OAuthToken.digest == bindparam("digest"))
)


async def _resolve_oauth(ctx: Ctx, token: str) -> Caller:
    """An OAuth access token: its grant's permissions ∩ the member's current role; an
    integration endpoint's token also no more than an integration key."""
    now = ctx.now()
    rows = await ctx.read(_OAUTH_LOOKUP, {"digest": ctx.keyring.token_digest(token)})
    if not rows:
        raise ServiceError("unauthorized")
    row: tuple[Any, ...] = tuple(rows[0])
    (kind, expires_at, token_revoked, grant_id, client_id, resource, own) = row[:7]
    grant_revoked, last_used_at = row[7:9]
    if kind != "access" or token_revoked is not None or grant_revoked is not None:
        raise ServiceError("unauthorized")
    if expires_at <= now:
        raise ServiceError("unauthorized")
    caller = _member_caller(
        row[9:],
        kind="oauth",
        own=own,
        credential_id=grant_id,
        client_id=client_id,
        integration_id=integration_of_resource(ctx.settings.base_url, resource),
        audience=resource,
    )
    if last_used_at is None or now - last_used_at >= _TOUCH_EVERY:
        await ctx.db.execute(
            update(OAuthGrant).where(OAuthGrant.id == grant_id).values(last_used_at=now)
        )
    return caller
