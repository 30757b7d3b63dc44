"""Rules of identity: accounts, members, names, preferences."""

from __future__ import annotations

from typing import Literal

from sqlalchemy import select, update

from sitetools.accounts.models import Account, ConnectionPreference, Membership, User
from sitetools.accounts.schemas import (
    AccountFeatures,
    AccountOut,
    AccountUserOut,
    ConnectionPreferenceOut,
    PreferencesIn,
    PreferencesOut,
    SetNameIn,
)
from sitetools.auth.caller import Caller
from sitetools.auth.permissions import Role
from sitetools.core.context import Ctx
from sitetools.core.errors import ServiceError
from sitetools.core.ids import new_id

__all__ = [
    "AccountType",
    "add_member",
    "create_account",
    "current_members",
    "find_user",
    "get_account",
    "get_preferences",
    "load_account",
    "lock_membership",
    "normalize_email",
    "question_delivery_for",
    "set_name",
    "update_preferences",
]

AccountType = Literal["personal", "business", "service"]


def normalize_email(email: str) -> str:
    return email.strip().lower()


def _display_name(user: User) -> str:
    return " ".join(part for part in (user.first_name, user.last_name) if part)


async def _user_by_email(ctx: Ctx, email: str) -> User | None:
    return await ctx.db.scalar(select(User).where(User.email == normalize_email(email)))


async def _new_user(
    ctx: Ctx, email: str, password: str | None, first_name: str = "", last_name: str | None = None
) -> User:
    user = User(
        id=new_id("user"),
        email=normalize_email(email),
        password_hash=ctx.app.passwords.hash(password) if password else None,
        first_name=first_name,
        last_name=last_name,
        created_at=ctx.now(),
    )
    ctx.db.add(user)
    await ctx.db.flush()
    return user


async def find_user(ctx: Ctx, email: str) -> User:
    user = await _user_by_email(ctx, email)
    if user is None:
        raise ServiceError("not_found", resource="user")
    return user


async def create_account(
    ctx: Ctx,
    *,
    email: str,
    password: str | None,
    account_type: AccountType = "personal",
    plan: Literal["free", "premium"] | None = None,
    name: str | None = None,
    first_name: str = "",
    last_name: str | None = None,
) -> tuple[Account, User, Membership]:
    """A new account with its owner; a new user unless one with this email exists."""
    now = ctx.now()
    if account_type == "personal":
        plan = plan or "free"
    elif plan is not None:
        raise ServiceError("account_unsupported", message="Only Personal accounts have a plan.")
    user = await _user_by_email(ctx, email) or await _new_user(
        ctx, email, password, first_name, last_name
    )
    account = Account(
        id=new_id("acct"),
        type=account_type,
        name=name or first_name or normalize_email(email),
        plan=plan,
        status="active",
        question_delivery="agent",
        created_at=now,
    )
    membership = Membership(
        id=new_id("mem"),
        account_id=account.id,
        user_id=user.id,
        role=Role.OWNER.value,
        build_emails=True,
        created_at=now,
    )
    ctx.db.add(account)
    await ctx.db.flush()
    ctx.db.add(membership)
    await ctx.db.flush()
    return account, user, membership


async def add_member(
    ctx: Ctx, *, account_id: str, email: str, password: str | None, role: Role
) -> tuple[User, Membership]:
    """Put a person on a Business account's team (admin command; invitations come later)."""
    account = await ctx.db.get(Account, account_id)
    if account is None:
        raise ServiceError("not_found", resource="account")
    if account.type != "business":
        raise ServiceError("business_account_required")
    user = await _user_by_email(ctx, email) or await _new_user(ctx, email, password)
    now = ctx.now()
    existing = await ctx.db.scalar(
        select(Membership).where(Membership.account_id == account_id, Membership.user_id == user.id)
    )
    if existing is not None and existing.ended_at is None:
        raise ServiceError("already_member")
    if existing is not None:
        existing.ended_at, existing.role = None, role.value
        membership = existing
    else:
        membership = Membership(
            id=new_id("mem"),
            account_id=account_id,
            user_id=user.id,
            role=role.value,
            build_emails=True,
            created_at=now,
        )
        ctx.db.add(membership)
    await ctx.db.flush()
    return user, membership


async def load_account(ctx: Ctx, account_id: str) -> Account:
    account = await ctx.db.get(Account, account_id)
    if account is None:
        raise ServiceError("not_found", resource="account")
    return account


async def lock_membership(ctx: Ctx, membership_id: str) -> None:
    """Serialize changes per member (a row lock on PostgreSQL, the write lock on SQLite)."""
    await ctx.db.execute(
        update(Membership).where(Membership.id == membership_id).values(id=Membership.id)
    )


