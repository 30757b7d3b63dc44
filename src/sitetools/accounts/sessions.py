"""Dashboard sign-in: password checks with throttling, sessions, one-time sign-in links."""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete, func, select

from sitetools.accounts.models import (
    DashboardSession,
    Membership,
    SignInAttempt,
    User,
)
from sitetools.accounts.service import normalize_email
from sitetools.auth.resolve import SESSION_PREFIX
from sitetools.core.context import Ctx
from sitetools.core.crypto import new_secret
from sitetools.core.errors import ServiceError
from sitetools.core.ids import new_id
from sitetools.core.nonces import spend_nonce

__all__ = [
    "SignInThrottledError",
    "check_password",
    "create_session",
    "end_session",
    "network_of",
    "redeem_sign_in_link",
    "sign_in_link",
]

_LINK_PURPOSE = "sign-in-link"


class SignInThrottledError(Exception):
    """Too many failed sign-ins for this email or network; try again later."""

    def __init__(self, retry_after_seconds: int) -> None:
        super().__init__("sign-in throttled")
        self.retry_after_seconds = retry_after_seconds


@dataclass(frozen=True, slots=True)
class NewSession:
    id: str
    token: str
    user_id: str


def network_of(address: str | None) -> str:
    """The /24 (IPv4) or /56 (IPv6) network of a client address, for per-network limits."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return "unknown"
    prefix = 24 if ip.version == 4 else 56
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


async def _throttle(ctx: Ctx, email: str, network: str) -> None:
    settings = ctx.settings
    since = ctx.now() - timedelta(seconds=settings.sign_in_throttle_seconds)
    by_email = await ctx.db.scalar(
        select(func.count()).where(SignInAttempt.email == email, SignInAttempt.at > since)
    )
    by_network = await ctx.db.scalar(
        select(func.count()).where(SignInAttempt.network == network, SignInAttempt.at > since)
    )
    if (by_email or 0) >= settings.sign_in_max_failures or (
        by_network or 0
    ) >= settings.sign_in_max_failures_per_network:
        raise SignInThrottledError(settings.sign_in_throttle_seconds)


async def check_password(ctx: Ctx, email: str, password: str, network: str) -> User | None:
    """The user if the password is right; None (one answer for every failure) otherwise.

    A failure is recorded in the caller's transaction, which must be committed either way.
    """
    email = normalize_email(email)
    await _throttle(ctx, email, network)
    user = await ctx.db.scalar(select(User).where(User.email == email))
    if ctx.app.passwords.verify(user.password_hash if user else None, password) and user:
        await ctx.db.execute(delete(SignInAttempt).where(SignInAttempt.email == email))
        return user
    ctx.db.add(SignInAttempt(id=new_id("att"), email=email, network=network, at=ctx.now()))
    await ctx.db.flush()
    return None


async def _default_membership(ctx: Ctx, user_id: str) -> Membership:
    membership = await ctx.db.scalar(
        select(Membership)
        .where(Membership.user_id == user_id, Membership.ended_at.is_(None))
        .order_by(Membership.created_at, Membership.id)
        .limit(1)
    )
    if membership is None:
        raise ServiceError("organization_access_removed")
    return membership


async def create_session(ctx: Ctx, user_id: str, account_id: str | None = None) -> NewSession:
    """A new Dashboard session; its sign-in time is now (a fresh sign-in)."""
    if account_id is None:
        membership = await _default_membership(ctx, user_id)
    else:
        found = await ctx.db.scalar(
            select(Membership).where(
                Membership.user_id == user_id,
                Membership.account_id == account_id,
                Membership.ended_at.is_(None),
            )
        )
        if found is None:
            raise ServiceError("not_found", resource="account")
        membership = found
    now = ctx.now()
    token = new_secret(SESSION_PREFIX)
    session = DashboardSession(
        id=new_id("sess"),
        token_digest=ctx.keyring.token_digest(token),
        user_id=user_id,
        membership_id=membership.id,
        signed_in_at=now,
        last_seen_at=now,
        expires_at=now + timedelta(seconds=ctx.settings.session_lifetime_seconds),
    )
    ctx.db.add(session)
    await ctx.db.flush()
    return NewSession(session.id, token, user_id)


async def end_session(ctx: Ctx, session_id: str) -> None:
    session = await ctx.db.get(DashboardSession, session_id)
    if session is not None and session.revoked_at is None:
        session.revoked_at = ctx.now()
        await ctx.db.flush()


async def sign_in_link(ctx: Ctx, email: str) -> str:
    """A one-time link that signs the person in on the Dashboard (``make run``, admin CLI)."""
    user = await ctx.db.scalar(select(User).where(User.email == normalize_email(email)))
    if user is None:
        raise ServiceError("not_found", resource="user")
    expires = ctx.now() + timedelta(seconds=ctx.settings.sign_in_link_seconds)
    token = ctx.keyring.sign(_LINK_PURPOSE, {"u": user.id, "n": secrets.token_hex(16)}, expires)
    return f"{ctx.settings.base_url}/dashboard/sign-in/link?token={token}"


async def redeem_sign_in_link(ctx: Ctx, token: str) -> NewSession | None:
    payload = ctx.keyring.verify(_LINK_PURPOSE, token, ctx.now())
    if payload is None:
        return None
    if not await spend_nonce(ctx.db, f"link:{payload.get('n')}", ctx.now()):
        return None
    return await create_session(ctx, str(payload["u"]))
