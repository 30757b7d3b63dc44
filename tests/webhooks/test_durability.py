"""1,000 events queued, the dispatching ``sitetools worker`` killed with SIGKILL mid-way and
started again: every event arrives at least once, repeats carry the same ``webhook-id``."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from sitetools.webhooks.models import WebhookDelivery
from sitetools.webhooks.outbox import record_event
from tests.support import ctx_for, new_person, sitetools_worker
from tests.webhooks.receiver import Receiver
from tests.webhooks.test_webhooks import hook_for

EVENTS = 1000


def _worker(database_url: str, data_dir: Path, receiver: Receiver) -> subprocess.Popen[bytes]:
    return sitetools_worker(
        database_url,
        data_dir,
        webhook_allow=receiver.allow,
        webhook_ca_file=str(receiver.ca_file),
        webhook_lease_seconds="2",
    )


async def _states(app: FastAPI, hook_id: str) -> dict[str, int]:
    async with ctx_for(app) as ctx:
        rows = await ctx.db.execute(
            select(WebhookDelivery.state, func.count())
            .where(WebhookDelivery.webhook_id == hook_id)
            .group_by(WebhookDelivery.state)
        )
        return {state: count for state, count in rows.all()}


async def test_no_event_is_lost_when_the_dispatcher_is_killed(
    hooks_app: FastAPI,
    hooks_database: str,
    http: httpx.AsyncClient,
    receiver: Receiver,
    data_dir: Path,
) -> None:
    person = await new_person(hooks_app)
    hook = await hook_for(http, person, receiver, "/slow/0.02/durable")
    queued: set[str] = set()
    async with ctx_for(hooks_app) as ctx:
        for n in range(EVENTS):
            event_id = await record_event(
                ctx,
                account_id=person.account_id,
                membership_id=person.membership_id,
                event_type="job.succeeded",
                data={"n": n},
            )
            assert event_id is not None
            queued.add(event_id)
        await ctx.commit()
    first = _worker(hooks_database, data_dir, receiver)
    try:
        await receiver.wait_for(hook["path"], EVENTS // 4, seconds=120)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
    killed_at = len(receiver.at(hook["path"]))
    assert killed_at < EVENTS, "the kill came too late to test anything"
    second = _worker(hooks_database, data_dir, receiver)
    try:
        deadline = time.monotonic() + 180
        while await _states(hooks_app, hook["id"]) != {"delivered": EVENTS}:
            assert time.monotonic() < deadline, await _states(hooks_app, hook["id"])
            await asyncio.sleep(0.2)
    finally:
        second.send_signal(signal.SIGTERM)
        try:
            second.wait(20)
        except subprocess.TimeoutExpired:
            second.kill()
    received = receiver.at(hook["path"])
    ids = [r.event_id for r in received]
    assert set(ids) == queued  # every event at least once, under its own webhook-id
    assert len(ids) >= EVENTS
