"""Rules of jobs as callers see them: start a run, read, list, cancel, answer a question.

The worker's side (claiming, questions from the tool, results, the sweeper) is in
``execution.py``; both move jobs only through ``states.move``.
"""

from __future__ import annotations

import hashlib
import json
import time
from datetime import datetime, timedelta
from typing import Any

from jsonschema import Draft202012Validator
from sqlalchemy import and_, func, or_, select, text
from sqlalchemy.exc import IntegrityError

from sitetools.accounts.service import question_delivery_for
from sitetools.auth.caller import Caller
from sitetools.core.context import Ctx
from sitetools.core.errors import ServiceError, envelope
from sitetools.core.ids import new_id
from sitetools.core.pagination import newest_first
from sitetools.core.signals import JOBS_QUEUED, job_channel
from sitetools.jobs import events
from sitetools.jobs.keyless import Keyless, count_keyless_run, require_keyless_runs
from sitetools.jobs.models import InputRequest, Job
from sitetools.jobs.questions import check_answers, is_secret
from sitetools.jobs.schemas import (
    ErrorBody,
    Eta,
    InputIn,
    JobCounts,
    JobDetail,
    JobOut,
    JobPage,
    ListJobsQuery,
    PendingInput,
    QuestionOut,
    RunIn,
)
from sitetools.jobs.states import ACTIVE, TERMINAL, move
from sitetools.quota import service as quota
from sitetools.tools.service import runnable_tool
from sitetools.webhooks.outbox import stop_question_events

__all__ = [
    "PROTECTED_INPUT",
    "RESULT_PURPOSE",
    "accept_answers",
    "answer_input",
    "answer_protected",
    "cancel_job",
    "close_requests",
    "decrypt_json",
    "encrypt_json",
    "job_detail",
    "job_for_person",
    "job_out",
    "list_jobs",
    "notify_job",
    "pending_out",
    "protected_input_url",
    "protected_request",
    "read_job",
    "start_run",
    "stop_jobs_of_client",
    "wait_for_job",
]

RESULT_PURPOSE = "job-result"
INPUT_PURPOSE = "job-input"
ANSWERS_PURPOSE = "job-answers"
PROTECTED_INPUT = "protected-input"


def encrypt_json(ctx: Ctx, purpose: str, job_id: str, value: Any) -> bytes:
    return ctx.keyring.encrypt(purpose, json.dumps(value).encode(), job_id.encode())


def decrypt_json(ctx: Ctx, purpose: str, job_id: str, blob: bytes) -> Any:
    return json.loads(ctx.keyring.decrypt(purpose, blob, job_id.encode()))


def notify_job(ctx: Ctx, job_id: str, *, queued: bool = False) -> None:
    """Wake waiters of this job (and idle workers) once the change is committed."""
    signals = ctx.app.signals

    def wake() -> None:
        signals.notify(job_channel(job_id))
        if queued:
            signals.notify(JOBS_QUEUED)

    ctx.after_commit(wake)


async def notify_workers(ctx: Ctx, job_id: str) -> None:
    """Other processes (PostgreSQL): NOTIFY is delivered when the transaction commits."""
    if ctx.db.get_bind().dialect.name == "postgresql":
        await ctx.db.execute(text("SELECT pg_notify('sitetools_jobs', :id)"), {"id": job_id})


def protected_input_url(ctx: Ctx, job: Job, request: InputRequest) -> str:
    """The Dashboard page where the job's person answers (secrets only there)."""
    token = ctx.keyring.sign(
        PROTECTED_INPUT, {"job": job.id, "req": request.id}, request.expires_at
    )
    return f"{ctx.settings.base_url}/dashboard/jobs/{job.id}/answer?token={token}"


def _eta(ctx: Ctx, job: Job) -> Eta | None:
    """A rough window from the budget left; none once the job ended or while it waits."""
    if job.status in TERMINAL or job.status == "needs_input":
        return None
    spent = 0
    if job.started_at is not None:
        spent = int((ctx.now() - job.started_at).total_seconds())
    left = max(1, job.budget_seconds - spent)
    return Eta(min_seconds=1 if job.status == "queued" else 0, max_seconds=left)


