"""Rules of API keys (spec: "API keys" rules 1-8 and "API key lifecycle")."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, bindparam, func, or_, select

from sitetools.accounts.service import lock_membership
from sitetools.auth.caller import Caller
from sitetools.auth.permissions import (
    INTEGRATION_KEY_PERMISSIONS,
    NAMED_ONLY_PERMISSIONS,
    ROLE_PERMISSIONS,
    Permission,
    Role,
)
from sitetools.auth.resolve import API_KEY_PREFIX
from sitetools.core.context import Ctx
from sitetools.core.crypto import new_secret
from sitetools.core.errors import ServiceError
from sitetools.core.ids import new_id
from sitetools.core.nonces import spend_nonce
from sitetools.core.pagination import decode_cursor, encode_cursor
from sitetools.jobs import service as jobs
from sitetools.keys.models import ApiKey
from sitetools.keys.schemas import (
    ApiKeyOut,
    ApiKeyPage,
    ApiKeyWithSecret,
    CreateKeyIn,
    DashboardDelivery,
)
from sitetools.tools.integrations import require_visible_integration

__all__ = [
    "KEYS_PER_MEMBER",
    "complete_dashboard_intent",
    "create_key",
    "default_permissions",
    "issue_key",
    "key_out",
    "list_keys",
    "revoke_key",
    "rotate_key",
]

KEYS_PER_MEMBER = 50  # spec: "Limits" - API keys per member
CONNECT_KEYS_PER_HOUR = 20
UNUSED_CONNECT_KEYS_KEPT = 3
REVOKED_VISIBLE_FOR = timedelta(days=30)
_INTENT = "api-key-intent"


def _out(key: Any) -> ApiKeyOut:
    """An ApiKey record from a row or an ORM object (the same attribute names)."""
    return ApiKeyOut(
        id=key.id,
        name=key.name,
        permissions=sorted(key.permissions),
        integration_id=key.integration_id,
        purpose="connect" if key.purpose == "connect" else None,
        secret_hint=key.secret_hint,
        created_at=key.created_at,
        expires_at=key.expires_at,
        last_used_at=key.last_used_at,
        revoked_at=key.revoked_at,
    )


def _hint(secret: str) -> str:
    return f"{API_KEY_PREFIX}…{secret[-4:]}"


def _usable(now: datetime) -> Any:
    return and_(ApiKey.revoked_at.is_(None), ApiKey.expires_at > now)


def _list_statement(after_cursor: bool) -> Any:
    keys = ApiKey.__table__.c
    query = select(ApiKey.__table__).where(
        keys.membership_id == bindparam("membership_id"),
        or_(keys.revoked_at.is_(None), keys.revoked_at > bindparam("revoked_after")),
    )
    if after_cursor:
        query = query.where(
            or_(
                keys.created_at < bindparam("after_at"),
                and_(keys.created_at == bindparam("after_at"), keys.id < bindparam("after_id")),
            )
        )
    return query.order_by(keys.created_at.desc(), keys.id.desc()).limit(bindparam("limit"))


# Built once (a statement built per request costs more than running it).
_FIRST_PAGE, _LATER_PAGE = _list_statement(False), _list_statement(True)


async def list_keys(ctx: Ctx, caller: Caller, cursor: str | None, limit: int) -> ApiKeyPage:
    """The member's keys, newest first; revoked ones stay visible for 30 days."""
    params: dict[str, Any] = {
        "membership_id": caller.membership_id,
        "revoked_after": ctx.now() - REVOKED_VISIBLE_FOR,
        "limit": limit + 1,
    }
    if cursor is not None:
        after = decode_cursor(cursor)
        params.update(after_at=after.created_at, after_id=after.id)
    rows = await ctx.read(_LATER_PAGE if cursor is not None else _FIRST_PAGE, params)
    page, more = rows[:limit], len(rows) > limit
    next_cursor = encode_cursor(page[-1].created_at, page[-1].id) if more else None
    return ApiKeyPage(data=[_out(k) for k in page], next_cursor=next_cursor)


def _requested_permissions(caller_holds: frozenset[Permission], data: CreateKeyIn) -> list[str]:
    """spec: create body - default all the caller holds except the three named-only ones."""
    if data.permissions is not None:
        wanted = {Permission(p.value) for p in data.permissions}
        if data.integration_id is not None:
            outside = sorted(p.value for p in wanted - INTEGRATION_KEY_PERMISSIONS)
            if outside:
                raise ServiceError(
                    "invalid_request",
                    issues=[
                        {
                            "path": "/body/permissions",
                            "message": "An integration key carries only tools:read, "
                            "runs:create, jobs:read and jobs:cancel.",
                        }
                    ],
                )
        missing = sorted(p.value for p in wanted - caller_holds)
        if missing:
            raise ServiceError("permission_not_held", permissions=missing)
        return sorted(p.value for p in wanted)
    return default_permissions(caller_holds, data.integration_id)


