"""The transactional outbox: an event and its deliveries are written in the transaction of the
change that causes them, so a committed job change always has its events and a rolled-back one
never does. The dispatcher is woken once the transaction commits."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import select, text, update

from sitetools.core.clock import iso_utc
from sitetools.core.context import Ctx
from sitetools.core.ids import new_id
from sitetools.core.signals import WEBHOOKS_DUE
from sitetools.webhooks.models import Webhook, WebhookDelivery, WebhookEvent

__all__ = ["NOTIFY_CHANNEL", "envelope_body", "record_event", "stop_question_events", "wake"]

NOTIFY_CHANNEL = "sitetools_webhooks"


def envelope_body(event_id: str, event_type: str, created_at: datetime, data: Any) -> str:
    """spec: "Envelope" - the exact bytes every attempt of this event sends."""
    envelope = {
        "id": event_id,
        "type": event_type,
        "created_at": iso_utc(created_at),
        "data": data,
    }
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)


async def wake(ctx: Ctx) -> None:
    """Wake dispatchers once this unit commits: in this process, and (PostgreSQL) in others."""
    signals = ctx.app.signals
    ctx.after_commit(lambda: signals.notify(WEBHOOKS_DUE))
    if ctx.db.get_bind().dialect.name == "postgresql":
        await ctx.db.execute(text(f"SELECT pg_notify('{NOTIFY_CHANNEL}', '')"))


async def record_event(
    ctx: Ctx,
    *,
    account_id: str | None,
    membership_id: str | None,
    event_type: str,
    data: dict[str, Any],
    job_id: str | None = None,
    request_id: str | None = None,
) -> str | None:
    """Queue ``event_type`` for every active webhook of the member subscribed to it.

    spec: "Events" - a webhook receives events for every job its creator starts. Nothing is
    written when no webhook wants it. The caller guarantees ``data`` holds no result, answer or
    secret.
    """
    if membership_id is None or account_id is None or not ctx.settings.webhooks_enabled:
        return None
    rows = await ctx.db.execute(
        select(Webhook.id, Webhook.events).where(
            Webhook.membership_id == membership_id, Webhook.status == "active"
        )
    )
    targets = [hook_id for hook_id, events in rows.all() if event_type in events]
    if not targets:
        return None
    now = ctx.now()
    event_id = new_id("evt")
    ctx.db.add(
        WebhookEvent(
            id=event_id,
            account_id=account_id,
            type=event_type,
            job_id=job_id,
            body=envelope_body(event_id, event_type, now, data),
            created_at=now,
        )
    )
    await ctx.db.flush()
    ctx.db.add_all(
        WebhookDelivery(
            id=new_id("dlv"),
            webhook_id=hook_id,
            event_id=event_id,
            state="pending",
            attempts=0,
            next_attempt_at=now,
            request_id=request_id,
            created_at=now,
        )
        for hook_id in targets
    )
    await ctx.db.flush()
    await wake(ctx)
    return event_id


async def stop_question_events(ctx: Ctx, request_id: str) -> None:
    """spec: "Delivery" 3 - a question's events stop when the question closes."""
    await ctx.db.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.request_id == request_id, WebhookDelivery.state == "pending")
        .values(state="dropped", ended_at=ctx.now(), lease_owner=None, lease_expires_at=None)
    )
