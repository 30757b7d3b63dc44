"""Rules of webhooks (spec: "Webhooks" rules 1-7, "Webhook status"; decisions: "Webhooks")."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update

from sitetools.accounts.service import current_members, lock_membership
from sitetools.auth.caller import Caller
from sitetools.auth.permissions import Role
from sitetools.core.addresses import AllowList
from sitetools.core.context import Ctx
from sitetools.core.errors import ServiceError
from sitetools.core.ids import new_id
from sitetools.core.pagination import newest_first
from sitetools.webhooks.dispatcher import disable_webhook
from sitetools.webhooks.models import Webhook, WebhookAttempt, WebhookDelivery
from sitetools.webhooks.outbox import envelope_body, wake
from sitetools.webhooks.schemas import (
    JOB_EVENTS,
    AttemptOut,
    AttemptPage,
    CreatedBy,
    CreateWebhookIn,
    PatchWebhookIn,
    ReplayOut,
    TestOut,
    WebhookOut,
    WebhookPage,
    WebhookWithSecret,
)
from sitetools.webhooks.signing import (
    SecretUnreadableError,
    new_signing_secret,
    open_secret,
    seal_secret,
    signing_secrets,
    standard_headers,
)
from sitetools.webhooks.transport import Sender
from sitetools.webhooks.urls import check_webhook_url

__all__ = [
    "ROTATION_OVERLAP",
    "WEBHOOKS_PER_MEMBER",
    "create_webhook",
    "delete_webhook",
    "get_webhook",
    "list_attempts",
    "list_webhooks",
    "patch_webhook",
    "replay_event",
    "require_webhooks",
    "rotate_secret",
    "test_webhook",
]

WEBHOOKS_PER_MEMBER = 20  # spec: "Limits"
ROTATION_OVERLAP = timedelta(hours=24)  # spec: "Limits" - both secrets sign for 24 hours


def require_webhooks(ctx: Ctx) -> None:
    """spec: 403 ``webhooks_unavailable`` where configuration switches webhooks off."""
    if not ctx.settings.webhooks_enabled:
        raise ServiceError("webhooks_unavailable")


def _sees_all(caller: Caller) -> bool:
    """spec: a Business owner or admin sees (and may delete) every member's webhooks."""
    return caller.account_type == "business" and caller.role in (Role.OWNER, Role.ADMIN)


def _allow(ctx: Ctx) -> AllowList:
    return AllowList.parse(ctx.settings.webhook_allow)


def _out(hook: Any, members: dict[str, tuple[str, str]]) -> WebhookOut:
    creator = members.get(hook.membership_id)
    return WebhookOut(
        id=hook.id,
        created_by=CreatedBy(user_id=creator[0], email=creator[1]) if creator else None,
        url=hook.url,
        events=list(hook.events),
        status=hook.status,
        disabled_reason=hook.disabled_reason,
        created_at=hook.created_at,
        last_delivery_at=hook.last_delivery_at,
    )


async def _one_out(ctx: Ctx, hook: Webhook) -> WebhookOut:
    return _out(hook, await current_members(ctx, {hook.membership_id}))


async def _load(ctx: Ctx, caller: Caller, webhook_id: str, *, lock: bool = False) -> Webhook:
    """A webhook the caller may see: their own, or any of the account's for an admin view.
    spec rule 4 - other members' webhooks are 404 for everybody else."""
    query = select(Webhook).where(Webhook.id == webhook_id, Webhook.account_id == caller.account_id)
    if lock:
        query = query.with_for_update()
    hook = await ctx.db.scalar(query)
    if hook is None or (hook.membership_id != caller.membership_id and not _sees_all(caller)):
        raise ServiceError("not_found", resource="webhook")
    return hook


def _require_creator(caller: Caller, hook: Webhook) -> None:
    """spec rule 4 - only the creator changes, tests or rotates a webhook."""
    if hook.membership_id != caller.membership_id:
        raise ServiceError(
            "forbidden", "Only the webhook's creator can do this.", reason="not_creator"
        )


