"""Quota counters (one row per account, counter and period) and reservations."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from sitetools.core.db import Base, UTCDateTime

__all__ = ["QuotaCounter", "QuotaReservation"]


class QuotaCounter(Base):
    __tablename__ = "quota_counters"

    account_id: Mapped[str] = mapped_column(
        ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True
    )
    counter: Mapped[str] = mapped_column(String(32), primary_key=True)
    period_start: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)
    used: Mapped[int] = mapped_column(default=0)
    reserved: Mapped[int] = mapped_column(default=0)


class QuotaReservation(Base):
    __tablename__ = "quota_reservations"
    __table_args__ = (Index("ix_quota_reservations_state_expires", "state", "expires_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    counter: Mapped[str] = mapped_column(String(32))
    period_start: Mapped[datetime] = mapped_column(UTCDateTime())
    state: Mapped[str] = mapped_column(String(16))  # reserved | committed | released
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
