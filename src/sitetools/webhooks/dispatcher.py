"""The dispatcher: claims due deliveries under a lease, sends them, records what happened.

It runs in every worker process (embedded on SQLite, or any number on PostgreSQL). Rows are the
only state: a delivery claimed by a process that dies is claimed again once its lease runs out,
with the same ``webhook-id``, so a crash or restart loses nothing (at least once). Each delivery
is its own task and at most ``webhook_concurrency_per_endpoint`` are in flight per webhook, so a
slow or dead receiver never holds up another webhook's deliveries. Outcomes are written in
batches (one transaction for whatever finished meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

import structlog
from sqlalchemy import Table, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sitetools.core.context import AppServices, Ctx, unit
from sitetools.core.ids import new_id
from sitetools.core.signals import WEBHOOKS_DUE
from sitetools.webhooks.models import Webhook, WebhookAttempt, WebhookDelivery, WebhookEvent
from sitetools.webhooks.signing import SecretUnreadableError, signing_secrets, standard_headers
from sitetools.webhooks.transport import PostResult, Sender

__all__ = ["FAILURES_BEFORE_DISABLE", "RETRY_AFTER", "Dispatcher", "disable_webhook", "prune"]

_log = structlog.get_logger("sitetools.webhooks")

# spec: "Delivery" 3 - retry after 5 s, 20 s, 1 min, 3 min and 10 min, then give up.
RETRY_AFTER = (
    timedelta(seconds=5),
    timedelta(seconds=20),
    timedelta(minutes=1),
    timedelta(minutes=3),
    timedelta(minutes=10),
)
# spec: "Delivery" 5.
FAILURES_BEFORE_DISABLE = 20
_IDLE_WAIT = 1.0
_BATCH = 500
# Core tables for batched statements (no ORM bookkeeping per row).
_DELIVERIES = cast(Table, WebhookDelivery.__table__)
_WEBHOOKS = cast(Table, Webhook.__table__)
_ATTEMPTS = cast(Table, WebhookAttempt.__table__)


@dataclass(frozen=True, slots=True)
class Claimed:
    delivery_id: str
    webhook_id: str
    event_id: str
    event_type: str
    attempts: int
    url: str
    body: str
    secret_enc: bytes
    previous_secret_enc: bytes | None
    previous_secret_until: datetime | None


@dataclass(frozen=True, slots=True)
class Outcome:
    claimed: Claimed
    result: PostResult
    at: datetime


async def disable_webhook(ctx: Ctx, webhook_id: str, reason: str) -> bool:
    """Turn an active webhook off; its undelivered events are dropped (replayable later)."""
    now = ctx.now()
    changed = await ctx.db.execute(
        update(Webhook)
        .where(Webhook.id == webhook_id, Webhook.status == "active")
        .values(status="disabled", disabled_reason=reason, updated_at=now)
    )
    if not changed.rowcount:  # type: ignore[attr-defined]
        return False
    await ctx.db.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.webhook_id == webhook_id, WebhookDelivery.state == "pending")
        .values(state="dropped", ended_at=now, lease_owner=None, lease_expires_at=None)
    )
    return True


class Dispatcher:
    def __init__(
        self,
        services: AppServices,
        sessions: async_sessionmaker[AsyncSession],
        owner: str,
    ) -> None:
        self.services = services
        self.sessions = sessions
        self.owner = owner
        settings = services.settings
        self.concurrency = settings.webhook_concurrency
        self.per_endpoint = settings.webhook_concurrency_per_endpoint
        self.sender = Sender(settings, max_connections=self.concurrency)
        self._in_flight: Counter[str] = Counter()
        self._tasks: set[asyncio.Task[None]] = set()
        self._outcomes: asyncio.Queue[Outcome] = asyncio.Queue()
        self._starved = False

    # -- the loop ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Claim and send until cancelled."""
        writer = asyncio.get_running_loop().create_task(self._write_forever())
        signals = self.services.signals
        try:
            while True:
                with signals.listening((WEBHOOKS_DUE,)) as listener:
                    free = self.concurrency - len(self._tasks)
                    claimed: list[Claimed] = []
                    if free > 0:
                        try:
                            claimed = await self.claim(free)
                        except Exception:
                            _log.exception("webhook_claim_failed")
                    for item in claimed:
                        self._start(item)
                    if claimed and len(claimed) == free:
                        continue
                    await listener.wait(_IDLE_WAIT)
        finally:
            writer.cancel()
            for task in list(self._tasks):
                task.cancel()
            for task in [writer, *self._tasks]:
                with contextlib.suppress(BaseException):
                    await task
            await self.sender.close()

    def _start(self, claimed: Claimed) -> None:
        self._in_flight[claimed.webhook_id] += 1
        task = asyncio.get_running_loop().create_task(self._deliver(claimed))
        self._tasks.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._tasks.discard(finished)
            self._in_flight[claimed.webhook_id] -= 1
            if self._in_flight[claimed.webhook_id] <= 0:
                del self._in_flight[claimed.webhook_id]
            # Due rows were left waiting: claim more once a few slots are free (one claim for
            # several completions, not one each).
            if self._starved and (
                self._in_flight.get(claimed.webhook_id, 0) <= self.per_endpoint // 2
                or len(self._tasks) <= self.concurrency // 2
            ):
                self.services.signals.notify(WEBHOOKS_DUE)

        task.add_done_callback(done)

    async def run_once(self) -> int:
        """Claim what is due now, send it and record the outcomes (tests, the CLI)."""
        claimed = await self.claim(self.concurrency)
        outcomes = await asyncio.gather(*(self.send(item) for item in claimed))
        if outcomes:
            await self.record(list(outcomes))
        return len(outcomes)

    async def close(self) -> None:
        await self.sender.close()

    # -- claiming ---------------------------------------------------------------------------

    async def claim(self, limit: int) -> list[Claimed]:
        """Take up to ``limit`` due deliveries of active webhooks, oldest first, at most
        ``per_endpoint`` in flight per webhook, under a lease."""
        async with unit(self.services, self.sessions) as ctx:
            now = ctx.now()
            d = WebhookDelivery
            due = [
                d.state == "pending",
                d.next_attempt_at <= now,
                or_(d.lease_expires_at.is_(None), d.lease_expires_at <= now),
            ]
            busy = [hook for hook, count in self._in_flight.items() if count >= self.per_endpoint]
            # The oldest due rows (the due index); webhooks already at their cap are left out so
            # one webhook's backlog cannot crowd the others out of the window.
            candidates = (
                select(d.id, d.webhook_id)
                .join(Webhook, Webhook.id == d.webhook_id)
                .where(*due, Webhook.status == "active")
                .order_by(d.next_attempt_at)
                .limit(limit * 4)
            )
            if busy:
                candidates = candidates.where(d.webhook_id.not_in(busy))
            rows = (await ctx.db.execute(candidates)).all()
            taken: list[str] = []
            room = Counter({hook: self.per_endpoint - n for hook, n in self._in_flight.items()})
            for delivery_id, hook_id in rows:
                if len(taken) < limit and room.get(hook_id, self.per_endpoint) > 0:
                    room[hook_id] = room.get(hook_id, self.per_endpoint) - 1
                    taken.append(delivery_id)
            # Due rows left behind (caps, capacity): claim again as soon as a slot frees.
            self._starved = len(taken) < len(rows) or bool(busy)
            if not taken:
                return []
            if ctx.db.get_bind().dialect.name == "postgresql":
                taken = list(
                    await ctx.db.scalars(
                        select(d.id).where(d.id.in_(taken), *due).with_for_update(skip_locked=True)
                    )
                )
            lease = now + timedelta(seconds=self.services.settings.webhook_lease_seconds)
            ids = list(
                await ctx.db.scalars(
                    update(d)
                    .where(d.id.in_(taken), *due)
                    .values(lease_owner=self.owner, lease_expires_at=lease)
                    .returning(d.id)
                )
            )
            if not ids:
                return []
            details = await ctx.db.execute(
                select(
                    d.id,
                    d.webhook_id,
                    d.event_id,
                    WebhookEvent.type,
                    d.attempts,
                    Webhook.url,
                    WebhookEvent.body,
                    Webhook.secret_enc,
                    Webhook.previous_secret_enc,
                    Webhook.previous_secret_until,
                )
                .join(WebhookEvent, WebhookEvent.id == d.event_id)
                .join(Webhook, Webhook.id == d.webhook_id)
                .where(d.id.in_(ids))
            )
            return [Claimed(*row) for row in details.all()]  # type: ignore[call-arg]

    # -- sending ----------------------------------------------------------------------------

    async def send(self, claimed: Claimed) -> Outcome:
        now = self.services.clock.now()
        try:
            secrets = signing_secrets(
                self.services.keyring,
                claimed.webhook_id,
                claimed.secret_enc,
                claimed.previous_secret_enc,
                claimed.previous_secret_until,
                now,
            )
        except SecretUnreadableError:
            result = PostResult(None, "secret unreadable: rotate the webhook's secret", 0)
        else:
            body = claimed.body.encode()
            headers = standard_headers(secrets, claimed.event_id, now, body)
            result = await self.sender.post(claimed.url, headers, body)
        return Outcome(claimed, result, now)

    async def _deliver(self, claimed: Claimed) -> None:
        await self._outcomes.put(await self.send(claimed))

    # -- recording --------------------------------------------------------------------------

    async def _write_forever(self) -> None:
        while True:
            batch = [await self._outcomes.get()]
            while len(batch) < _BATCH and not self._outcomes.empty():
                batch.append(self._outcomes.get_nowait())
            try:
                await self.record(batch)
            except Exception:
                # Unrecorded: the leases run out and these are sent again (same webhook-id).
                _log.exception("webhook_record_failed", outcomes=len(batch))

    async def record(self, outcomes: list[Outcome]) -> None:
        """Write attempts, delivery states and webhook failure counts in one transaction
        (a few statements per batch, not per outcome)."""
        async with unit(self.services, self.sessions) as ctx:
            now = ctx.now()
            hooks = {o.claimed.webhook_id for o in outcomes}
            existing = set(await ctx.db.scalars(select(Webhook.id).where(Webhook.id.in_(hooks))))
            outcomes = [o for o in outcomes if o.claimed.webhook_id in existing]
            if not outcomes:
                return
            changes: list[dict[str, object]] = []
            attempts: list[dict[str, object]] = []
            for outcome in outcomes:
                state, label, next_at = _next_state(outcome, now)
                changes.append(
                    {
                        "b_id": outcome.claimed.delivery_id,
                        "b_state": state,
                        "b_attempts": outcome.claimed.attempts + 1,
                        # An ended delivery keeps no next attempt but its end time.
                        "b_next": next_at or now,
                        "b_ended": None if next_at else now,
                    }
                )
                result = outcome.result
                attempts.append(
                    {
                        "id": new_id("att"),
                        "webhook_id": outcome.claimed.webhook_id,
                        "event_id": outcome.claimed.event_id,
                        "event_type": outcome.claimed.event_type,
                        "attempted_at": outcome.at,
                        "status": result.status,
                        "latency_ms": result.latency_ms,
                        "error": result.error,
                        "outcome": label,
                    }
                )
            d = _DELIVERIES.c
            # Only rows still leased to this process and pending (a deleted webhook's, or one
            # dropped meanwhile, stay as they are).
            await ctx.db.execute(
                update(_DELIVERIES)
                .where(d.id == bindparam("b_id"), d.lease_owner == self.owner, d.state == "pending")
                .values(
                    state=bindparam("b_state"),
                    attempts=bindparam("b_attempts"),
                    next_attempt_at=bindparam("b_next"),
                    ended_at=bindparam("b_ended"),
                    lease_owner=None,
                    lease_expires_at=None,
                ),
                changes,
            )
            await ctx.db.execute(insert(_ATTEMPTS), attempts)
            for webhook_id in dict.fromkeys(o.claimed.webhook_id for o in outcomes):
                await self._account(
                    ctx, webhook_id, [o for o in outcomes if o.claimed.webhook_id == webhook_id]
                )

    async def _account(self, ctx: Ctx, webhook_id: str, outcomes: list[Outcome]) -> None:
        """spec: "Delivery" 4-5 - success clears the failure run; 410 turns the webhook off
        (`gone`); 20 failures in a row turn it off (`unreachable`); 413 is neither."""
        w = _WEBHOOKS.c
        current = await ctx.db.scalar(
            select(w.consecutive_failures).where(w.id == webhook_id).with_for_update()
        )
        running = peak = current or 0
        last_delivery, gone = None, False
        for outcome in outcomes:  # in the order they finished
            result = outcome.result
            if result.delivered:
                running, last_delivery = 0, outcome.at
            elif result.status == 410:
                gone = True
            elif result.status != 413:
                running += 1
                peak = max(peak, running)
        if gone:
            if await disable_webhook(ctx, webhook_id, "gone"):
                _log.info("webhook_disabled", webhook_id=webhook_id, reason="gone")
            return
        values: dict[str, object] = {"consecutive_failures": running}
        if last_delivery is not None:
            values["last_delivery_at"] = last_delivery
        await ctx.db.execute(update(_WEBHOOKS).where(w.id == webhook_id).values(**values))
        if peak >= FAILURES_BEFORE_DISABLE and await disable_webhook(
            ctx, webhook_id, "unreachable"
        ):
            _log.info("webhook_disabled", webhook_id=webhook_id, reason="unreachable")


