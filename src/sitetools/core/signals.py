"""In-process wake-ups: a waiter sleeps until a channel is notified or its timeout passes.

Cross-process wake-ups (PostgreSQL ``LISTEN/NOTIFY``) feed the same channels; every waiter also
re-reads the database on its own timeout, so a lost wake-up only delays, never blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict

__all__ = ["JOBS_QUEUED", "Signals", "job_channel"]

JOBS_QUEUED = "jobs:queued"


def job_channel(job_id: str) -> str:
    return f"job:{job_id}"


class Signals:
    def __init__(self) -> None:
        self._waiters: defaultdict[str, set[asyncio.Event]] = defaultdict(set)

    def notify(self, channel: str) -> None:
        for event in self._waiters.get(channel, ()):
            event.set()

    async def wait(self, channels: tuple[str, ...], seconds: float) -> bool:
        """Sleep until one of ``channels`` is notified (True) or ``seconds`` pass."""
        event = asyncio.Event()
        for channel in channels:
            self._waiters[channel].add(event)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), seconds)
            return event.is_set()
        finally:
            for channel in channels:
                waiters = self._waiters.get(channel)
                if waiters is not None:
                    waiters.discard(event)
                    if not waiters:
                        del self._waiters[channel]