def default_permissions(
    caller_holds: frozenset[Permission], integration_id: str | None
) -> list[str]:
    """A key's permissions when none are named: all the caller holds except the named-only."""
    allowed = (
        INTEGRATION_KEY_PERMISSIONS
        if integration_id is not None
        else frozenset(Permission) - NAMED_ONLY_PERMISSIONS - {Permission.CREDENTIALS_MANAGE}
    )
    chosen = sorted(p.value for p in caller_holds & allowed)
    if not chosen:
        raise ServiceError("permission_not_held", permissions=sorted(p.value for p in allowed))
    return chosen


def _intent_url(ctx: Ctx, path: str, payload: dict[str, Any]) -> DashboardDelivery:
    expires = ctx.now() + timedelta(seconds=ctx.settings.dashboard_intent_seconds)
    token = ctx.keyring.sign(_INTENT, dict(payload, n=secrets.token_hex(8)), expires)
    return DashboardDelivery(
        dashboard_url=f"{ctx.settings.base_url}{path}?intent={token}", expires_at=expires
    )


async def create_key(
    ctx: Ctx, caller: Caller, data: CreateKeyIn
) -> ApiKeyWithSecret | DashboardDelivery:
    """spec: "API keys" rules 1, 2, 3, 7 and the key limit."""
    if data.integration_id is not None:
        await require_visible_integration(ctx.db, caller.account_id, data.integration_id)
    permissions = _requested_permissions(caller.permissions, data)
    if data.deliver == "dashboard":
        return _intent_url(
            ctx,
            "/dashboard/api-keys/new",
            {
                "a": "create",
                "m": caller.membership_id,
                "name": data.name,
                "p": permissions,
                "i": data.integration_id,
                "d": data.expires_in_days,
                "c": data.purpose,
            },
        )
    caller.require_fresh_sign_in(ctx.now(), ctx.settings.fresh_sign_in_seconds)
    return await issue_key(
        ctx,
        account_id=caller.account_id,
        membership_id=caller.membership_id,
        name=data.name,
        permissions=permissions,
        integration_id=data.integration_id,
        expires_in_days=data.expires_in_days,
        purpose=data.purpose,
    )


async def issue_key(
    ctx: Ctx,
    *,
    account_id: str,
    membership_id: str,
    name: str,
    permissions: list[str],
    integration_id: str | None,
    expires_in_days: int,
    purpose: str | None,
) -> ApiKeyWithSecret:
    """Create the key row and return its secret (the only time it exists in clear)."""
    now = ctx.now()
    await lock_membership(ctx, membership_id)
    if purpose == "connect":
        made = await ctx.db.scalar(
            select(func.count()).where(
                ApiKey.membership_id == membership_id,
                ApiKey.purpose == "connect",
                ApiKey.created_at > now - timedelta(hours=1),
            )
        )
        if (made or 0) >= CONNECT_KEYS_PER_HOUR:
            raise ServiceError("api_key_create_throttled")
    held = await ctx.db.scalar(
        select(func.count()).where(ApiKey.membership_id == membership_id, _usable(now))
    )
    if (held or 0) >= KEYS_PER_MEMBER:
        oldest = None
        if purpose == "connect":
            oldest = await ctx.db.scalar(_unused_connect(membership_id, now, None, any_scope=True))
        if oldest is None:
            raise ServiceError("api_key_limit_reached", limit=KEYS_PER_MEMBER)
        oldest.revoked_at = now
    secret = new_secret(API_KEY_PREFIX)
    key = ApiKey(
        id=new_id("key"),
        token_digest=ctx.keyring.token_digest(secret),
        account_id=account_id,
        membership_id=membership_id,
        name=name,
        permissions=permissions,
        integration_id=integration_id,
        purpose=purpose,
        secret_hint=_hint(secret),
        created_at=now,
        expires_at=now + timedelta(days=expires_in_days),
    )
    ctx.db.add(key)
    await ctx.db.flush()
    if purpose == "connect":
        await _trim_unused_connect_keys(ctx, membership_id, integration_id, now)
    return ApiKeyWithSecret(**_out(key).model_dump(), secret=secret)


def _unused_connect(
    membership_id: str, now: datetime, integration_id: str | None, *, any_scope: bool = False
) -> Any:
    query = select(ApiKey).where(
        ApiKey.membership_id == membership_id,
        ApiKey.purpose == "connect",
        ApiKey.last_used_at.is_(None),
        _usable(now),
    )
    if not any_scope:
        query = query.where(
            ApiKey.integration_id.is_(None)
            if integration_id is None
            else ApiKey.integration_id == integration_id
        )
    return query.order_by(ApiKey.created_at, ApiKey.id).limit(1 if any_scope else None)


async def _trim_unused_connect_keys(
    ctx: Ctx, membership_id: str, integration_id: str | None, now: datetime
) -> None:
    """spec: rule 3 - keep at most three unused connect keys per integration (or account)."""
    unused = list(await ctx.db.scalars(_unused_connect(membership_id, now, integration_id)))
    for key in unused[: max(0, len(unused) - UNUSED_CONNECT_KEYS_KEPT)]:
        key.revoked_at = now
    await ctx.db.flush()