def job_out(ctx: Ctx, job: Job) -> JobOut:
    return JobOut(
        id=job.id,
        type=job.type,
        build_kind=job.build_kind,
        status=job.status,
        stage=job.stage,
        site_url=job.site_url,
        site_name=job.site_name,
        task=None,
        question=job.question,
        waiting_since=job.waiting_since,
        tool_id=job.tool_id,
        tool_name=job.tool_name,
        integration_id=job.integration_id,
        effect=job.effect,
        eta=_eta(ctx, job),
        # A keyless job has no person to watch it on the Dashboard.
        watch_url=f"{ctx.settings.base_url}/dashboard/jobs/{job.id}" if job.account_id else None,
        created_at=job.created_at,
        updated_at=job.updated_at,
        completed_at=job.completed_at,
    )


def _request_digest(data: RunIn) -> str:
    canonical = json.dumps(
        {
            "tool_id": data.tool_id,
            "input": data.input,
            "connected_account_id": data.connected_account_id,
            "question_delivery": data.question_delivery,
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _input_issues(schema: dict[str, Any], value: dict[str, Any]) -> list[dict[str, str]]:
    """spec: "invalid_input" - each issue a JSON pointer under /body/input, never the value."""
    issues = []
    for error in sorted(Draft202012Validator(schema).iter_errors(value), key=lambda e: e.path):
        pointer = "".join(
            "/" + str(part).replace("~", "~0").replace("/", "~1") for part in error.absolute_path
        )
        issues.append({"path": f"/body/input{pointer}", "message": _issue_message(error)})
    return issues[:50]


def _issue_message(error: Any) -> str:
    # jsonschema's messages quote the instance; ours name the rule only.
    rule = error.validator
    expected = error.validator_value
    if rule == "required":
        missing = [name for name in expected if name not in (error.instance or {})]
        return f"Required: {', '.join(missing)}."
    if rule == "additionalProperties":
        return "Holds a property the tool does not take."
    if rule == "type":
        return f"Must be of type {expected}."
    if rule in ("enum", "const"):
        return "Not one of the allowed values."
    if isinstance(expected, (int, float, str, bool)) and len(str(expected)) <= 200:
        return f"Fails the rule {rule} ({expected})."
    return f"Fails the rule {rule}."


Starter = Caller | Keyless


async def _existing_for_retry(ctx: Ctx, caller: Starter, retry_key: str) -> Job | None:
    return await ctx.db.scalar(
        select(Job).where(Job.client_id == caller.client_id, Job.retry_key == retry_key)
    )


def _same_request(job: Job, digest: str) -> Job:
    if job.request_digest != digest:
        raise ServiceError("retry_conflict")
    return job


async def start_run(ctx: Ctx, caller: Starter, data: RunIn, *, origin: str = "rest") -> Job:
    """decisions: "Jobs" - validate, reserve quota, create the job queued (idempotent).
    A keyless caller runs only public read-only tools that need no login (else 401)."""
    digest = _request_digest(data)
    keyless = isinstance(caller, Keyless)
    if keyless:
        require_keyless_runs(ctx)
    if data.retry_key is not None:
        existing = await _existing_for_retry(ctx, caller, data.retry_key)
        if existing is not None:
            return _same_request(existing, digest)
    try:
        tool = await runnable_tool(
            ctx, None if isinstance(caller, Keyless) else caller, data.tool_id
        )
    except ServiceError as error:
        if keyless and error.code == "not_found":
            # Not one a keyless caller may run (or none at all): signing in may help.
            raise ServiceError("unauthorized") from None
        raise
    issues = _input_issues(tool.input_schema, data.input)
    if issues:
        raise ServiceError("invalid_input", issues=issues)
    now = ctx.now()
    reservation: str | None = None
    if isinstance(caller, Keyless):
        # Keyless questions can only go back to the caller (there is no person to ask).
        delivery = "agent"
        await count_keyless_run(ctx, caller)
        account_id = membership_id = user_id = None
    else:
        delivery = data.question_delivery or await question_delivery_for(ctx, caller)
        reservation = await quota.reserve(ctx, caller.account_id, quota.Counter.TOOL_CALLS)
        account_id, membership_id, user_id = (
            caller.account_id,
            caller.membership_id,
            caller.user_id,
        )
    job = Job(
        id=new_id("job"),
        type="run",
        build_kind=None,
        status="queued",
        stage="queued",
        account_id=account_id,
        membership_id=membership_id,
        user_id=user_id,
        client_id=caller.client_id,
        origin=origin,
        question_delivery=delivery,
        tool_id=tool.id,
        tool_version_id=tool.version_id,
        tool_name=tool.name,
        integration_id=tool.integration_id,
        site_url=tool.site_url,
        site_name=tool.site_name,
        effect=tool.effect,
        budget_seconds=tool.budget_seconds,
        connected_account_id=data.connected_account_id,
        retry_key=data.retry_key,
        request_digest=digest,
        quota_reservation_id=reservation,
        input_version=0,
        attempts=0,
        reached_site=False,
        cancel_requested=False,
        created_at=now,
        updated_at=now,
    )
    job.input_enc = encrypt_json(ctx, INPUT_PURPOSE, job.id, data.input)
    ctx.db.add(job)
    try:
        await ctx.db.flush()
    except IntegrityError:
        # Two identical requests at once: the other one created the job (unique retry key).
        await ctx.rollback()
        assert data.retry_key is not None
        existing = await _existing_for_retry(ctx, caller, data.retry_key)
        if existing is None:
            raise
        return _same_request(existing, digest)
    await notify_workers(ctx, job.id)
    notify_job(ctx, job.id, queued=True)
    return job


def readable_by(caller: Starter) -> Any:
    """spec: "Jobs" - jobs the caller's client started; the Dashboard sees all of its member's.
    A keyless caller: the keyless jobs its network started."""
    if isinstance(caller, Keyless):
        return and_(Job.account_id.is_(None), Job.client_id == caller.client_id)
    condition = and_(Job.account_id == caller.account_id, Job.membership_id == caller.membership_id)
    if caller.kind != "session":
        condition = and_(condition, Job.client_id == caller.client_id)
    return condition


async def _load(ctx: Ctx, caller: Starter, job_id: str, *, lock: bool = False) -> Job:
    query = select(Job).where(Job.id == job_id, readable_by(caller))
    if lock:
        query = query.with_for_update()
    job = await ctx.db.scalar(query)
    if job is None:
        raise ServiceError("not_found", resource="job")
    return job


async def _pending_request(ctx: Ctx, job: Job) -> InputRequest | None:
    if job.status != "needs_input":
        return None
    return await ctx.db.scalar(
        select(InputRequest).where(InputRequest.job_id == job.id, InputRequest.state == "pending")
    )


def pending_out(ctx: Ctx, job: Job, request: InputRequest) -> PendingInput:
    questions = [QuestionOut.model_validate(_public_question(q)) for q in request.questions]
    return PendingInput(
        request_id=request.id,
        request_version=request.version,
        expires_at=request.expires_at,
        delivery=request.delivery,
        protected_input_url=protected_input_url(ctx, job, request),
        declined=request.declined,
        cancelled=request.cancelled,
        questions=questions,
    )


def _public_question(question: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in question.items() if k not in ("fields", "method")}


def _error_body(ctx: Ctx, job: Job) -> ErrorBody | None:
    if job.status != "failed" or job.error_code is None:
        return None
    error = ServiceError(job.error_code, job.customer_message, **(job.error_details or {}))
    return ErrorBody.model_validate(envelope(error, ctx.settings.base_url)["error"])


async def job_detail(ctx: Ctx, job: Job, *, with_result: Any = None) -> JobDetail:
    base = job_out(ctx, job).model_dump()
    request = await _pending_request(ctx, job)
    return JobDetail(
        **base,
        result=with_result,
        error=_error_body(ctx, job),
        pending_input=pending_out(ctx, job, request) if request is not None else None,
    )


async def read_job(ctx: Ctx, caller: Starter, job_id: str) -> JobDetail:
    """decisions: "Jobs" - the result on the first read after success only, then 410."""
    job = await _load(ctx, caller, job_id)
    if job.status != "succeeded" or job.client_id != caller.client_id:
        return await job_detail(ctx, job)
    # The starting client's read takes the result: lock the row so two reads cannot both.
    job = await _load(ctx, caller, job_id, lock=True)
    if job.result_enc is None:
        raise ServiceError("result_expired", job_id=job.id)
    try:
        result = decrypt_json(ctx, RESULT_PURPOSE, job.id, job.result_enc)
    except Exception:
        raise ServiceError("result_unavailable", job_id=job.id) from None
    job.result_enc = None
    job.result_state = "read"
    await ctx.db.flush()
    return await job_detail(ctx, job, with_result=result)


def _escape_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


_COUNT_GROUPS = {
    "needs_input": ("needs_input",),
    "in_progress": ("queued", "running"),
    "finished": ("succeeded", "failed", "cancelled"),
}


async def list_jobs(ctx: Ctx, caller: Caller, params: ListJobsQuery) -> JobPage:
    """spec: "GET /v1/jobs" - newest first; counts over all of the caller's jobs of the type."""
    visible = and_(readable_by(caller), Job.type == params.type)
    query = select(Job).where(visible)
    if params.status is not None:
        query = query.where(Job.status.in_(params.status.split(",")))
    if params.q is not None:
        needle = f"%{_escape_like(params.q.lower())}%"
        query = query.where(
            or_(
                func.lower(Job.site_url).like(needle, escape="\\"),
                func.lower(Job.site_name).like(needle, escape="\\"),
            )
        )
    page, next_cursor = await newest_first(
        ctx.db,
        query,
        Job.created_at,
        Job.id,
        params.cursor,
        params.limit,
    )
    grouped = await ctx.db.execute(
        select(Job.status, func.count()).where(visible).group_by(Job.status)
    )
    totals = {row[0]: int(row[1]) for row in grouped.all()}
    counts = {
        group: sum(int(totals.get(status, 0)) for status in statuses)
        for group, statuses in _COUNT_GROUPS.items()
    }
    return JobPage(
        data=[job_out(ctx, job) for job in page],
        next_cursor=next_cursor,
        needs_input_count=counts["needs_input"],
        counts=JobCounts(**counts),
    )


async def close_requests(ctx: Ctx, job: Job) -> None:
    """The job's pending question closes (job ended or re-queued): its events stop, its
    answers are gone."""
    for request in await ctx.db.scalars(
        select(InputRequest).where(InputRequest.job_id == job.id, InputRequest.state == "pending")
    ):
        request.state = "closed"
        request.answers_enc = None
        await stop_question_events(ctx, request.id)


async def end_job(
    ctx: Ctx,
    job: Job,
    status: str,
    *,
    code: str | None = None,
    customer_message: str | None = None,
    **details: Any,
) -> None:
    """Move an active job to a terminal state, closing its questions and settling its quota."""
    move(
        job,
        status,
        ctx.now(),
        error_code=code,
        error_details=details or None,
        customer_message=customer_message,
    )
    await close_requests(ctx, job)
    if job.quota_reservation_id is not None:
        # A job that never started gives its unit back; one that started has used it.
        await quota.release(ctx, job.quota_reservation_id)
    await events.job_ended(ctx, job)
    await ctx.db.flush()
    notify_job(ctx, job.id)


async def cancel_job(ctx: Ctx, caller: Starter, job_id: str) -> JobOut:
    """decisions: "Jobs" - cancelling a terminal job answers it unchanged."""
    job = await _load(ctx, caller, job_id, lock=True)
    if job.status in ACTIVE:
        job.cancel_requested = True
        await end_job(ctx, job, "cancelled", code=None)
    return job_out(ctx, job)


async def stop_jobs_of_client(ctx: Ctx, client_id: str) -> int:
    """spec: "API key lifecycle" - revoking a key stops the jobs it started."""
    jobs = list(
        await ctx.db.scalars(
            select(Job).where(Job.client_id == client_id, Job.status.in_(ACTIVE)).with_for_update()
        )
    )
    for job in jobs:
        job.cancel_requested = True
        await end_job(ctx, job, "cancelled", reason="api_key_revoked")
    return len(jobs)


async def answer_input(ctx: Ctx, caller: Starter, job_id: str, data: InputIn) -> JobDetail:
    """spec: "Input request of a job" - the state table, row by row."""
    job = await _load(ctx, caller, job_id, lock=True)
    request = await ctx.db.scalar(
        select(InputRequest).where(
            InputRequest.id == data.request_id, InputRequest.job_id == job.id
        )
    )
    if request is None or request.version != data.request_version:
        raise ServiceError("input_not_pending", request_id=data.request_id)
    if request.state == "expired" or (
        request.state == "pending" and request.expires_at <= ctx.now()
    ):
        raise ServiceError("input_expired", request_id=request.id)
    if request.state != "pending" or job.status != "needs_input":
        raise ServiceError("input_not_pending", request_id=request.id)
    if data.action in ("decline", "cancel"):
        # spec: the request stays pending; the call answers the error, the mark is kept.
        code = "input_declined" if data.action == "decline" else "input_cancelled"
        request.declined = request.declined or data.action == "decline"
        request.cancelled = request.cancelled or data.action == "cancel"
        await ctx.db.flush()
        notify_job(ctx, job.id)
        error = ServiceError(code, request_id=request.id, request_version=request.version)
        error.commit_changes = True
        raise error
    if any(is_secret(q) for q in request.questions):
        raise ServiceError(
            "forbidden",
            "Secret questions are answered on the protected page only.",
            reason="protected_input_only",
            protected_input_url=protected_input_url(ctx, job, request),
        )
    cleaned = check_answers(request.questions, data.answers or {})
    await accept_answers(ctx, job, request, cleaned)
    return await job_detail(ctx, job)


async def accept_answers(
    ctx: Ctx, job: Job, request: InputRequest, answers: dict[str, Any]
) -> None:
    """Store the answers for the worker (encrypted) and resume the job."""
    now = ctx.now()
    request.state = "answered"
    request.answered_at = now
    request.answers_enc = encrypt_json(ctx, ANSWERS_PURPOSE, job.id, answers)
    await stop_question_events(ctx, request.id)
    move(job, "running", now, question=None, waiting_since=None)
    await ctx.db.flush()
    notify_job(ctx, job.id)


async def wait_for_job(
    ctx: Ctx, caller: Starter, job_id: str, seconds: float, *, answered_version: int = 0
) -> None:
    """Until the job ends or asks (a question newer than ``answered_version``), or ``seconds``
    pass (decisions: ``wait_seconds``)."""
    deadline = time.monotonic() + seconds
    channel = job_channel(job_id)
    while True:
        with ctx.app.signals.listening((channel,)) as listener:
            await ctx.rollback()  # a fresh snapshot each look
            job = await _load(ctx, caller, job_id)
            if job.status in TERMINAL or (
                job.status == "needs_input" and job.input_version > answered_version
            ):
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            await listener.wait(min(left, 0.5))


def expires_in(now: datetime, seconds: int) -> datetime:
    return now + timedelta(seconds=seconds)


async def job_for_person(ctx: Ctx, caller: Caller, job_id: str) -> JobDetail:
    """The Dashboard's view of a job: never takes the result (the page is not a client read)."""
    if caller.kind != "session":
        raise ServiceError("not_found", resource="job")
    return await job_detail(ctx, await _load(ctx, caller, job_id))


async def protected_request(
    ctx: Ctx, caller: Caller, job_id: str, token: str
) -> tuple[Job, InputRequest]:
    """spec: "Authentication" 8 - the protected page checks both the signed-in person (the
    job's member) and the signed token naming the job and the request."""
    payload = ctx.keyring.verify(PROTECTED_INPUT, token, ctx.now())
    if payload is None or payload.get("job") != job_id:
        raise ServiceError("input_expired" if payload is None else "not_found")
    if caller.kind != "session":
        raise ServiceError("not_found", resource="job")
    job = await _load(ctx, caller, job_id, lock=True)
    request = await ctx.db.get(InputRequest, payload.get("req"))
    if request is None or request.job_id != job.id:
        raise ServiceError("not_found", resource="input_request")
    if request.state == "expired" or (
        request.state == "pending" and request.expires_at <= ctx.now()
    ):
        raise ServiceError("input_expired", request_id=request.id)
    if request.state != "pending" or job.status != "needs_input":
        raise ServiceError("input_not_pending", request_id=request.id)
    return job, request


async def answer_protected(
    ctx: Ctx, caller: Caller, job_id: str, token: str, answers: dict[str, Any]
) -> Job:
    """Answers typed on the protected page, secrets included."""
    job, request = await protected_request(ctx, caller, job_id, token)
    cleaned = check_answers(request.questions, answers)
    await accept_answers(ctx, job, request, cleaned)
    return job


async def job_integration(ctx: Ctx, caller: Starter, job_id: str) -> str | None:
    """The integration of a job the caller may read (404 otherwise), without reading it."""
    found = await ctx.db.execute(
        select(Job.integration_id).where(Job.id == job_id, readable_by(caller))
    )
    row = found.first()
    if row is None:
        raise ServiceError("not_found", resource="job")
    integration_id: str | None = row[0]
    return integration_id