async def current_members(ctx: Ctx, membership_ids: set[str]) -> dict[str, tuple[str, str]]:
    """``membership_id → (user_id, email)`` of those still in their account (departed and
    unknown ones are left out)."""
    if not membership_ids:
        return {}
    rows = await ctx.db.execute(
        select(Membership.id, User.id, User.email)
        .join(User, User.id == Membership.user_id)
        .where(Membership.id.in_(membership_ids), Membership.ended_at.is_(None))
    )
    return {membership: (user, email) for membership, user, email in rows.all()}


async def get_account(ctx: Ctx, caller: Caller) -> AccountOut:
    """The caller's account, from what credential resolution already loaded (one query)."""
    settings = ctx.settings
    business = caller.account_type == "business"
    # Built from values already checked (the Caller and settings): no validation pass needed.
    return AccountOut.model_construct(
        id=caller.account_id,
        type=caller.account_type,  # type: ignore[arg-type]
        name=caller.account_name,
        plan=caller.plan,  # type: ignore[arg-type]
        role=caller.role.value,
        permissions=sorted(p.value for p in caller.permissions),
        features=AccountFeatures.model_construct(
            teams=business,
            webhooks=settings.webhooks_enabled,
            billing=caller.account_type == "personal",
            sms_numbers=settings.sms_numbers_enabled and caller.account_type != "personal",
            builds=settings.builds_enabled,
            code=business,
        ),
        created_at=caller.account_created_at,
    )


async def set_name(ctx: Ctx, caller: Caller, data: SetNameIn) -> AccountUserOut:
    """Change only the caller's own name; the same call twice answers the same."""
    user = await ctx.db.get(User, caller.user_id)
    if user is None:
        raise ServiceError("not_found", resource="user")
    user.first_name, user.last_name = data.first_name, data.last_name
    await ctx.db.flush()
    return AccountUserOut(
        user_id=user.id,
        email=user.email,
        first_name=user.first_name,
        last_name=user.last_name,
        name=_display_name(user),
    )


def _connection_kind(caller: Caller) -> Literal["api_key", "oauth_app"] | None:
    if caller.kind in ("api_key", "integration_key"):
        return "api_key"
    if caller.kind == "oauth":
        return "oauth_app"
    return None


async def get_preferences(ctx: Ctx, caller: Caller) -> PreferencesOut:
    account = await ctx.db.get(Account, caller.account_id)
    membership = await ctx.db.get(Membership, caller.membership_id)
    assert account is not None
    assert membership is not None
    connection = None
    kind = _connection_kind(caller)
    if kind is not None:
        override = await ctx.db.get(ConnectionPreference, (caller.membership_id, caller.client_id))
        connection = ConnectionPreferenceOut(
            id=caller.client_id,
            kind=kind,
            question_delivery=override.question_delivery if override else None,
        )
    return PreferencesOut(
        question_delivery=account.question_delivery,
        connection=connection,
        build_emails=membership.build_emails,
    )


async def update_preferences(ctx: Ctx, caller: Caller, data: PreferencesIn) -> PreferencesOut:
    """spec: "AccountPreferences" - omitted fields keep their value; the override wins."""
    kind = _connection_kind(caller)
    if data.connection is not None and kind is None:
        raise ServiceError(
            "invalid_request",
            issues=[
                {"path": "/body/connection", "message": "A Dashboard session has no connection."}
            ],
        )
    if caller.kind == "integration_key" and (
        data.question_delivery is not None or data.build_emails is not None
    ):
        raise ServiceError("forbidden", reason="integration_key_changes_connection_only")
    if data.question_delivery is not None:
        account = await ctx.db.get(Account, caller.account_id)
        assert account is not None
        account.question_delivery = data.question_delivery
    if data.build_emails is not None:
        membership = await ctx.db.get(Membership, caller.membership_id)
        assert membership is not None
        membership.build_emails = data.build_emails
    if data.connection is not None and kind is not None:
        key = (caller.membership_id, caller.client_id)
        override = await ctx.db.get(ConnectionPreference, key)
        wanted = data.connection.question_delivery
        if wanted is None and override is not None:
            await ctx.db.delete(override)
        elif wanted is not None and override is None:
            ctx.db.add(
                ConnectionPreference(
                    membership_id=caller.membership_id,
                    connection_id=caller.client_id,
                    kind=kind,
                    question_delivery=wanted,
                )
            )
        elif wanted is not None and override is not None:
            override.question_delivery = wanted
    await ctx.db.flush()
    return await get_preferences(ctx, caller)


async def question_delivery_for(ctx: Ctx, caller: Caller) -> str:
    """spec: "AccountPreferences" - the connection's setting wins over the account default."""
    if _connection_kind(caller) is not None:
        override = await ctx.db.get(ConnectionPreference, (caller.membership_id, caller.client_id))
        if override is not None and override.question_delivery is not None:
            return override.question_delivery
    account = await ctx.db.get(Account, caller.account_id)
    assert account is not None
    return account.question_delivery
