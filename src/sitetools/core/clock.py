"""Injected time, so tests move the clock instead of sleeping."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import UTC, datetime, timedelta

__all__ = ["Clock", "ManualClock", "SystemClock", "iso_utc", "utc", "utc_day"]


def utc(value: datetime) -> datetime:
    """The same instant in UTC; naive values are taken as UTC (SQLite returns those)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def utc_day(now: datetime) -> tuple[datetime, datetime]:
    """The UTC day ``now`` falls in: its start and the next day's start."""
    start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


def iso_utc(value: datetime) -> str:
    """ISO 8601 in UTC with ``Z``, as every timestamp of the API is written."""
    return utc(value).isoformat().replace("+00:00", "Z")


class Clock(ABC):
    """Wall-clock time in UTC."""

    @abstractmethod
    def now(self) -> datetime: ...


class SystemClock(Clock):
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock(Clock):
    """A clock that only moves when told to (tests)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = utc(start) if start else datetime.now(UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)

    def set(self, value: datetime) -> None:
        self._now = utc(value)
