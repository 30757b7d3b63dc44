"""The worker's steps on jobs: claim under a lease, questions, results, and the sweeper.

Each step is one short transaction owned by the caller (the worker loop). A step that finds the
job no longer its own (cancelled, lease lost) says so and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update

from sitetools.core.context import Ctx
from sitetools.core.errors import ServiceError
from sitetools.core.ids import new_id
from sitetools.jobs import events
from sitetools.jobs.models import InputRequest, Job
from sitetools.jobs.questions import is_secret
from sitetools.jobs.service import (
    ANSWERS_PURPOSE,
    INPUT_PURPOSE,
    RESULT_PURPOSE,
    close_requests,
    decrypt_json,
    encrypt_json,
    end_job,
    notify_job,
    pending_out,
    protected_input_url,
)
from sitetools.jobs.states import ACTIVE, RESULT_RETENTION, move
from sitetools.quota import service as quota
from sitetools.tools.service import ToolCode, tool_code, tool_login_fields
from sitetools.webhooks.outbox import stop_question_events

__all__ = [
    "DEFAULT_QUESTION_SECONDS",
    "RESULT_RETENTION",
    "ClaimedRun",
    "ask",
    "claim_next",
    "erase_results",
    "expire_questions",
    "fail",
    "mark_reached_site",
    "recover_lost",
    "renew_lease",
    "set_stage",
    "succeed",
    "take_answers",
    "warn_expiring_questions",
]

# decisions: "Jobs" - questions expire after 15 minutes unless the tool asks for less.
DEFAULT_QUESTION_SECONDS = 15 * 60
# spec: "Webhook" - job.input_expiring when at most three minutes remain.
EXPIRING_WARNING = timedelta(minutes=3)


@dataclass(frozen=True)
class ClaimedRun:
    job_id: str
    input: dict[str, Any]
    code: ToolCode
    site_url: str
    effect: str
    budget_seconds: int
    login_fields: list[str] | None
    attempt: int
    # Started without credentials: no person can answer a secret question.
    keyless: bool = False


async def claim_next(ctx: Ctx, worker_id: str, lease_seconds: int) -> ClaimedRun | None:
    """Take the oldest queued run (``FOR UPDATE SKIP LOCKED`` on PostgreSQL)."""
    query = (
        select(Job)
        .where(Job.status == "queued", Job.type == "run")
        .order_by(Job.created_at, Job.id)
        .limit(1)
    )
    if ctx.db.get_bind().dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    job = await ctx.db.scalar(query)
    if job is None:
        return None
    now = ctx.now()
    if job.quota_reservation_id is not None:
        try:
            # spec (issue 5, quota): used once the tool started.
            await quota.commit(ctx, job.quota_reservation_id)
        except ServiceError as error:
            await end_job(ctx, job, "failed", code=error.code)
            return None
    move(
        job,
        "running",
        now,
        stage="starting",
        lease_owner=worker_id,
        lease_expires_at=now + timedelta(seconds=lease_seconds),
        attempts=job.attempts + 1,
        started_at=job.started_at or now,
    )
    await ctx.db.flush()
    notify_job(ctx, job.id)
    assert job.input_enc is not None
    assert job.tool_version_id is not None
    login_fields = await tool_login_fields(ctx, job.tool_id) if job.tool_id else None
    return ClaimedRun(
        job_id=job.id,
        input=decrypt_json(ctx, INPUT_PURPOSE, job.id, job.input_enc),
        code=await tool_code(ctx, job.tool_version_id),
        site_url=job.site_url,
        effect=job.effect,
        budget_seconds=job.budget_seconds,
        login_fields=login_fields,
        attempt=job.attempts,
        keyless=job.account_id is None,
    )


async def _own(ctx: Ctx, job_id: str, worker_id: str) -> Job | None:
    """The job if this worker still holds it and it is active; else None (stop the run)."""
    job = await ctx.db.scalar(select(Job).where(Job.id == job_id).with_for_update())
    if job is None or job.status not in ACTIVE or job.lease_owner != worker_id:
        return None
    return job


async def renew_lease(ctx: Ctx, job_id: str, worker_id: str, lease_seconds: int) -> bool:
    """Extend the lease; False when the job is no longer this worker's to run."""
    result = await ctx.db.execute(
        update(Job)
        .where(Job.id == job_id, Job.lease_owner == worker_id, Job.status.in_(ACTIVE))
        .values(lease_expires_at=ctx.now() + timedelta(seconds=lease_seconds))
    )
    return bool(result.rowcount == 1)  # type: ignore[attr-defined]


async def mark_reached_site(ctx: Ctx, job_id: str) -> None:
    """The run connected to the site: a write may have reached it from now on."""
    await ctx.db.execute(update(Job).where(Job.id == job_id).values(reached_site=True))


async def set_stage(ctx: Ctx, job_id: str, worker_id: str, stage: str) -> bool:
    job = await _own(ctx, job_id, worker_id)
    if job is None:
        return False
    if job.status == "running":
        job.stage = stage
        job.updated_at = ctx.now()
    notify_job(ctx, job_id)
    return True


