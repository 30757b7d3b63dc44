"""The API key table. Only an HMAC digest of a secret is stored."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from sitetools.core.db import Base, JSONList, UTCDateTime

__all__ = ["ApiKey"]


class ApiKey(Base):
    __tablename__ = "api_keys"
    __table_args__ = (Index("ix_api_keys_membership_created", "membership_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    token_digest: Mapped[str] = mapped_column(String(64), unique=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    membership_id: Mapped[str] = mapped_column(ForeignKey("memberships.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    permissions: Mapped[list[str]] = mapped_column(JSONList())
    integration_id: Mapped[str | None] = mapped_column(
        ForeignKey("integrations.id", ondelete="CASCADE")
    )
    purpose: Mapped[str | None] = mapped_column(String(16))
    secret_hint: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
