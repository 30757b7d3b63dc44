"""The integration table (the catalog issue extends it with tools and versions)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from sitetools.core.db import Base, UTCDateTime

__all__ = ["Integration"]


class Integration(Base):
    __tablename__ = "integrations"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # None for a public integration owned by the service; else the account it is private to.
    account_id: Mapped[str | None] = mapped_column(
        ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    visibility: Mapped[str] = mapped_column(String(16))  # public | private
    name: Mapped[str] = mapped_column(String(200))
    site_url: Mapped[str] = mapped_column(String(2000))
    domain: Mapped[str] = mapped_column(String(255), index=True)
    status: Mapped[str] = mapped_column(String(16), default="active")  # active | disabled
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
