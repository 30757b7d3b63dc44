"""Wire models of jobs (spec: "Job", "Jobs"; decisions: "Jobs")."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "ErrorBody",
    "Eta",
    "InputIn",
    "JobCounts",
    "JobDetail",
    "JobOut",
    "JobPage",
    "JobPath",
    "ListJobsQuery",
    "Option",
    "PendingInput",
    "QuestionOut",
    "RunIn",
]

JobStatus = Literal["queued", "running", "needs_input", "succeeded", "failed", "cancelled"]
JOB_STATUSES: tuple[str, ...] = JobStatus.__args__  # type: ignore[attr-defined]
_RETRY_KEY = r"^[A-Za-z0-9_\-]{1,200}$"


class ErrorBody(BaseModel):
    """spec: "Error" - the object inside the envelope, as a failed job carries it."""

    code: str
    message: str
    retryable: bool
    docs_url: str
    details: dict[str, Any]


class Eta(BaseModel):
    min_seconds: int
    max_seconds: int


class JobOut(BaseModel):
    """spec: "Job" - never carries a result."""

    id: str
    type: Literal["run", "build"]
    build_kind: str | None
    status: JobStatus
    stage: str
    site_url: str
    site_name: str
    task: str | None
    question: str | None
    waiting_since: datetime | None
    tool_id: str | None
    tool_name: str | None
    integration_id: str | None
    effect: Literal["read", "write"] | None
    eta: Eta | None
    watch_url: str | None
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None


class Option(BaseModel):
    value: str
    label: str


class QuestionOut(BaseModel):
    id: str
    type: Literal["text", "choice", "confirm", "secret"]
    prompt: str
    secret: Literal["login", "password", "code"] | None = None
    options: list[Option] | None = None
    multiple: bool | None = None
    allow_other: bool | None = None
    min_selections: int | None = None
    max_selections: int | None = None
    max_length: int | None = None


class PendingInput(BaseModel):
    request_id: str
    request_version: int
    expires_at: datetime
    delivery: Literal["agent", "form", "protected"]
    protected_input_url: str
    declined: bool
    cancelled: bool
    questions: list[QuestionOut]


class JobDetail(JobOut):
    """``GET /v1/jobs/{id}``: the job, its result on the first read, its error, its question."""

    result: Any | None = Field(
        default=None, description="The first read after success only; erased after it."
    )
    error: ErrorBody | None = None
    pending_input: PendingInput | None = None


class JobCounts(BaseModel):
    needs_input: int
    in_progress: int
    finished: int


class JobPage(BaseModel):
    data: list[JobOut]
    next_cursor: str | None
    needs_input_count: int = Field(ge=0)
    counts: JobCounts


class ListJobsQuery(BaseModel):
    type: Literal["run", "build"] = "run"
    status: str | None = Field(
        default=None,
        description="One or more of queued, running, needs_input, succeeded, failed, "
        "cancelled, comma-separated.",
        pattern=r"^[a-z_]+(,[a-z_]+)*$",
    )
    q: str | None = Field(default=None, max_length=200)
    cursor: str | None = None
    limit: int = Field(default=20, ge=1, le=50)

    @field_validator("cursor", "q", "status")
    @classmethod
    def _blank_is_absent(cls, value: str | None) -> str | None:
        return value if value and value.strip() else None

    @field_validator("status")
    @classmethod
    def _known_statuses(cls, value: str | None) -> str | None:
        if value is not None:
            unknown = [s for s in value.split(",") if s not in JOB_STATUSES]
            if unknown:
                raise ValueError(f"unknown status {unknown[0]!r}")
        return value


class JobPath(BaseModel):
    id: str


class RunIn(BaseModel):
    """decisions: "Jobs" - ``POST /v1/runs`` body."""

    model_config = ConfigDict(extra="forbid")

    tool_id: str = Field(max_length=100)
    input: dict[str, Any]
    connected_account_id: str | None = Field(default=None, pattern=r"^login_[0-9a-f]{32}$")
    retry_key: str | None = Field(default=None, pattern=_RETRY_KEY)
    wait_seconds: int = Field(default=0, ge=0, le=60)
    question_delivery: Literal["agent", "form"] | None = None


class InputIn(BaseModel):
    """decisions: "Jobs" - ``POST /v1/jobs/{id}/input``."""

    model_config = ConfigDict(extra="forbid")

    request_id: str = Field(max_length=100)
    request_version: int = Field(ge=1)
    action: Literal["answer", "decline", "cancel"] = "answer"
    answers: dict[str, Any] | None = None
