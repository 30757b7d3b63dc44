"""The worker loop: claim jobs up to a concurrency, run them, and sweep timers.

Embedded (``sitetools serve``) it runs inside the API process on SQLite or PostgreSQL; scaled
out, any number of ``sitetools worker`` processes share a PostgreSQL database, claiming with
``FOR UPDATE SKIP LOCKED`` and woken by ``LISTEN/NOTIFY``. No process keeps state another needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from sitetools.core.context import AppServices
from sitetools.core.ids import new_id
from sitetools.core.signals import JOBS_QUEUED, WEBHOOKS_DUE
from sitetools.jobs import worker as steps
from sitetools.quota import service as quota
from sitetools.runtime.spares import SpareProcesses
from sitetools.webhooks import dispatcher as webhooks
from sitetools.webhooks.dispatcher import Dispatcher
from sitetools.webhooks.outbox import NOTIFY_CHANNEL as WEBHOOKS_CHANNEL
from sitetools.worker.runner import RunContext, limits_of, run_job, unit

__all__ = ["Worker"]

_log = structlog.get_logger("sitetools.worker")
_SWEEP_EVERY = 1.0
_PRUNE_EVERY = 60  # sweeps
_IDLE_WAIT = 1.0


class Worker:
    def __init__(
        self,
        services: AppServices,
        sessions: async_sessionmaker[AsyncSession],
        engine: AsyncEngine,
        *,
        concurrency: int | None = None,
    ) -> None:
        self.services = services
        self.sessions = sessions
        self.engine = engine
        self.concurrency = concurrency or services.settings.worker_concurrency
        self.worker_id = f"{socket.gethostname()[:20]}-{os.getpid()}-{new_id('w')[-8:]}"
        self._running: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        self._main: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._main = asyncio.get_running_loop().create_task(self.run())

    async def stop(self) -> None:
        """Stop claiming; end the runs in progress by killing them (their jobs are recovered)."""
        self._stopping.set()
        self.services.signals.notify(JOBS_QUEUED)
        if self._main is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._main

    async def run(self) -> None:
        listener = await self._listen()
        loop = asyncio.get_running_loop()
        sweeper = loop.create_task(self._sweep_forever())
        dispatcher = Dispatcher(self.services, self.sessions, self.worker_id)
        dispatching = loop.create_task(dispatcher.run())
        settings = self.services.settings
        spares = SpareProcesses(limits_of(settings), settings.runtime_spare_processes)
        spares.fill()
        rc = RunContext(self.services, self.sessions, self.worker_id, spares)
        _log.info("worker_started", worker_id=self.worker_id, concurrency=self.concurrency)
        try:
            while not self._stopping.is_set():
                if len(self._running) >= self.concurrency:
                    await asyncio.wait(self._running, return_when=asyncio.FIRST_COMPLETED)
                    continue
                with self.services.signals.listening((JOBS_QUEUED,)) as listener:
                    try:
                        async with unit(self.services, self.sessions) as ctx:
                            claimed = await steps.claim_next(
                                ctx, self.worker_id, self.services.settings.job_lease_seconds
                            )
                    except Exception:
                        _log.exception("claim_failed")
                        claimed = None
                        await asyncio.sleep(_IDLE_WAIT)
                    if claimed is not None:
                        task = asyncio.get_running_loop().create_task(run_job(rc, claimed))
                        self._running.add(task)
                        task.add_done_callback(self._running.discard)
                        continue
                    await listener.wait(_IDLE_WAIT)
        finally:
            sweeper.cancel()
            dispatching.cancel()
            for task in list(self._running):
                task.cancel()
            for task in [sweeper, dispatching, *self._running]:
                with contextlib.suppress(BaseException):
                    await task
            await spares.close()
            if listener is not None:
                with contextlib.suppress(Exception):
                    await listener.close()
            _log.info("worker_stopped", worker_id=self.worker_id)

    async def _listen(self) -> Any:
        """PostgreSQL: LISTEN for new jobs and webhook events from other processes."""
        if self.engine.dialect.name != "postgresql":
            return None
        import asyncpg  # type: ignore[import-untyped]

        url = self.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        try:
            connection = await asyncpg.connect(url)
        except Exception:
            _log.warning("listen_unavailable")
            return None
        signals = self.services.signals

        def wake_workers(*_args: Any) -> None:
            signals.notify(JOBS_QUEUED)

        def wake_dispatcher(*_args: Any) -> None:
            signals.notify(WEBHOOKS_DUE)

        await connection.add_listener("sitetools_jobs", wake_workers)
        await connection.add_listener(WEBHOOKS_CHANNEL, wake_dispatcher)
        return connection

    async def sweep_once(self, *, prune: bool = False) -> None:
        for step in (
            steps.warn_expiring_questions,
            steps.expire_questions,
            steps.recover_lost,
            steps.erase_results,
            quota.release_expired,
            *((webhooks.prune,) if prune else ()),
        ):
            try:
                async with unit(self.services, self.sessions) as ctx:
                    await step(ctx)
            except Exception:
                _log.exception("sweep_failed", step=step.__name__)

    async def _sweep_forever(self) -> None:
        sweeps = 0
        while True:
            await self.sweep_once(prune=sweeps % _PRUNE_EVERY == 0)
            sweeps += 1
            await asyncio.sleep(_SWEEP_EVERY)
