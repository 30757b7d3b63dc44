"""One-time tokens: a nonce spent once is refused forever after."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from sitetools.core.db import Base, UTCDateTime

__all__ = ["SpentNonce", "spend_nonce"]


class SpentNonce(Base):
    __tablename__ = "spent_nonces"

    nonce: Mapped[str] = mapped_column(String(80), primary_key=True)
    spent_at: Mapped[datetime] = mapped_column(UTCDateTime())


async def spend_nonce(db: AsyncSession, nonce: str, now: datetime) -> bool:
    """True the first time ``nonce`` is spent, False on any later try (even a concurrent one)."""
    if await db.get(SpentNonce, nonce) is not None:
        return False
    try:
        async with db.begin_nested():
            db.add(SpentNonce(nonce=nonce, spent_at=now))
    except IntegrityError:
        return False
    return True
