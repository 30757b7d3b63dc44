"""Tables of identity: accounts, users, memberships, sessions, sign-in throttling."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from sitetools.core.db import Base, UTCDateTime

__all__ = [
    "Account",
    "ConnectionPreference",
    "DashboardSession",
    "Membership",
    "SignInAttempt",
    "User",
]


class Account(Base):
    __tablename__ = "accounts"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    type: Mapped[str] = mapped_column(String(16))  # personal | business | service
    name: Mapped[str] = mapped_column(String(200))
    plan: Mapped[str | None] = mapped_column(String(16))  # free | premium for personal accounts
    status: Mapped[str] = mapped_column(String(24), default="active")
    question_delivery: Mapped[str] = mapped_column(String(8), default="agent")
    # Business and service accounts are unlimited unless these are set.
    daily_tool_calls_limit: Mapped[int | None] = mapped_column(default=None)
    monthly_integrations_limit: Mapped[int | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class User(Base):
    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(200))
    first_name: Mapped[str] = mapped_column(String(100), default="")
    last_name: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Membership(Base):
    """A user's place in an account; ``ended_at`` set once they left a Business account."""

    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("account_id", "user_id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(16))
    build_emails: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class DashboardSession(Base):
    __tablename__ = "dashboard_sessions"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    token_digest: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    membership_id: Mapped[str] = mapped_column(ForeignKey("memberships.id", ondelete="CASCADE"))
    signed_in_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class SignInAttempt(Base):
    """A failed password sign-in, kept for throttling (by email and by network)."""

    __tablename__ = "sign_in_attempts"
    __table_args__ = (
        Index("ix_sign_in_attempts_email_at", "email", "at"),
        Index("ix_sign_in_attempts_network_at", "network", "at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    email: Mapped[str] = mapped_column(String(320))
    network: Mapped[str] = mapped_column(String(64))
    at: Mapped[datetime] = mapped_column(UTCDateTime())


class ConnectionPreference(Base):
    """Per-connection override of ``question_delivery`` (an API key or an OAuth app)."""

    __tablename__ = "connection_preferences"

    membership_id: Mapped[str] = mapped_column(
        ForeignKey("memberships.id", ondelete="CASCADE"), primary_key=True
    )
    connection_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))  # api_key | oauth_app
    question_delivery: Mapped[str] = mapped_column(String(8))
