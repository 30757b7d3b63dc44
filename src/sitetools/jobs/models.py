"""Jobs and their input requests (questions). Results, inputs and answers are stored encrypted."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from sitetools.core.db import Base, UTCDateTime

__all__ = ["InputRequest", "Job", "KeylessRunCount"]


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        UniqueConstraint("client_id", "retry_key"),
        Index("ix_jobs_member_type_created", "membership_id", "type", "created_at"),
        Index("ix_jobs_status_created", "status", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    type: Mapped[str] = mapped_column(String(8))  # run | build
    build_kind: Mapped[str | None] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    stage: Mapped[str] = mapped_column(String(32))
    # None for a keyless run (decisions: "Keyless runs"): its client is its network.
    account_id: Mapped[str | None] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    membership_id: Mapped[str | None] = mapped_column(String(40))
    user_id: Mapped[str | None] = mapped_column(String(40))
    # decisions: "Jobs" - the client that started it (dashboard, key ID, OAuth app ID), origin.
    client_id: Mapped[str] = mapped_column(String(40), index=True)
    origin: Mapped[str] = mapped_column(String(16))  # dashboard | rest | mcp
    question_delivery: Mapped[str] = mapped_column(String(8))  # agent | form
    tool_id: Mapped[str | None] = mapped_column(String(40))
    tool_version_id: Mapped[str | None] = mapped_column(String(40))
    tool_name: Mapped[str | None] = mapped_column(String(200))
    integration_id: Mapped[str | None] = mapped_column(String(40))
    site_url: Mapped[str] = mapped_column(String(2000))
    site_name: Mapped[str] = mapped_column(String(200))
    effect: Mapped[str] = mapped_column(String(8))
    budget_seconds: Mapped[int] = mapped_column(Integer)
    input_enc: Mapped[bytes | None] = mapped_column(LargeBinary)
    task_enc: Mapped[bytes | None] = mapped_column(LargeBinary)
    connected_account_id: Mapped[str | None] = mapped_column(String(40))
    retry_key: Mapped[str | None] = mapped_column(String(200))
    request_digest: Mapped[str | None] = mapped_column(String(64))
    quota_reservation_id: Mapped[str | None] = mapped_column(String(40))
    question: Mapped[str | None] = mapped_column(Text)
    waiting_since: Mapped[datetime | None] = mapped_column(UTCDateTime())
    input_version: Mapped[int] = mapped_column(Integer, default=0)
    # Execution bookkeeping (worker side).
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    reached_site: Mapped[bool] = mapped_column(Boolean, default=False)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), index=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The end: an error code (failed, cancelled) and its details; the result, once.
    error_code: Mapped[str | None] = mapped_column(String(64))
    error_details: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    customer_message: Mapped[str | None] = mapped_column(Text)
    result_enc: Mapped[bytes | None] = mapped_column(LargeBinary)
    result_state: Mapped[str | None] = mapped_column(String(16))  # kept | read | erased
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class InputRequest(Base):
    """One question round of a job (spec: "Input request of a job")."""

    __tablename__ = "input_requests"
    __table_args__ = (Index("ix_input_requests_state_expires", "state", "expires_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))  # pending | answered | expired | closed
    delivery: Mapped[str] = mapped_column(String(16))  # agent | form | protected
    questions: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    declined: Mapped[bool] = mapped_column(Boolean, default=False)
    cancelled: Mapped[bool] = mapped_column(Boolean, default=False)
    expiring_sent: Mapped[bool] = mapped_column(Boolean, default=False)
    # Encrypted until the worker hands them to the tool, then cleared.
    answers_enc: Mapped[bytes | None] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    answered_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class KeylessRunCount(Base):
    """Keyless runs counted per UTC day, per network and over all networks (``*``)."""

    __tablename__ = "keyless_run_counts"

    day: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)
    network: Mapped[str] = mapped_column(String(64), primary_key=True)
    used: Mapped[int] = mapped_column(Integer, default=0)
