"""Wire models of webhooks (spec: "Webhook", "Webhooks"; decisions: "Webhooks")."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sitetools.core.pagination import PageQuery

__all__ = [
    "JOB_EVENTS",
    "AttemptOut",
    "AttemptPage",
    "CreateWebhookIn",
    "CreatedBy",
    "EventPath",
    "ListAttemptsQuery",
    "ListWebhooksQuery",
    "PatchWebhookIn",
    "ReplayOut",
    "TestOut",
    "WebhookOut",
    "WebhookPage",
    "WebhookPath",
    "WebhookWithSecret",
]

# spec: "Event types" - what a webhook can subscribe to (webhook.test is always sent on request).
JOB_EVENTS = ("job.needs_input", "job.input_expiring", "job.succeeded", "job.failed")
EventType = Literal["job.needs_input", "job.input_expiring", "job.succeeded", "job.failed"]


class CreatedBy(BaseModel):
    user_id: str
    email: str


class WebhookOut(BaseModel):
    id: str
    created_by: CreatedBy | None = Field(
        description="Null once the account no longer has the creator."
    )
    url: str
    events: list[str]
    status: Literal["active", "disabled"]
    disabled_reason: Literal["manual", "gone", "unreachable"] | None
    created_at: datetime
    last_delivery_at: datetime | None = Field(
        description="When an event was last delivered (answered 2xx)."
    )


class WebhookWithSecret(WebhookOut):
    secret: str = Field(description="`whsec_` + base64; shown once, kept only encrypted.")


class WebhookPage(BaseModel):
    data: list[WebhookOut]
    next_cursor: str | None


class ListWebhooksQuery(PageQuery):
    pass


class ListAttemptsQuery(PageQuery):
    pass


class WebhookPath(BaseModel):
    id: str


class EventPath(BaseModel):
    id: str
    event_id: str


def _unique(events: list[EventType] | None) -> list[EventType] | None:
    return None if events is None else list(dict.fromkeys(events))


class CreateWebhookIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=2000, description="HTTPS, public address.")
    events: list[EventType] | None = Field(
        default=None,
        min_length=1,
        description="Omitted: all four job events; otherwise a subset of them.",
    )

    _dedupe = field_validator("events")(_unique)


class PatchWebhookIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, min_length=1, max_length=2000)
    events: list[EventType] | None = Field(default=None, min_length=1)
    status: Literal["active", "disabled"] | None = None

    _dedupe = field_validator("events")(_unique)


class TestOut(BaseModel):
    delivered: bool
    status: int | None = Field(description="The receiver's HTTP status; null without one.")
    failure: str | None = Field(description="Why it was not delivered; null when delivered.")


class AttemptOut(BaseModel):
    id: str
    event_id: str
    event_type: str
    attempted_at: datetime
    status: int | None
    latency_ms: int
    error: str | None
    outcome: Literal["delivered", "retrying", "failed", "dropped", "disabled", "test"]


class AttemptPage(BaseModel):
    data: list[AttemptOut]
    next_cursor: str | None


class ReplayOut(BaseModel):
    webhook_id: str
    event_id: str
    state: Literal["pending"]
