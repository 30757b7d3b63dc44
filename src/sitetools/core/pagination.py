"""Opaque keyset cursors for newest-first lists (stable under concurrent inserts)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, field_validator
from sqlalchemy import and_, or_
from sqlalchemy.ext.asyncio import AsyncSession

from sitetools.core.clock import utc
from sitetools.core.errors import ServiceError

__all__ = [
    "Cursor",
    "PageQuery",
    "decode_cursor",
    "decode_offset",
    "encode_cursor",
    "encode_offset",
    "newest_first",
]


@dataclass(frozen=True, slots=True)
class Cursor:
    """The position after the last item of a page: its (created_at, id)."""

    created_at: datetime
    id: str


class PageQuery(BaseModel):
    """spec: "Conventions" - list query ``cursor`` and ``limit`` (1 to 100, default 20)."""

    cursor: str | None = Field(
        default=None, description="The `next_cursor` of the previous page; empty = first page."
    )
    limit: int = Field(default=20, ge=1, le=100)

    @field_validator("cursor")
    @classmethod
    def _empty_is_first_page(cls, value: str | None) -> str | None:
        return value or None


def encode_cursor(created_at: datetime, item_id: str) -> str:
    raw = json.dumps([utc(created_at).isoformat(), item_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_cursor(value: str) -> Cursor:
    """Parse a cursor from a previous page; anything else is 400 ``invalid_request``."""
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        stamp, item_id = json.loads(raw)
        if not isinstance(stamp, str) or not isinstance(item_id, str):
            raise ValueError
        return Cursor(utc(datetime.fromisoformat(stamp)), item_id)
    except (ValueError, TypeError, UnicodeDecodeError, json.JSONDecodeError):
        raise ServiceError(
            "invalid_request",
            issues=[{"path": "/query/cursor", "message": "Not a cursor from a previous page."}],
        ) from None


def encode_offset(offset: int) -> str:
    """An opaque cursor for ranked lists (search results have no stable sort key)."""
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).rstrip(b"=").decode()


def decode_offset(value: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        offset = json.loads(raw)["o"]
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ValueError
        return offset
    except (ValueError, TypeError, KeyError, UnicodeDecodeError, json.JSONDecodeError):
        raise ServiceError(
            "invalid_request",
            issues=[{"path": "/query/cursor", "message": "Not a cursor from a previous page."}],
        ) from None


async def newest_first(
    db: AsyncSession, query: Any, at: Any, key: Any, cursor: str | None, limit: int
) -> tuple[list[Any], str | None]:
    """One page of ``query`` (ORM objects) ordered by the columns ``at`` then ``key``, newest
    first, after ``cursor``: the page and the next cursor (None on the last page)."""
    if cursor is not None:
        after = decode_cursor(cursor)
        query = query.where(
            or_(at < after.created_at, and_(at == after.created_at, key < after.id))
        )
    rows = list(await db.scalars(query.order_by(at.desc(), key.desc()).limit(limit + 1)))
    page = rows[:limit]
    if len(rows) <= limit:
        return page, None
    last = page[-1]
    return page, encode_cursor(getattr(last, at.key), getattr(last, key.key))