async def key_out(ctx: Ctx, key_id: str) -> ApiKeyOut:
    key = await ctx.db.get(ApiKey, key_id)
    if key is None:
        raise ServiceError("not_found", resource="api_key")
    return _out(key)


async def _own_key(ctx: Ctx, caller: Caller, key_id: str) -> ApiKey:
    key = await ctx.db.scalar(
        select(ApiKey).where(ApiKey.id == key_id, ApiKey.membership_id == caller.membership_id)
    )
    if key is None:
        raise ServiceError("not_found", resource="api_key")
    return key


async def rotate_key(
    ctx: Ctx, caller: Caller, key_id: str, deliver: str | None
) -> ApiKeyWithSecret | DashboardDelivery:
    """spec: rule 4 - same ID, permissions and expiry; the old secret stops at once."""
    key = await _own_key(ctx, caller, key_id)
    now = ctx.now()
    if key.revoked_at is not None or key.expires_at <= now:
        raise ServiceError("not_found", resource="api_key")
    missing = sorted(set(key.permissions) - {p.value for p in caller.permissions})
    if missing:
        raise ServiceError("permission_not_held", permissions=missing)
    if deliver == "dashboard":
        return _intent_url(
            ctx,
            f"/dashboard/api-keys/{key.id}/rotate",
            {"a": "rotate", "m": caller.membership_id, "k": key.id},
        )
    caller.require_fresh_sign_in(now, ctx.settings.fresh_sign_in_seconds)
    return await _new_secret(ctx, key)


async def _new_secret(ctx: Ctx, key: ApiKey) -> ApiKeyWithSecret:
    secret = new_secret(API_KEY_PREFIX)
    key.token_digest = ctx.keyring.token_digest(secret)
    key.secret_hint = _hint(secret)
    await ctx.db.flush()
    return ApiKeyWithSecret(**_out(key).model_dump(), secret=secret)


async def revoke_key(ctx: Ctx, caller: Caller, key_id: str) -> None:
    """spec: rule 5 - a key may revoke itself or a key within its own permissions."""
    key = await _own_key(ctx, caller, key_id)
    if caller.kind != "session" and key.id != caller.credential_id:
        beyond = set(key.permissions) - {p.value for p in caller.permissions}
        if beyond:
            raise ServiceError("forbidden", reason="key_beyond_own_permissions")
    if key.revoked_at is None:
        key.revoked_at = ctx.now()
        await ctx.db.flush()
        # spec: "API key lifecycle" - revoke: jobs it started stop.
        await jobs.stop_jobs_of_client(ctx, key.id)


@dataclass(frozen=True, slots=True)
class _Intent:
    action: str
    membership_id: str
    payload: dict[str, Any]


def _read_intent(ctx: Ctx, token: str) -> _Intent:
    payload = ctx.keyring.verify(_INTENT, token, ctx.now())
    if payload is None:
        raise ServiceError("not_found", resource="dashboard_intent")
    return _Intent(str(payload["a"]), str(payload["m"]), payload)


async def complete_dashboard_intent(ctx: Ctx, caller: Caller, token: str) -> ApiKeyWithSecret:
    """The signed-in person finishes a ``deliver: dashboard`` create or rotate."""
    if caller.kind != "session":
        raise ServiceError("forbidden", reason="dashboard_only")
    intent = _read_intent(ctx, token)
    if intent.membership_id != caller.membership_id:
        raise ServiceError("not_found", resource="dashboard_intent")
    caller.require_fresh_sign_in(ctx.now(), ctx.settings.fresh_sign_in_seconds)
    if not await spend_nonce(ctx.db, f"intent:{intent.payload['n']}", ctx.now()):
        raise ServiceError("not_found", resource="dashboard_intent")
    role_holds = {p.value for p in ROLE_PERMISSIONS[Role(caller.role)]}
    if intent.action == "rotate":
        key = await _own_key(ctx, caller, str(intent.payload["k"]))
        if key.revoked_at is not None or key.expires_at <= ctx.now():
            raise ServiceError("not_found", resource="api_key")
        missing = sorted(set(key.permissions) - role_holds)
        if missing:
            raise ServiceError("permission_not_held", permissions=missing)
        return await _new_secret(ctx, key)
    permissions = [str(p) for p in intent.payload["p"]]
    missing = sorted(set(permissions) - role_holds)
    if missing:
        raise ServiceError("permission_not_held", permissions=missing)
    integration_id = intent.payload.get("i")
    if integration_id is not None:
        await require_visible_integration(ctx.db, caller.account_id, str(integration_id))
    return await issue_key(
        ctx,
        account_id=caller.account_id,
        membership_id=caller.membership_id,
        name=str(intent.payload["name"]),
        permissions=permissions,
        integration_id=str(integration_id) if integration_id else None,
        expires_in_days=int(intent.payload["d"]),
        purpose=str(intent.payload["c"]) if intent.payload.get("c") else None,
    )