async def list_webhooks(ctx: Ctx, caller: Caller, cursor: str | None, limit: int) -> WebhookPage:
    require_webhooks(ctx)
    query = select(Webhook)
    if _sees_all(caller):
        query = query.where(Webhook.account_id == caller.account_id)
    else:
        query = query.where(Webhook.membership_id == caller.membership_id)
    page, next_cursor = await newest_first(
        ctx.db, query, Webhook.created_at, Webhook.id, cursor, limit
    )
    members = await current_members(ctx, {hook.membership_id for hook in page})
    return WebhookPage(
        data=[_out(hook, members) for hook in page],
        next_cursor=next_cursor,
    )


async def create_webhook(ctx: Ctx, caller: Caller, data: CreateWebhookIn) -> WebhookWithSecret:
    require_webhooks(ctx)
    url = await check_webhook_url(data.url, _allow(ctx))
    await lock_membership(ctx, caller.membership_id)
    held = await ctx.db.scalar(
        select(func.count())
        .select_from(Webhook)
        .where(Webhook.membership_id == caller.membership_id)
    )
    if (held or 0) >= WEBHOOKS_PER_MEMBER:
        raise ServiceError("webhook_limit_reached", limit=WEBHOOKS_PER_MEMBER)
    now = ctx.now()
    secret = new_signing_secret()
    hook_id = new_id("wh")
    hook = Webhook(
        id=hook_id,
        account_id=caller.account_id,
        membership_id=caller.membership_id,
        user_id=caller.user_id,
        url=url,
        events=list(data.events) if data.events is not None else list(JOB_EVENTS),
        status="active",
        disabled_reason=None,
        secret_enc=seal_secret(ctx.keyring, hook_id, secret),
        consecutive_failures=0,
        created_at=now,
        updated_at=now,
    )
    ctx.db.add(hook)
    await ctx.db.flush()
    out = await _one_out(ctx, hook)
    return WebhookWithSecret(**out.model_dump(), secret=secret)


async def get_webhook(ctx: Ctx, caller: Caller, webhook_id: str) -> WebhookOut:
    require_webhooks(ctx)
    return await _one_out(ctx, await _load(ctx, caller, webhook_id))


async def patch_webhook(
    ctx: Ctx, caller: Caller, webhook_id: str, data: PatchWebhookIn
) -> WebhookOut:
    require_webhooks(ctx)
    hook = await _load(ctx, caller, webhook_id, lock=True)
    _require_creator(caller, hook)
    if data.url is not None:
        hook.url = await check_webhook_url(data.url, _allow(ctx))
    if data.events is not None:
        hook.events = list(data.events)
    if data.status == "active":
        # spec: "Webhook status" - on again, failure count cleared; new events delivered.
        hook.status, hook.disabled_reason, hook.consecutive_failures = "active", None, 0
    hook.updated_at = ctx.now()
    await ctx.db.flush()
    if data.status == "disabled" and await disable_webhook(ctx, hook.id, "manual"):
        await ctx.db.refresh(hook)
    return await _one_out(ctx, hook)


async def delete_webhook(ctx: Ctx, caller: Caller, webhook_id: str) -> None:
    """spec: the creator, or a Business owner or admin; undelivered events are dropped."""
    require_webhooks(ctx)
    hook = await _load(ctx, caller, webhook_id, lock=True)
    await ctx.db.delete(hook)
    await ctx.db.flush()


