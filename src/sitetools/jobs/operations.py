"""Job operations (spec: "Jobs"; decisions: "Jobs" payloads)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sitetools.accounts.sessions import network_of
from sitetools.auth.caller import Caller
from sitetools.auth.permissions import CallerKind, Permission
from sitetools.core.errors import ServiceError
from sitetools.jobs import service
from sitetools.jobs.keyless import Keyless
from sitetools.jobs.schemas import (
    InputIn,
    JobDetail,
    JobOut,
    JobPage,
    JobPath,
    ListJobsQuery,
    RunIn,
)
from sitetools.operations.registry import Operation, OpRequest

__all__ = ["OPERATIONS"]

Req = OpRequest[Any, Any, Any]
_CALLERS: tuple[CallerKind, ...] = ("session", "oauth", "api_key", "integration_key")


def _starter(req: Req, *, starting: bool = False) -> Caller | Keyless:
    """The caller, or without credentials the keyless caller of this network."""
    if req.caller is not None:
        return req.caller
    if not req.ctx.settings.keyless_enabled and not starting:
        raise ServiceError("unauthorized")
    host = req.request.client.host if req.request.client else None
    return Keyless(network_of(host))


async def _run(req: Req) -> BaseModel:
    caller = _starter(req, starting=True)
    job = await service.start_run(req.ctx, caller, req.body, origin=req.surface)
    if req.body.wait_seconds > 0:
        await req.ctx.commit()
        await service.wait_for_job(req.ctx, caller, job.id, req.body.wait_seconds)
        return await service.read_job(req.ctx, caller, job.id)
    return await service.job_detail(req.ctx, job)


async def _list(req: Req) -> BaseModel:
    return await service.list_jobs(req.ctx, req.user, req.query)


async def _get(req: Req) -> BaseModel:
    return await service.read_job(req.ctx, _starter(req), req.path.id)


async def _cancel(req: Req) -> BaseModel:
    return await service.cancel_job(req.ctx, _starter(req), req.path.id)


async def _input(req: Req) -> BaseModel:
    return await service.answer_input(req.ctx, _starter(req), req.path.id, req.body)


OPERATIONS = [
    Operation(
        operation_id="runs.create",
        method="POST",
        path="/v1/runs",
        summary="Run a tool: validate the input, reserve quota, queue the job",
        description="The input is checked against the tool's input schema before anything "
        "starts (`invalid_input`, no job, no quota used). `retry_key` makes the call "
        "idempotent. With `wait_seconds` the answer waits until the job ends or asks, and "
        "carries `result` when it finished (that read takes the result). Without "
        "credentials (keyless use) only public read-only tools that need no login, limited "
        "per network and overall per day (`try_limit_reached`); the network that started a "
        "keyless job reads, answers and cancels it without credentials.",
        effect="write",
        callers=_CALLERS,
        permission=Permission.RUNS_CREATE,
        handler=_run,
        body_model=RunIn,
        responses={201: JobDetail},
        errors=(
            "not_found",
            "invalid_input",
            "quota_exceeded",
            "retry_conflict",
            "result_unavailable",
            "try_limit_reached",
            "try_tier_unavailable",
        ),
        public=True,
    ),
    Operation(
        operation_id="jobs.list",
        method="GET",
        path="/v1/jobs",
        summary="The caller's jobs, newest first, with counts by state",
        description="Lists the jobs started by the caller's API key, app or Dashboard (the "
        "Dashboard lists those started from any client). `counts` cover all of the caller's "
        "jobs of the listed `type` whatever the other filters say. Never a result.",
        effect="read",
        callers=_CALLERS,
        permission=Permission.JOBS_READ,
        handler=_list,
        query_model=ListJobsQuery,
        responses={200: JobPage},
    ),
    Operation(
        operation_id="jobs.get",
        method="GET",
        path="/v1/jobs/{id}",
        summary="Read a job; its result on the first read after success only",
        description="The result is erased on that read and at most five minutes after the "
        "job ends; later reads by the starting client answer 410 `result_expired`. A job "
        "started from another client answers 404.",
        effect="read",
        callers=_CALLERS,
        permission=Permission.JOBS_READ,
        handler=_get,
        path_model=JobPath,
        responses={200: JobDetail},
        errors=("not_found", "result_expired", "result_unavailable"),
        public=True,
    ),
    Operation(
        operation_id="jobs.cancel",
        method="POST",
        path="/v1/jobs/{id}/cancel",
        summary="Cancel a job (its tool process is stopped within a second)",
        description="Cancelling a job that already ended answers it unchanged.",
        effect="write",
        callers=_CALLERS,
        permission=Permission.JOBS_CANCEL,
        handler=_cancel,
        path_model=JobPath,
        responses={200: JobOut},
        errors=("not_found",),
        public=True,
    ),
    Operation(
        operation_id="jobs.input",
        method="POST",
        path="/v1/jobs/{id}/input",
        summary="Answer, decline or cancel the job's pending input request",
        description="Name the pending `request_id` and `request_version`. Secret questions "
        "(password, code, login) are answered only on the protected page "
        "(`protected_input_url`). `decline` and `cancel` keep the request pending and answer "
        "`input_declined` / `input_cancelled`.",
        effect="write",
        callers=_CALLERS,
        permission=Permission.RUNS_CREATE,
        handler=_input,
        path_model=JobPath,
        body_model=InputIn,
        responses={200: JobDetail},
        errors=(
            "not_found",
            "invalid_answer",
            "input_not_pending",
            "input_expired",
            "input_declined",
            "input_cancelled",
        ),
        public=True,
    ),
]
