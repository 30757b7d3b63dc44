"""Device sign-ins (decisions: "MCP" - device sign-in)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from sitetools.core.db import Base, UTCDateTime

__all__ = ["DeviceSignIn"]


class DeviceSignIn(Base):
    __tablename__ = "device_sign_ins"
    __table_args__ = (
        Index("ix_device_sign_ins_user_code", "user_code"),
        Index("ix_device_sign_ins_network_created", "network", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    user_code: Mapped[str] = mapped_column(String(16))
    network: Mapped[str] = mapped_column(String(64))
    client_name: Mapped[str] = mapped_column(String(100))
    # pending → approved → delivered (the key handed out once) | denied | (expired by time)
    status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    account_id: Mapped[str | None] = mapped_column(String(40))
    membership_id: Mapped[str | None] = mapped_column(String(40))
    key_id: Mapped[str | None] = mapped_column(String(40))
    # The approved key's secret, encrypted, until the first poll after approval takes it.
    secret_enc: Mapped[bytes | None] = mapped_column(LargeBinary)
