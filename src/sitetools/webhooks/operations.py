"""Webhook operations (spec: "Webhooks"; our extensions: attempts and replay)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sitetools.auth.permissions import CallerKind, Permission
from sitetools.operations.registry import Operation, OpRequest
from sitetools.webhooks import service
from sitetools.webhooks.schemas import (
    AttemptPage,
    CreateWebhookIn,
    EventPath,
    ListAttemptsQuery,
    ListWebhooksQuery,
    PatchWebhookIn,
    ReplayOut,
    TestOut,
    WebhookOut,
    WebhookPage,
    WebhookPath,
    WebhookWithSecret,
)

__all__ = ["OPERATIONS"]

Req = OpRequest[Any, Any, Any]
# spec: "Webhooks" - an integration key is refused with 403.
_CALLERS: tuple[CallerKind, ...] = ("session", "oauth", "api_key")
_ERRORS = ("webhooks_unavailable", "not_found")


async def _list(req: Req) -> BaseModel:
    return await service.list_webhooks(req.ctx, req.user, req.query.cursor, req.query.limit)


async def _create(req: Req) -> BaseModel:
    return await service.create_webhook(req.ctx, req.user, req.body)


async def _get(req: Req) -> BaseModel:
    return await service.get_webhook(req.ctx, req.user, req.path.id)


async def _patch(req: Req) -> BaseModel:
    return await service.patch_webhook(req.ctx, req.user, req.path.id, req.body)


async def _delete(req: Req) -> None:
    await service.delete_webhook(req.ctx, req.user, req.path.id)


async def _test(req: Req) -> BaseModel:
    return await service.test_webhook(req.ctx, req.user, req.path.id)


async def _rotate(req: Req) -> BaseModel:
    return await service.rotate_secret(req.ctx, req.user, req.path.id)


async def _attempts(req: Req) -> BaseModel:
    query = req.query
    return await service.list_attempts(req.ctx, req.user, req.path.id, query.cursor, query.limit)


async def _replay(req: Req) -> BaseModel:
    return await service.replay_event(req.ctx, req.user, req.path.id, req.path.event_id)


def _op(operation_id: str, method: str, path: str, summary: str, **fields: Any) -> Operation:
    return Operation(
        operation_id=f"webhooks.{operation_id}",
        method=method,
        path=path,
        summary=summary,
        callers=_CALLERS,
        permission=Permission.JOBS_READ,
        **fields,
    )


OPERATIONS = [
    _op(
        "list",
        "GET",
        "/v1/webhooks",
        "Webhooks, newest first: the caller's own, or every member's for a Business owner or "
        "admin (never a secret)",
        effect="read",
        handler=_list,
        query_model=ListWebhooksQuery,
        responses={200: WebhookPage},
        errors=("webhooks_unavailable",),
    ),
    _op(
        "create",
        "POST",
        "/v1/webhooks",
        "Create a webhook for the caller's job events; the signing secret is shown once",
        description="`url` must be HTTPS without username, password or fragment and resolve "
        "to public addresses only. `events` omitted means the four job events. At most 20 "
        "webhooks per member.",
        effect="write",
        handler=_create,
        body_model=CreateWebhookIn,
        responses={201: WebhookWithSecret},
        errors=("webhooks_unavailable", "webhook_limit_reached"),
    ),
    _op(
        "get",
        "GET",
        "/v1/webhooks/{id}",
        "A webhook: the caller's own, or any member's for a Business owner or admin",
        effect="read",
        handler=_get,
        path_model=WebhookPath,
        responses={200: WebhookOut},
        errors=_ERRORS,
    ),
    _op(
        "update",
        "PATCH",
        "/v1/webhooks/{id}",
        "Change a webhook's URL, events or status (its creator only)",
        description="`status: disabled` sets `disabled_reason: manual`; `status: active` turns "
        "it on again and clears the failure count. Events queued while it was off are not "
        "sent (replay them).",
        effect="write",
        handler=_patch,
        path_model=WebhookPath,
        body_model=PatchWebhookIn,
        responses={200: WebhookOut},
        errors=_ERRORS,
    ),
    _op(
        "delete",
        "DELETE",
        "/v1/webhooks/{id}",
        "Delete a webhook; its undelivered events are dropped",
        description="Its creator, or a Business owner or admin.",
        effect="destructive",
        handler=_delete,
        path_model=WebhookPath,
        responses={204: None},
        errors=_ERRORS,
    ),
    _op(
        "test",
        "POST",
        "/v1/webhooks/{id}/test",
        "Send one signed `webhook.test` event now (not retried, not counted)",
        effect="write",
        handler=_test,
        path_model=WebhookPath,
        body_required=False,
        responses={200: TestOut},
        errors=(*_ERRORS, "webhook_secret_unreadable"),
    ),
    _op(
        "rotate_secret",
        "POST",
        "/v1/webhooks/{id}/rotate-secret",
        "Replace the signing secret (shown once); both sign every delivery for 24 hours",
        effect="write",
        handler=_rotate,
        path_model=WebhookPath,
        body_required=False,
        responses={200: WebhookWithSecret},
        errors=_ERRORS,
    ),
    _op(
        "attempts",
        "GET",
        "/v1/webhooks/{id}/attempts",
        "The webhook's recent delivery attempts, newest first (its creator only)",
        description="Each attempt's HTTP status, latency and error; kept for 7 days, the "
        "last 100 per webhook. Our extension.",
        effect="read",
        handler=_attempts,
        path_model=WebhookPath,
        query_model=ListAttemptsQuery,
        responses={200: AttemptPage},
        errors=_ERRORS,
    ),
    _op(
        "replay",
        "POST",
        "/v1/webhooks/{id}/events/{event_id}/replay",
        "Send an event to this webhook again, with the same `webhook-id` (its creator only)",
        description="Starts the retry ladder again for an event that was delivered, given up "
        "or dropped (kept 7 days). Our extension.",
        effect="write",
        handler=_replay,
        path_model=EventPath,
        body_required=False,
        responses={202: ReplayOut},
        errors=_ERRORS,
    ),
]
