"""What jobs tell webhooks (spec: "Events"; decisions: "Event data"): status only, never a
result, an answer or a secret. Each is recorded in the transaction of the change it reports."""

from __future__ import annotations

from typing import Any

from sitetools.core.clock import iso_utc
from sitetools.core.context import Ctx
from sitetools.jobs.models import InputRequest, Job
from sitetools.jobs.schemas import PendingInput
from sitetools.jobs.states import RESULT_RETENTION
from sitetools.webhooks.outbox import record_event

__all__ = ["input_expiring", "job_ended", "needs_input"]


def _common(job: Job) -> dict[str, Any]:
    return {"job_id": job.id, "job_type": job.type, "origin": job.origin}


async def _record(
    ctx: Ctx, job: Job, event_type: str, data: dict[str, Any], request_id: str | None = None
) -> None:
    await record_event(
        ctx,
        account_id=job.account_id,
        membership_id=job.membership_id,
        event_type=event_type,
        data=data,
        job_id=job.id,
        request_id=request_id,
    )


async def needs_input(ctx: Ctx, job: Job, pending: PendingInput) -> None:
    """``job.needs_input``: the question as ``GET /v1/jobs/{id}`` shows it (no answers)."""
    types = list(dict.fromkeys(question.type for question in pending.questions))
    data = {
        **_common(job),
        "request_id": pending.request_id,
        "request_version": pending.request_version,
        "expires_at": iso_utc(pending.expires_at),
        "question_types": types,
        "protected_input_url": pending.protected_input_url,
        "pending_input": pending.model_dump(mode="json"),
    }
    await _record(ctx, job, "job.needs_input", data, pending.request_id)


async def input_expiring(ctx: Ctx, job: Job, request: InputRequest, url: str) -> None:
    data = {
        **_common(job),
        "request_id": request.id,
        "request_version": request.version,
        "expires_at": iso_utc(request.expires_at),
        "protected_input_url": url,
    }
    await _record(ctx, job, "job.input_expiring", data, request.id)


async def job_ended(ctx: Ctx, job: Job) -> None:
    """``job.succeeded`` or ``job.failed`` (cancelled jobs included) for a terminal job."""
    data = {**_common(job), "status": job.status, "effect": job.effect}
    if job.status == "succeeded":
        assert job.completed_at is not None
        data["output"] = {
            "readable_until": iso_utc(job.completed_at + RESULT_RETENTION),
            "read_with": f"GET /v1/jobs/{job.id}",
        }
        await _record(ctx, job, "job.succeeded", data)
        return
    details = job.error_details or {}
    data["failure_reason"] = job.error_code or "cancelled"
    if "field" in details:
        data["rejected_field"] = details["field"]
    if "possible_commit" in details:
        data["possible_commit"] = bool(details["possible_commit"])
    if "blocked" in details:
        data["blocked"] = details["blocked"]
    if job.customer_message:
        data["customer_message"] = job.customer_message
    await _record(ctx, job, "job.failed", data)
