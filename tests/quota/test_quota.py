"""spec: "Quota" - counters per UTC day and month, plan limits, the reservation API."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from sitetools.accounts.models import Account
from sitetools.auth.permissions import Role
from sitetools.core.errors import ServiceError
from sitetools.quota import service as quota
from sitetools.quota.service import Counter
from tests.support import ctx_for, new_person


async def _quota(client: httpx.AsyncClient, headers: dict[str, str]) -> dict:  # type: ignore[type-arg]
    response = await client.get("/v1/quota", headers=headers)
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


async def test_free_plan_counters_and_periods(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app)
    body = await _quota(client, person.auth())
    calls, made = body["tool_calls"], body["integrations_created"]
    assert calls["limit"] == 100
    assert made["limit"] == 3
    assert calls["status"] == "ready"
    assert calls["remaining"] == 100
    assert calls["period"] == "day"
    assert made["period"] == "month"
    start = datetime.fromisoformat(calls["period_start"])
    assert (start.hour, start.minute, start.second) == (0, 0, 0)
    assert (datetime.fromisoformat(calls["resets_at"]) - start).days == 1
    month = datetime.fromisoformat(made["period_start"])
    assert month.day == 1
    assert datetime.fromisoformat(made["resets_at"]).day == 1
    assert set(calls) == {
        "status",
        "period",
        "period_start",
        "resets_at",
        "limit",
        "used",
        "reserved",
        "remaining",
    }


async def test_premium_and_business_limits(app: FastAPI, client: httpx.AsyncClient) -> None:
    premium = await new_person(app, plan="premium")
    body = await _quota(client, premium.auth())
    assert body["tool_calls"]["limit"] == 5000
    assert body["integrations_created"]["limit"] == 50
    business = await new_person(app, account_type="business")
    body = await _quota(client, business.auth())
    assert body["tool_calls"] == body["tool_calls"] | {
        "limit": None,
        "remaining": None,
        "status": "unlimited",
    }


async def test_reserve_commit_release(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app)
    async with ctx_for(app) as ctx:
        first = await quota.reserve(ctx, person.account_id, Counter.TOOL_CALLS)
        second = await quota.reserve(ctx, person.account_id, Counter.TOOL_CALLS)
        await ctx.db.commit()
    body = await _quota(client, person.auth())
    assert (body["tool_calls"]["used"], body["tool_calls"]["reserved"]) == (0, 2)
    assert body["tool_calls"]["remaining"] == 98
    async with ctx_for(app) as ctx:
        await quota.commit(ctx, first)
        await quota.commit(ctx, first)  # settling twice changes nothing
        await quota.release(ctx, second)
        await quota.release(ctx, second)
        await ctx.db.commit()
    body = await _quota(client, person.auth())
    assert (body["tool_calls"]["used"], body["tool_calls"]["reserved"]) == (1, 0)


async def test_exhausted_quota_answers_quota_exceeded_with_reset_at(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    async with ctx_for(app) as ctx:
        for _ in range(3):
            await quota.commit(
                ctx, await quota.reserve(ctx, person.account_id, Counter.INTEGRATIONS_CREATED)
            )
        with pytest.raises(ServiceError) as refused:
            await quota.reserve(ctx, person.account_id, Counter.INTEGRATIONS_CREATED)
        await ctx.db.commit()
    assert refused.value.code == "quota_exceeded"
    reset_at = datetime.fromisoformat(refused.value.details["reset_at"])
    assert reset_at.day == 1
    assert reset_at > datetime.now(UTC)
    body = await _quota(client, person.auth())
    assert body["integrations_created"]["status"] == "exhausted"
    assert body["integrations_created"]["remaining"] == 0


async def test_next_day_starts_a_new_period(app: FastAPI, client: httpx.AsyncClient, clock) -> None:  # type: ignore[no-untyped-def]
    person = await new_person(app)
    async with ctx_for(app) as ctx:
        await quota.commit(ctx, await quota.reserve(ctx, person.account_id, Counter.TOOL_CALLS))
        await ctx.db.commit()
    clock.advance(86400)
    body = await _quota(client, person.auth())
    assert body["tool_calls"]["used"] == 0


async def test_expired_reservation_is_released_and_cannot_commit(
    app: FastAPI,
    client: httpx.AsyncClient,
    clock,  # type: ignore[no-untyped-def]
) -> None:
    person = await new_person(app)
    async with ctx_for(app) as ctx:
        held = await quota.reserve(ctx, person.account_id, Counter.TOOL_CALLS)
        await ctx.db.commit()
    clock.advance(app.state.services.settings.quota_reservation_seconds + 1)
    async with ctx_for(app) as ctx:
        assert await quota.release_expired(ctx) >= 1
        await ctx.db.commit()
    async with ctx_for(app) as ctx:
        with pytest.raises(ServiceError) as refused:
            await quota.commit(ctx, held)
    assert refused.value.code == "quota_expired"
    clock.offset = clock.offset.__class__()
    body = await _quota(client, person.auth())
    assert body["tool_calls"]["reserved"] == 0
    assert body["tool_calls"]["used"] == 0


async def test_business_pool_is_shared_and_limit_can_be_set(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    owner = await new_person(app, account_type="business")
    member = await new_person(app, account_id=owner.account_id, role=Role.MEMBER)
    async with ctx_for(app) as ctx:
        await ctx.db.execute(
            update(Account).where(Account.id == owner.account_id).values(daily_tool_calls_limit=2)
        )
        await quota.reserve(ctx, owner.account_id, Counter.TOOL_CALLS)
        await ctx.db.commit()
    body = await _quota(client, member.auth())
    assert body["tool_calls"]["limit"] == 2
    assert body["tool_calls"]["reserved"] == 1
    assert body["tool_calls"]["remaining"] == 1


async def test_concurrent_reservations_never_exceed_the_limit(app: FastAPI) -> None:
    person = await new_person(app)
    async with ctx_for(app) as ctx:
        await ctx.db.execute(
            update(Account)
            .where(Account.id == person.account_id)
            .values(type="business", plan=None, daily_tool_calls_limit=5)
        )
        await ctx.db.commit()

    async def attempt() -> bool:
        async with ctx_for(app) as ctx:
            try:
                await quota.reserve(ctx, person.account_id, Counter.TOOL_CALLS)
            except ServiceError as error:
                assert error.code == "quota_exceeded"
                await ctx.db.rollback()
                return False
            await ctx.db.commit()
            return True

    results = await asyncio.gather(*(attempt() for _ in range(12)))
    assert sum(results) == 5