async def rotate_secret(ctx: Ctx, caller: Caller, webhook_id: str) -> WebhookWithSecret:
    """A new secret, once; the old one keeps signing (beside it) for 24 hours. An unreadable
    old secret is simply replaced (that is how ``webhook_secret_unreadable`` is fixed)."""
    require_webhooks(ctx)
    hook = await _load(ctx, caller, webhook_id, lock=True)
    _require_creator(caller, hook)
    now = ctx.now()
    secret = new_signing_secret()
    try:
        open_secret(ctx.keyring, hook.id, hook.secret_enc)
        readable = True
    except SecretUnreadableError:  # the old secret cannot sign anything: do not keep it
        readable = False
    hook.previous_secret_enc = hook.secret_enc if readable else None
    hook.previous_secret_until = now + ROTATION_OVERLAP if readable else None
    hook.secret_enc = seal_secret(ctx.keyring, hook.id, secret)
    hook.updated_at = now
    await ctx.db.flush()
    out = await _one_out(ctx, hook)
    return WebhookWithSecret(**out.model_dump(), secret=secret)


async def test_webhook(ctx: Ctx, caller: Caller, webhook_id: str) -> TestOut:
    """spec: one signed ``webhook.test`` now; not retried, not counted toward turning off."""
    require_webhooks(ctx)
    hook = await _load(ctx, caller, webhook_id)
    _require_creator(caller, hook)
    now = ctx.now()
    event_id = new_id("evt")
    body = envelope_body(event_id, "webhook.test", now, {"webhook_id": hook.id})
    try:
        secrets = signing_secrets(
            ctx.keyring,
            hook.id,
            hook.secret_enc,
            hook.previous_secret_enc,
            hook.previous_secret_until,
            now,
        )
    except SecretUnreadableError:
        raise ServiceError("webhook_secret_unreadable", webhook_id=hook.id) from None
    headers = standard_headers(secrets, event_id, now, body.encode())
    sender = Sender(ctx.settings, max_connections=1)
    try:
        result = await sender.post(hook.url, headers, body.encode())
    finally:
        await sender.close()
    ctx.db.add(
        WebhookAttempt(
            id=new_id("att"),
            webhook_id=hook.id,
            event_id=event_id,
            event_type="webhook.test",
            attempted_at=now,
            status=result.status,
            latency_ms=result.latency_ms,
            error=result.error,
            outcome="test",
        )
    )
    await ctx.db.flush()
    return TestOut(delivered=result.delivered, status=result.status, failure=result.error)


async def list_attempts(
    ctx: Ctx, caller: Caller, webhook_id: str, cursor: str | None, limit: int
) -> AttemptPage:
    """The webhook's delivery attempts, newest first (its creator only)."""
    require_webhooks(ctx)
    hook = await _load(ctx, caller, webhook_id)
    _require_creator(caller, hook)
    a = WebhookAttempt
    page, next_cursor = await newest_first(
        ctx.db,
        select(a).where(a.webhook_id == hook.id),
        a.attempted_at,
        a.id,
        cursor,
        limit,
    )
    return AttemptPage(
        data=[
            AttemptOut(
                id=row.id,
                event_id=row.event_id,
                event_type=row.event_type,
                attempted_at=row.attempted_at,
                status=row.status,
                latency_ms=row.latency_ms,
                error=row.error,
                outcome=row.outcome,
            )
            for row in page
        ],
        next_cursor=next_cursor,
    )


async def replay_event(ctx: Ctx, caller: Caller, webhook_id: str, event_id: str) -> ReplayOut:
    """Send an event again from the start of the retry ladder, with the same ``webhook-id``
    (our extension: the spec's ladder gives up after about 14 minutes)."""
    require_webhooks(ctx)
    hook = await _load(ctx, caller, webhook_id, lock=True)
    _require_creator(caller, hook)
    d = WebhookDelivery
    delivery = await ctx.db.scalar(
        select(d).where(d.webhook_id == hook.id, d.event_id == event_id).with_for_update()
    )
    if delivery is None:
        raise ServiceError("not_found", resource="event")
    if delivery.state != "pending":
        await ctx.db.execute(
            update(d)
            .where(d.id == delivery.id)
            .values(
                state="pending",
                attempts=0,
                next_attempt_at=ctx.now(),
                lease_owner=None,
                lease_expires_at=None,
                ended_at=None,
            )
        )
        await wake(ctx)
    return ReplayOut(webhook_id=hook.id, event_id=event_id, state="pending")