async def ask(
    ctx: Ctx, job_id: str, worker_id: str, questions: list[dict[str, Any]], expires_in: int
) -> InputRequest | None:
    """The tool asks: a pending input request and the job ``needs_input`` (one at a time)."""
    job = await _own(ctx, job_id, worker_id)
    if job is None:
        return None
    now = ctx.now()
    secret = any(is_secret(q) for q in questions)
    request = InputRequest(
        id=new_id("req"),
        job_id=job.id,
        version=job.input_version + 1,
        state="pending",
        delivery="protected" if secret else job.question_delivery,
        questions=questions,
        declined=False,
        cancelled=False,
        expiring_sent=False,
        created_at=now,
        expires_at=now + timedelta(seconds=min(expires_in, DEFAULT_QUESTION_SECONDS)),
    )
    ctx.db.add(request)
    move(
        job,
        "needs_input",
        now,
        question=questions[0]["prompt"],
        waiting_since=now,
        input_version=request.version,
    )
    await ctx.db.flush()
    await events.needs_input(ctx, job, pending_out(ctx, job, request))
    notify_job(ctx, job.id)
    return request


async def take_answers(ctx: Ctx, job_id: str, request_id: str) -> dict[str, Any] | None:
    """The answers once given (then cleared from the database); None while pending."""
    request = await ctx.db.scalar(
        select(InputRequest).where(InputRequest.id == request_id).with_for_update()
    )
    if request is None or request.state != "answered" or request.answers_enc is None:
        return None
    answers: dict[str, Any] = decrypt_json(ctx, ANSWERS_PURPOSE, job_id, request.answers_enc)
    request.answers_enc = None
    await ctx.db.flush()
    return answers


async def succeed(ctx: Ctx, job_id: str, worker_id: str, output: Any) -> bool:
    job = await _own(ctx, job_id, worker_id)
    if job is None:
        return False
    job.result_enc = encrypt_json(ctx, RESULT_PURPOSE, job.id, output)
    job.result_state = "kept"
    await end_job(ctx, job, "succeeded")
    return True


async def fail(
    ctx: Ctx,
    job_id: str,
    worker_id: str,
    code: str,
    customer_message: str | None = None,
    **details: Any,
) -> bool:
    job = await _own(ctx, job_id, worker_id)
    if job is None:
        return False
    await end_job(ctx, job, "failed", code=code, customer_message=customer_message, **details)
    return True


# -- the sweeper -------------------------------------------------------------------------------


async def expire_questions(ctx: Ctx) -> int:
    """spec: a run whose question goes unanswered stops with ``no_response``."""
    now = ctx.now()
    requests = list(
        await ctx.db.scalars(
            select(InputRequest)
            .where(InputRequest.state == "pending", InputRequest.expires_at <= now)
            .with_for_update()
        )
    )
    for request in requests:
        request.state = "expired"
        await stop_question_events(ctx, request.id)
        await ctx.db.flush()
        job = await ctx.db.scalar(select(Job).where(Job.id == request.job_id).with_for_update())
        if job is not None and job.status == "needs_input":
            possible_commit = job.effect == "write" and job.reached_site
            await end_job(ctx, job, "failed", code="no_response", possible_commit=possible_commit)
    await ctx.db.flush()
    return len(requests)


async def warn_expiring_questions(ctx: Ctx) -> int:
    """``job.input_expiring`` once per question, when at most three minutes remain."""
    now = ctx.now()
    requests = list(
        await ctx.db.scalars(
            select(InputRequest)
            .where(
                InputRequest.state == "pending",
                InputRequest.expiring_sent.is_(False),
                InputRequest.expires_at <= now + EXPIRING_WARNING,
                InputRequest.expires_at > now,
            )
            .with_for_update(skip_locked=True)
        )
    )
    for request in requests:
        request.expiring_sent = True
        job = await ctx.db.scalar(select(Job).where(Job.id == request.job_id))
        if job is not None and job.status == "needs_input":
            url = protected_input_url(ctx, job, request)
            await events.input_expiring(ctx, job, request, url)
    await ctx.db.flush()
    return len(requests)


async def erase_results(ctx: Ctx) -> int:
    """spec: a result is erased at most five minutes after the job ends."""
    cutoff = ctx.now() - RESULT_RETENTION
    result = await ctx.db.execute(
        update(Job)
        .where(Job.result_enc.is_not(None), Job.completed_at <= cutoff)
        .values(result_enc=None, result_state="erased")
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def recover_lost(ctx: Ctx) -> int:
    """Jobs whose worker stopped renewing: re-queue a safe one once, else end it."""
    now = ctx.now()
    jobs = list(
        await ctx.db.scalars(
            select(Job)
            .where(
                Job.status.in_(("running", "needs_input")),
                Job.lease_expires_at.is_not(None),
                Job.lease_expires_at <= now,
            )
            .with_for_update(skip_locked=True)
        )
    )
    for job in jobs:
        safe = job.effect == "read" or not job.reached_site
        if safe and job.attempts < 2:
            await close_requests(ctx, job)
            move(
                job,
                "queued",
                now,
                lease_owner=None,
                lease_expires_at=None,
                reached_site=False,
                question=None,
                waiting_since=None,
            )
            notify_job(ctx, job.id, queued=True)
        elif safe:
            await end_job(ctx, job, "failed", code="worker_lost")
        else:
            await end_job(ctx, job, "failed", code="outcome_unknown", possible_commit=True)
    await ctx.db.flush()
    return len(jobs)
