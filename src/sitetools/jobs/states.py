"""The job state machine as data (decisions: "Jobs" - transitions); one function moves a job."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sitetools.jobs.models import Job

__all__ = [
    "ACTIVE",
    "RESULT_RETENTION",
    "TERMINAL",
    "TRANSITIONS",
    "InvalidTransitionError",
    "move",
]

# spec: "Limits" - result retention at most 5 minutes after the job ends.
RESULT_RETENTION = timedelta(minutes=5)

TERMINAL = frozenset({"succeeded", "failed", "cancelled"})
ACTIVE = frozenset({"queued", "running", "needs_input"})

TRANSITIONS: dict[str, frozenset[str]] = {
    # A lost worker's read job goes back to the queue once (issue 5, "crashes").
    "queued": frozenset({"running", "cancelled", "failed"}),
    "running": frozenset({"needs_input", "succeeded", "failed", "cancelled", "queued"}),
    "needs_input": frozenset({"running", "failed", "cancelled", "queued"}),
    "succeeded": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}

# The stage a status implies, unless the mover names one.
_STAGE = {
    "queued": "queued",
    "running": "running",
    "needs_input": "waiting_for_input",
    "succeeded": "finished",
    "failed": "finished",
    "cancelled": "finished",
}


class InvalidTransitionError(Exception):
    """A move the table does not allow (a bug in the caller, or a race it must handle)."""


def move(job: Job, to: str, now: datetime, *, stage: str | None = None, **fields: Any) -> None:
    """Change ``job`` to status ``to`` if the table allows it, setting ``fields`` too."""
    if to != job.status and to not in TRANSITIONS[job.status]:
        raise InvalidTransitionError(f"{job.status} -> {to}")
    job.status = to
    job.stage = stage or _STAGE[to]
    job.updated_at = now
    for name, value in fields.items():
        setattr(job, name, value)
    if to in TERMINAL:
        job.completed_at = now
        job.lease_owner = None
        job.lease_expires_at = None
        job.question = None
        job.waiting_since = None
