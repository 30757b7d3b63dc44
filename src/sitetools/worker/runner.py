"""One run, from claim to end: the tool process, its proxy, questions, budget, cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from pathlib import Path
from typing import Any

import structlog
from jsonschema import Draft202012Validator
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sitetools.core.config import Settings
from sitetools.core.context import AppServices, Ctx, unit
from sitetools.core.signals import job_channel
from sitetools.jobs import worker as steps
from sitetools.jobs.models import Job
from sitetools.jobs.questions import QuestionError, is_secret, normalize_questions
from sitetools.jobs.states import ACTIVE
from sitetools.runtime.egress import AllowList, EgressPolicy
from sitetools.runtime.protocol import ProtocolError
from sitetools.runtime.proxy import EgressProxy
from sitetools.runtime.sandbox import Limits, ToolProcess
from sitetools.runtime.spares import SpareProcesses
from sitetools.tools.sites import parse_site

__all__ = ["RunContext", "run_job", "unit"]

_log = structlog.get_logger("sitetools.runner")
_TICK = 0.2
_RENEW_EVERY = 5.0
_STAGES = {"starting", "signing_in", "running", "validating"}


class _Stop(Exception):  # noqa: N818 - a signal, not an error
    """The run ends now: the job was cancelled, ended elsewhere, or is no longer ours."""


class RunContext:
    """What the runner needs from the worker that claimed the job."""

    def __init__(
        self,
        services: AppServices,
        sessions: async_sessionmaker[AsyncSession],
        worker_id: str,
        spares: SpareProcesses | None = None,
    ) -> None:
        self.services = services
        self.sessions = sessions
        self.worker_id = worker_id
        self.settings = services.settings
        self.spares = spares or SpareProcesses(limits_of(services.settings), 0)


def limits_of(settings: Settings) -> Limits:
    """The limits every tool process starts with (the CPU limit is set per run)."""
    return Limits(
        memory_mb=settings.runtime_memory_mb,
        processes=settings.runtime_max_processes,
        open_files=settings.runtime_open_files,
    )


class _Run:
    def __init__(self, rc: RunContext, claimed: steps.ClaimedRun) -> None:
        self.rc = rc
        self.claimed = claimed
        self.job_id = claimed.job_id
        self.lease = rc.settings.job_lease_seconds
        self.budget_left = float(claimed.budget_seconds)
        self.running_since = time.monotonic()
        self.last_renew = time.monotonic()
        self.reached: asyncio.Future[None] | None = None
        self.staged = False
        self.log = _log.bind(job_id=claimed.job_id)

    def unit(self) -> contextlib.AbstractAsyncContextManager[Ctx]:
        return unit(self.rc.services, self.rc.sessions)

    async def _status(self) -> str | None:
        async with self.unit() as ctx:
            row = (
                await ctx.db.execute(
                    select(Job.status, Job.lease_owner).where(Job.id == self.job_id)
                )
            ).first()
        if row is None or row[0] not in ACTIVE or row[1] != self.rc.worker_id:
            return None
        return str(row[0])

    async def _keep_alive(self, process: ToolProcess, *, counting: bool) -> None:
        """Between messages: cancellation, lease, limits and (unless waiting) the budget."""
        if await self._status() is None:
            raise _Stop
        if not self.staged:
            # A tool still busy after its first tick shows as running (one that answers at
            # once never needed the write).
            self.staged = True
            async with self.unit() as ctx:
                await steps.set_stage(ctx, self.job_id, self.rc.worker_id, "running")
        now = time.monotonic()
        if now - self.last_renew >= _RENEW_EVERY:
            async with self.unit() as ctx:
                if not await steps.renew_lease(ctx, self.job_id, self.rc.worker_id, self.lease):
                    raise _Stop
            self.last_renew = now
        breach = process.breach()
        if breach is not None:
            raise _Failure("execution_failed", None, reason=breach)
        if counting and self.budget_left - (now - self.running_since) <= 0:
            raise _Failure("execution_budget_exhausted", None)

    async def on_connect(self) -> None:
        """The first connection to the site is committed before the tool sends anything: a
        worker that dies later leaves a write job marked as possibly committed, never re-run."""
        if self.reached is None:
            self.reached = asyncio.ensure_future(self._mark_reached())
        await asyncio.shield(self.reached)

    async def _mark_reached(self) -> None:
        async with self.unit() as ctx:
            await steps.mark_reached_site(ctx, self.job_id)

    async def _next_message(
        self, process: ToolProcess, reading: asyncio.Task[dict[str, Any] | None]
    ) -> dict[str, Any] | None:
        signals = self.rc.services.signals
        while True:
            waiting = asyncio.ensure_future(signals.wait((job_channel(self.job_id),), _TICK))
            done, _ = await asyncio.wait({reading, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if reading in done:
                waiting.cancel()
                return reading.result()
            await self._keep_alive(process, counting=True)

    async def _answers(self, process: ToolProcess, request_id: str) -> dict[str, Any]:
        """Wait for the person or agent; the budget does not run meanwhile."""
        spent = time.monotonic() - self.running_since
        self.budget_left -= spent
        signals = self.rc.services.signals
        while True:
            with signals.listening((job_channel(self.job_id),)) as listener:
                async with self.unit() as ctx:
                    answers = await steps.take_answers(ctx, self.job_id, request_id)
                if answers is not None:
                    self.running_since = time.monotonic()
                    return answers
                await self._keep_alive(process, counting=False)
                await listener.wait(_TICK * 2)

    async def _ask(self, process: ToolProcess, message: dict[str, Any]) -> None:
        try:
            questions = normalize_questions(message.get("questions"))
        except QuestionError as error:
            self.log.warning("tool_asked_malformed_question", problem=str(error))
            raise _Failure("execution_failed", None, reason="malformed_question") from None
        if self.claimed.keyless and any(is_secret(q) for q in questions):
            raise _Failure(
                "execution_failed",
                "This tool asks for a password or code, which needs a signed-in person.",
                reason="sign_in_required",
            )
        expires_in = int(message.get("expires_in") or steps.DEFAULT_QUESTION_SECONDS)
        async with self.unit() as ctx:
            request = await steps.ask(
                ctx, self.job_id, self.rc.worker_id, questions, max(30, expires_in)
            )
        if request is None:
            raise _Stop
        answers = await self._answers(process, request.id)
        await process.send({"op": "answers", "answers": answers})

    async def _finish(self, message: dict[str, Any]) -> None:
        output = message.get("output")
        schema = self.claimed.code.output_schema
        errors = list(Draft202012Validator(schema).iter_errors(output))
        if errors:
            self.log.info("invalid_output", problems=len(errors))
            raise _Failure("invalid_output", None)
        async with self.unit() as ctx:
            await steps.succeed(ctx, self.job_id, self.rc.worker_id, output)

    def _possible_commit(self, said: Any) -> bool:
        return bool(said) or (self.claimed.effect == "write" and self.reached is not None)

    def _tool_failure(self, message: dict[str, Any]) -> _Failure:
        code = message.get("code")
        if code == "input_rejected":
            details: dict[str, Any] = {
                "reason": str(message.get("reason") or "refused")[:500],
                "possible_commit": self._possible_commit(message.get("possible_commit")),
            }
            if message.get("field"):
                details["field"] = str(message["field"])[:200]
            return _Failure("input_rejected", None, **details)
        if code == "credentials_rejected":
            return _Failure(
                "credentials_rejected",
                None,
                field=str(message.get("field") or "password")[:100],
                possible_commit=self._possible_commit(message.get("possible_commit")),
            )
        text = message.get("message")
        return _Failure(
            "execution_failed",
            str(text)[:1000] if text else "The tool could not finish on the website.",
        )

    async def converse(self, process: ToolProcess, proxy: EgressProxy) -> None:
        await process.send(
            {
                "op": "start",
                "input": self.claimed.input,
                "entrypoint": self.claimed.code.entrypoint,
                "site_url": self.claimed.site_url,
                "proxy_url": proxy.url,
                "chromium": self.rc.settings.chromium,
                "login_fields": self.claimed.login_fields,
                "label": self.job_id,
            }
        )
        while True:
            reading = asyncio.ensure_future(process.receive())
            try:
                message = await self._next_message(process, reading)
            except BaseException:
                reading.cancel()
                raise
            if message is None:
                code = await process.wait(2)
                self.log.info("tool_exited", returncode=code, log=process.log_tail(1500))
                raise _Failure("execution_failed", "The tool stopped before it finished.")
            op = message["op"]
            if op == "progress":
                stage = str(message.get("stage", ""))
                if stage in _STAGES:
                    self.staged = True
                    async with self.unit() as ctx:
                        await steps.set_stage(ctx, self.job_id, self.rc.worker_id, stage)
            elif op == "log":
                self.log.info("tool_log", message=str(message.get("message", ""))[:2000])
            elif op == "ask":
                await self._ask(process, message)
            elif op == "result":
                await self._finish(message)
                return
            elif op == "error":
                raise self._tool_failure(message)
            else:
                raise ProtocolError(f"unknown op {op!r}")


class _Failure(Exception):  # noqa: N818
    def __init__(self, code: str, customer_message: str | None, **details: Any) -> None:
        self.code, self.customer_message, self.details = code, customer_message, details
        super().__init__(code)


def _materialize(workdir: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        path = (workdir / name).resolve()
        if not path.is_relative_to(workdir.resolve()):
            continue  # a package path never leaves its folder (checked at import too)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


async def run_job(rc: RunContext, claimed: steps.ClaimedRun) -> None:
    """Run one claimed job to its end; every way out leaves the job terminal or re-queued."""
    run = _Run(rc, claimed)
    settings = rc.settings
    site = parse_site(claimed.site_url, "site_url")
    proxy = EgressProxy(
        EgressPolicy(site.domain, AllowList.parse(settings.egress_allow)), run.on_connect
    )
    process: ToolProcess | None = None
    try:
        await proxy.start()
        process = await rc.spares.take(cpu_seconds=claimed.budget_seconds * 2 + 30)
        _materialize(process.workdir, claimed.code.files)
        await run.converse(process, proxy)
    except _Stop:
        run.log.info("run_stopped")
    except _Failure as failure:
        if process is not None:
            process.kill()
        async with run.unit() as ctx:
            await steps.fail(
                ctx,
                claimed.job_id,
                rc.worker_id,
                failure.code,
                failure.customer_message,
                **failure.details,
            )
    except (ProtocolError, ConnectionError) as error:
        run.log.warning("tool_protocol_error", error=str(error))
        async with run.unit() as ctx:
            await steps.fail(
                ctx, claimed.job_id, rc.worker_id, "execution_failed", None, reason="protocol"
            )
    except Exception:
        run.log.exception("run_crashed")
        with contextlib.suppress(Exception):
            async with run.unit() as ctx:
                await steps.fail(ctx, claimed.job_id, rc.worker_id, "execution_failed", None)
    finally:
        if process is not None:
            process.kill()
            await process.wait(5)
            shutil.rmtree(process.workdir, ignore_errors=True)
        await proxy.close()
        rc.spares.fill()
        if proxy.refusals:
            run.log.info("egress_refusals", refusals=proxy.refusals[:20])
