"""Device sign-in (spec: "Authentication" 9): start, approve on the Dashboard, poll once.

A sign-in is started without credentials and names only a ``user_code``; the person who signs
in on the Dashboard sees that code and what the key will hold, and approves or denies. The key
is issued at approval and its secret kept encrypted until the first poll takes it.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from sqlalchemy import func, select

from sitetools.auth.caller import Caller
from sitetools.connect.models import DeviceSignIn
from sitetools.connect.schemas import SignInOut, SignInPoll
from sitetools.core.clock import utc_day
from sitetools.core.context import Ctx
from sitetools.core.errors import ServiceError
from sitetools.core.ids import new_id
from sitetools.keys import service as keys
from sitetools.keys.schemas import ApiKeyWithSecret

__all__ = ["POLL_INTERVAL", "decide", "pending_for_code", "poll", "start", "verification_url"]

POLL_INTERVAL = 5
KEY_DAYS = 90
_SECRET_PURPOSE = "device-sign-in-key"
# No 0/O, 1/I/L: read aloud or copied from a phone without mistakes.
_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
_DEFAULT_NAME = "Device sign-in"


def _user_code() -> str:
    raw = "".join(secrets.choice(_ALPHABET) for _ in range(8))
    return f"{raw[:4]}-{raw[4:]}"


def normalize_code(text: str) -> str:
    raw = "".join(ch for ch in text.upper() if ch.isalnum())
    return f"{raw[:4]}-{raw[4:]}" if len(raw) == 8 else raw


def verification_url(ctx: Ctx, user_code: str) -> str:
    return f"{ctx.settings.base_url}/dashboard/device?code={user_code}"


def _next_day_seconds(now: datetime) -> int:
    return max(1, int((utc_day(now)[1] - now).total_seconds()))


async def start(ctx: Ctx, network: str, client_name: str | None) -> SignInOut:
    settings = ctx.settings
    if not settings.device_sign_in_enabled:
        raise ServiceError("sign_in_unavailable")
    now = ctx.now()
    started = await ctx.db.scalar(
        select(func.count()).where(
            DeviceSignIn.network == network, DeviceSignIn.created_at >= utc_day(now)[0]
        )
    )
    if (started or 0) >= settings.device_sign_ins_per_network_daily:
        raise ServiceError("sign_in_limit_reached", retry_after_seconds=_next_day_seconds(now))
    row = DeviceSignIn(
        id=new_id("signin"),
        user_code=_user_code(),
        network=network,
        client_name=(client_name or _DEFAULT_NAME).strip()[:100] or _DEFAULT_NAME,
        status="pending",
        created_at=now,
        expires_at=now + timedelta(seconds=settings.device_sign_in_seconds),
    )
    ctx.db.add(row)
    await ctx.db.flush()
    return SignInOut(
        id=row.id,
        user_code=row.user_code,
        verification_url=verification_url(ctx, row.user_code),
        expires_at=row.expires_at,
        interval=POLL_INTERVAL,
    )


async def poll(ctx: Ctx, sign_in_id: str) -> SignInPoll:
    """pending; approved (with the key, once); else 410 ``access_denied`` / ``expired_token``."""
    row = await ctx.db.scalar(
        select(DeviceSignIn).where(DeviceSignIn.id == sign_in_id).with_for_update()
    )
    if row is None:
        raise ServiceError("not_found", resource="sign_in")
    if row.status == "denied":
        raise ServiceError("access_denied")
    if row.status == "approved" and row.secret_enc is not None and row.key_id is not None:
        secret = ctx.keyring.decrypt(_SECRET_PURPOSE, row.secret_enc, row.id.encode()).decode()
        row.secret_enc = None
        row.status = "delivered"
        await ctx.db.flush()
        key = await keys.key_out(ctx, row.key_id)
        return SignInPoll(
            status="approved", api_key=ApiKeyWithSecret(**key.model_dump(), secret=secret)
        )
    if row.status != "pending" or row.expires_at <= ctx.now():
        raise ServiceError("expired_token")
    return SignInPoll(status="pending")


async def pending_for_code(ctx: Ctx, user_code: str) -> DeviceSignIn | None:
    row = await ctx.db.scalar(
        select(DeviceSignIn)
        .where(DeviceSignIn.user_code == normalize_code(user_code))
        .order_by(DeviceSignIn.created_at.desc())
        .limit(1)
    )
    if row is None or row.status != "pending" or row.expires_at <= ctx.now():
        return None
    return row


def granted_permissions(caller: Caller) -> list[str]:
    """What the key will hold: the member's permissions but the named-only ones."""
    return keys.default_permissions(caller.permissions, None)


async def decide(ctx: Ctx, caller: Caller, user_code: str, *, approved: bool) -> bool:
    """The signed-in person's answer; False when the code is unknown, used or expired."""
    row = await pending_for_code(ctx, user_code)
    if row is None:
        return False
    now = ctx.now()
    row.decided_at = now
    row.account_id = caller.account_id
    row.membership_id = caller.membership_id
    if not approved:
        row.status = "denied"
        await ctx.db.flush()
        return True
    created = await keys.issue_key(
        ctx,
        account_id=caller.account_id,
        membership_id=caller.membership_id,
        name=row.client_name,
        permissions=granted_permissions(caller),
        integration_id=None,
        expires_in_days=KEY_DAYS,
        purpose="connect",
    )
    row.key_id = created.id
    row.secret_enc = ctx.keyring.encrypt(_SECRET_PURPOSE, created.secret.encode(), row.id.encode())
    row.status = "approved"
    await ctx.db.flush()
    return True
