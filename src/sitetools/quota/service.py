"""Quota counters and the reservation API (reserve, commit, release).

A reservation holds one unit of a counter while work is pending; committing turns it into use,
releasing gives it back. The conditional increment is one UPDATE, so concurrent reservations
never exceed the limit on either backend.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from sqlalchemy import select, update

if TYPE_CHECKING:
    from sitetools.accounts.models import Account
from sitetools.accounts.service import load_account
from sitetools.auth.caller import Caller
from sitetools.core.clock import iso_utc
from sitetools.core.context import Ctx
from sitetools.core.db import insert_if_missing
from sitetools.core.errors import ServiceError
from sitetools.core.ids import new_id
from sitetools.quota.models import QuotaCounter, QuotaReservation
from sitetools.quota.schemas import QuotaCounterOut, QuotaOut

__all__ = [
    "Counter",
    "commit",
    "get_quota",
    "limit_for",
    "period_of",
    "release",
    "release_expired",
    "reserve",
]


class Counter(StrEnum):
    TOOL_CALLS = "tool_calls"
    INTEGRATIONS_CREATED = "integrations_created"


def period_of(counter: Counter, now: datetime) -> tuple[datetime, datetime]:
    """spec: "Quota" - tool calls per UTC day, new integrations per UTC month."""
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if counter is Counter.TOOL_CALLS:
        return day, day + timedelta(days=1)
    start = day.replace(day=1)
    end = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return start, end


def limit_for(ctx: Ctx, account: Account, counter: Counter) -> int | None:
    """Plan limits from configuration; Business and service tier unlimited unless set."""
    settings = ctx.settings
    daily = counter is Counter.TOOL_CALLS
    if account.type == "personal":
        if account.plan == "premium":
            return (
                settings.premium_daily_tool_calls
                if daily
                else settings.premium_monthly_integrations
            )
        return settings.free_daily_tool_calls if daily else settings.free_monthly_integrations
    return account.daily_tool_calls_limit if daily else account.monthly_integrations_limit


async def _ensure_row(ctx: Ctx, account_id: str, counter: Counter, start: datetime) -> None:
    values = {
        "account_id": account_id,
        "counter": counter.value,
        "period_start": start,
        "used": 0,
        "reserved": 0,
    }
    await insert_if_missing(ctx.db, QuotaCounter, **values)


def _key(account_id: str, counter: Counter, start: datetime) -> tuple[object, ...]:
    return (
        QuotaCounter.account_id == account_id,
        QuotaCounter.counter == counter.value,
        QuotaCounter.period_start == start,
    )


async def reserve(ctx: Ctx, account_id: str, counter: Counter) -> str:
    """Hold one unit, in the caller's transaction; 429 ``quota_exceeded`` when none is left."""
    account = await load_account(ctx, account_id)
    now = ctx.now()
    start, end = period_of(counter, now)
    limit = limit_for(ctx, account, counter)
    await _ensure_row(ctx, account_id, counter, start)
    statement = update(QuotaCounter).where(*_key(account_id, counter, start))  # type: ignore[arg-type]
    if limit is not None:
        statement = statement.where(QuotaCounter.used + QuotaCounter.reserved < limit)
    result = await ctx.db.execute(statement.values(reserved=QuotaCounter.reserved + 1))
    if result.rowcount != 1:  # type: ignore[attr-defined]
        raise ServiceError("quota_exceeded", reset_at=iso_utc(end))
    reservation = QuotaReservation(
        id=new_id("qres"),
        account_id=account_id,
        counter=counter.value,
        period_start=start,
        state="reserved",
        created_at=now,
        expires_at=now + timedelta(seconds=ctx.settings.quota_reservation_seconds),
    )
    ctx.db.add(reservation)
    await ctx.db.flush()
    return reservation.id


async def _settle(ctx: Ctx, reservation_id: str, to: str) -> QuotaReservation:
    reservation = await ctx.db.scalar(
        select(QuotaReservation).where(QuotaReservation.id == reservation_id).with_for_update()
    )
    if reservation is None:
        raise ServiceError("not_found", resource="quota_reservation")
    if reservation.state != "reserved":
        return reservation  # settling twice changes nothing
    counter = Counter(reservation.counter)
    key = _key(reservation.account_id, counter, reservation.period_start)
    values = {"reserved": QuotaCounter.reserved - 1}
    if to == "committed":
        values["used"] = QuotaCounter.used + 1
    await ctx.db.execute(update(QuotaCounter).where(*key).values(**values))  # type: ignore[arg-type]
    reservation.state = to
    await ctx.db.flush()
    return reservation


async def commit(ctx: Ctx, reservation_id: str) -> None:
    """Turn a reservation into use; an expired one answers 409 ``quota_expired``."""
    reservation = await ctx.db.get(QuotaReservation, reservation_id)
    if (
        reservation is not None
        and reservation.state == "reserved"
        and (reservation.expires_at <= ctx.now())
    ):
        await _settle(ctx, reservation_id, "released")
        raise ServiceError("quota_expired")
    if reservation is not None and reservation.state == "released":
        raise ServiceError("quota_expired")
    await _settle(ctx, reservation_id, "committed")


async def release(ctx: Ctx, reservation_id: str) -> None:
    """Give the unit back (the work never started). Releasing twice is harmless."""
    await _settle(ctx, reservation_id, "released")


async def release_expired(ctx: Ctx) -> int:
    """Release every reservation past its expiry (the sweeper calls this)."""
    ids = list(
        await ctx.db.scalars(
            select(QuotaReservation.id).where(
                QuotaReservation.state == "reserved", QuotaReservation.expires_at <= ctx.now()
            )
        )
    )
    for reservation_id in ids:
        await _settle(ctx, reservation_id, "released")
    return len(ids)


async def _counter(ctx: Ctx, account: Account, counter: Counter, now: datetime) -> QuotaCounterOut:
    start, end = period_of(counter, now)
    row = await ctx.db.get(QuotaCounter, (account.id, counter.value, start))
    used, reserved = (row.used, row.reserved) if row else (0, 0)
    limit = limit_for(ctx, account, counter)
    if limit is None:
        status, remaining = "unlimited", None
    else:
        remaining = max(0, limit - used - reserved)
        status = "ready" if remaining > 0 else "exhausted"
    return QuotaCounterOut(
        status=status,
        period="day" if counter is Counter.TOOL_CALLS else "month",
        period_start=start,
        resets_at=end,
        limit=limit,
        used=used,
        reserved=reserved,
        remaining=remaining,
    )


async def get_quota(ctx: Ctx, caller: Caller) -> QuotaOut:
    """spec: "Quota" - a Business account's allowances are one pool shared by all members."""
    account = await load_account(ctx, caller.account_id)
    now = ctx.now()
    return QuotaOut(
        as_of=now,
        tool_calls=await _counter(ctx, account, Counter.TOOL_CALLS, now),
        integrations_created=await _counter(ctx, account, Counter.INTEGRATIONS_CREATED, now),
    )
