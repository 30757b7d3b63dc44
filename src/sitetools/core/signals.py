"""In-process wake-ups: a waiter sleeps until a channel is notified or its timeout passes.

Cross-process wake-ups (PostgreSQL ``LISTEN/NOTIFY``) feed the same channels; every waiter also
re-reads the database on its own timeout, so a lost wake-up only delays, never blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Iterator

__all__ = ["JOBS_QUEUED", "WEBHOOKS_DUE", "Listener", "Signals", "job_channel"]

JOBS_QUEUED = "jobs:queued"
WEBHOOKS_DUE = "webhooks:due"


def job_channel(job_id: str) -> str:
    return f"job:{job_id}"


class Signals:
    def __init__(self) -> None:
        self._waiters: defaultdict[str, set[asyncio.Event]] = defaultdict(set)

    def notify(self, channel: str) -> None:
        for event in self._waiters.get(channel, ()):
            event.set()

    @contextlib.contextmanager
    def listening(self, channels: tuple[str, ...]) -> Iterator[Listener]:
        """Listen from now on: a notification that comes while the caller still reads the
        database is not lost (enter before the read, wait after it)."""
        listener = Listener()
        for channel in channels:
            self._waiters[channel].add(listener.event)
        try:
            yield listener
        finally:
            for channel in channels:
                waiters = self._waiters.get(channel)
                if waiters is not None:
                    waiters.discard(listener.event)
                    if not waiters:
                        del self._waiters[channel]

    async def wait(self, channels: tuple[str, ...], seconds: float) -> bool:
        """Sleep until one of ``channels`` is notified (True) or ``seconds`` pass."""
        with self.listening(channels) as listener:
            return await listener.wait(seconds)


class Listener:
    def __init__(self) -> None:
        self.event = asyncio.Event()

    async def wait(self, seconds: float) -> bool:
        """Until notified (since listening began) or ``seconds`` pass."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.event.wait(), seconds)
        return self.event.is_set()
