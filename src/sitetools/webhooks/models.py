"""Webhooks, their events (the transactional outbox) and the deliveries the dispatcher claims."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from sitetools.core.db import Base, JSONList, UTCDateTime

__all__ = ["Webhook", "WebhookAttempt", "WebhookDelivery", "WebhookEvent"]


class Webhook(Base):
    __tablename__ = "webhooks"
    __table_args__ = (Index("ix_webhooks_member_status", "membership_id", "status"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # spec rule 6: account deletion deletes it; a creator who leaves keeps it working.
    account_id: Mapped[str] = mapped_column(
        ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    membership_id: Mapped[str] = mapped_column(String(40))
    user_id: Mapped[str] = mapped_column(String(40))
    url: Mapped[str] = mapped_column(String(2000))
    events: Mapped[list[str]] = mapped_column(JSONList())
    status: Mapped[str] = mapped_column(String(16))  # active | disabled
    disabled_reason: Mapped[str | None] = mapped_column(String(16))
    # The signing secret, encrypted; during a rotation's overlap the previous one too.
    secret_enc: Mapped[bytes] = mapped_column(LargeBinary)
    previous_secret_enc: Mapped[bytes | None] = mapped_column(LargeBinary)
    previous_secret_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_delivery_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class WebhookEvent(Base):
    """One event as sent: the exact body, so every attempt and replay sends the same bytes."""

    __tablename__ = "webhook_events"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(
        ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    type: Mapped[str] = mapped_column(String(40))
    job_id: Mapped[str | None] = mapped_column(String(40))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class WebhookDelivery(Base):
    """One event for one webhook: a row the dispatcher claims under a lease."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_due", "state", "next_attempt_at"),
        Index("ix_webhook_deliveries_webhook_state", "webhook_id", "state"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    webhook_id: Mapped[str] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    event_id: Mapped[str] = mapped_column(
        ForeignKey("webhook_events.id", ondelete="CASCADE"), index=True
    )
    # pending | delivered | failed (gave up) | dropped (413, question closed, webhook off)
    state: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime())
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # A question's events stop when the question closes (spec: "Delivery" 3).
    request_id: Mapped[str | None] = mapped_column(String(40), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class WebhookAttempt(Base):
    """One HTTP attempt (or a test send), kept for the creator to read."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (Index("ix_webhook_attempts_webhook_at", "webhook_id", "attempted_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    webhook_id: Mapped[str] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    event_id: Mapped[str] = mapped_column(String(40))
    event_type: Mapped[str] = mapped_column(String(40))
    attempted_at: Mapped[datetime] = mapped_column(UTCDateTime())
    status: Mapped[int | None] = mapped_column(Integer)
    latency_ms: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String(200))
    # delivered | retrying | failed | dropped | disabled
    outcome: Mapped[str] = mapped_column(String(16))