def _next_state(outcome: Outcome, now: datetime) -> tuple[str, str, datetime | None]:
    """(delivery state, attempt outcome, next attempt time or None once it ended)."""
    result = outcome.result
    attempts = outcome.claimed.attempts + 1
    if result.delivered:
        return "delivered", "delivered", None
    if result.status == 413:
        return "dropped", "dropped", None
    if result.status == 410:
        return "failed", "disabled", None
    if attempts > len(RETRY_AFTER):
        return "failed", "failed", None
    return "pending", "retrying", now + RETRY_AFTER[attempts - 1]


# Ended deliveries, their events and attempts are kept this long (replay, the attempts list).
RETENTION = timedelta(days=7)
ATTEMPTS_KEPT = 100


async def prune(ctx: Ctx) -> int:
    """Forget what is older than the retention: ended deliveries, events nobody still needs,
    attempts beyond the last 100 of each webhook."""
    cutoff = ctx.now() - RETENTION
    d, e, a = WebhookDelivery, WebhookEvent, WebhookAttempt
    removed = await ctx.db.execute(delete(d).where(d.state != "pending", d.ended_at < cutoff))
    await ctx.db.execute(
        delete(e).where(e.created_at < cutoff, ~select(d.id).where(d.event_id == e.id).exists())
    )
    ranked = select(
        a.id.label("id"),
        func.row_number()
        .over(partition_by=a.webhook_id, order_by=(a.attempted_at.desc(), a.id.desc()))
        .label("rank"),
    ).subquery()
    await ctx.db.execute(
        delete(a).where(
            or_(
                a.attempted_at < cutoff,
                a.id.in_(select(ranked.c.id).where(ranked.c.rank > ATTEMPTS_KEPT)),
            )
        )
    )
    return int(removed.rowcount or 0)  # type: ignore[attr-defined]
