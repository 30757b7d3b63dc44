"""Spare tool processes: started ahead, each used by one run only.

Starting Python and importing the SDK costs far more than a small tool's work, so the worker
keeps a few processes started and waiting for their first message, forked by its fork server
(``zygote.py``: a few milliseconds each instead of ~250 ms of CPU; a plain start when the fork
server is unavailable). A spare knows nothing of any job until it is taken: it has the same
stripped environment and limits as a fresh one, its own empty folder, and is never given to a
second run.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from pathlib import Path

import structlog

from sitetools.runtime.sandbox import ForkServer, Limits, ToolProcess

__all__ = ["SpareProcesses"]

_log = structlog.get_logger("sitetools.spares")


class SpareProcesses:
    def __init__(self, limits: Limits, size: int) -> None:
        self.limits = limits
        self.size = size
        self._ready: list[ToolProcess] = []
        self._starting = 0
        self._closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._zygote: asyncio.Task[ForkServer | None] | None = None

    async def _fork_server(self) -> ForkServer | None:
        """The running fork server; a new one when the last one died or could not start."""
        if self._zygote is not None and self._zygote.done():
            previous = self._zygote.result()
            if previous is None or not previous.alive:
                self._zygote = None
                if previous is not None:
                    await previous.close()
        if self._zygote is None:
            self._zygote = asyncio.get_running_loop().create_task(self._start_zygote())
        return await asyncio.shield(self._zygote)

    async def _start_zygote(self) -> ForkServer | None:
        try:
            return await ForkServer.start(self.limits)
        except Exception:
            _log.exception("fork_server_start_failed")
            return None

    async def new_process(self) -> ToolProcess:
        """A process from the fork server, or started the plain way if that fails."""
        zygote = await self._fork_server()
        if zygote is not None and zygote.alive:
            workdir = Path(tempfile.mkdtemp(prefix="sitetools-run-"))
            try:
                return await zygote.spawn(workdir, self.limits)
            except Exception:
                shutil.rmtree(workdir, ignore_errors=True)
                _log.exception("fork_failed")
        return await fresh_process(self.limits)

    def fill(self) -> None:
        """Start processes in the background until ``size`` are ready or starting."""
        while not self._closed and len(self._ready) + self._starting < self.size:
            self._starting += 1
            task = asyncio.get_running_loop().create_task(self._start_one())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _start_one(self) -> None:
        try:
            process = await self.new_process()
        except Exception:
            _log.exception("spare_start_failed")
            return
        finally:
            self._starting -= 1
        if self._closed:
            discard(process)
            return
        self._ready.append(process)

    async def take(self, cpu_seconds: int) -> ToolProcess:
        """A ready spare (or a fresh process when none is), with the run's CPU limit. The
        runner calls ``fill`` when its run ends: starting a replacement (a fork and the SDK's
        imports) while the run is under way would slow the run down."""
        process = None
        while self._ready:
            candidate = self._ready.pop(0)
            if candidate.returncode is None:
                process = candidate
                break
            discard(candidate)
        if process is None:
            process = await self.new_process()
        process.limit_cpu(cpu_seconds)
        return process

    async def close(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        for process in self._ready:
            discard(process)
            await process.wait(2)
        self._ready.clear()
        if self._zygote is not None:
            zygote = await self._zygote
            if zygote is not None:
                await zygote.close()


async def fresh_process(limits: Limits) -> ToolProcess:
    workdir = Path(tempfile.mkdtemp(prefix="sitetools-run-"))
    try:
        return await ToolProcess.start(workdir, limits)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise


def discard(process: ToolProcess) -> None:
    process.kill()
    shutil.rmtree(process.workdir, ignore_errors=True)
