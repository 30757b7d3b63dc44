"""What an MCP tool answers: receipts for jobs, and errors as the spec's MCP tool errors.

spec: "Errors" - an MCP tool error carries the envelope object as its text plus
``retry_after_seconds`` when retryable; a write sent without a retry key whose code may follow
an accepted write has ``retryable`` false and ``write_possibly_accepted`` true instead.
decisions: "MCP" - a tool call answers a receipt ``{kind, job_id, effect, output, result?,
pending_input?, error?}``.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import mcp.types as types

from sitetools.core.clock import iso_utc
from sitetools.core.errors import ServiceError, envelope
from sitetools.jobs.schemas import JobDetail

__all__ = [
    "POSSIBLY_ACCEPTED",
    "RESULT_RETENTION",
    "receipt",
    "receipt_schema",
    "structured",
    "tool_error",
]

RESULT_RETENTION = timedelta(minutes=5)
# Codes that may follow a write the service accepted (the answer was lost, not the write).
POSSIBLY_ACCEPTED = frozenset(
    {
        "internal_error",
        "temporarily_unavailable",
        "acceptance_unknown",
        "result_unavailable",
        "quota_expired",
        "account_unavailable",
    }
)
# How long to wait before repeating a retryable call (the spec's "short wait").
_RETRY_AFTER = {"temporarily_unavailable": 1, "account_unavailable": 2, "worker_lost": 2}


def tool_error(
    error: ServiceError, base_url: str, *, write: bool = False, retry_key: str | None = None
) -> types.CallToolResult:
    body = envelope(error, base_url)["error"]
    if write and retry_key is None and error.code in POSSIBLY_ACCEPTED:
        body["retryable"] = False
        body["write_possibly_accepted"] = True
    elif body["retryable"]:
        seconds = error.details.get("retry_after_seconds") or _RETRY_AFTER.get(error.code, 1)
        body["retry_after_seconds"] = int(seconds)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(body, separators=(",", ":")))],
        isError=True,
    )


def structured(data: dict[str, Any], *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(data, separators=(",", ":")))],
        structuredContent=data,
        isError=is_error,
    )


def receipt(job: JobDetail) -> dict[str, Any]:
    """The receipt of a job as it stands (its result only when this read took it)."""
    readable_until = (
        iso_utc(job.completed_at + RESULT_RETENTION)
        if job.status == "succeeded" and job.completed_at is not None
        else None
    )
    data: dict[str, Any] = {
        "job_id": job.id,
        "status": job.status,
        "effect": job.effect,
        "output": {"readable_until": readable_until, "read_with": "get_job"},
    }
    if job.status == "succeeded" and job.result is not None:
        data["kind"] = "result"
        data["result"] = job.result
    elif job.status in ("failed", "cancelled"):
        data["kind"] = "error"
        data["error"] = job.error.model_dump(mode="json") if job.error is not None else None
    elif job.status == "needs_input" and job.pending_input is not None:
        data["kind"] = "question"
        data["pending_input"] = job.pending_input.model_dump(mode="json")
    else:
        # Running, or succeeded with its result already read (``result_expired`` on REST).
        data["kind"] = "pending"
    return data


_ERROR_OBJECT = {
    "type": "object",
    "properties": {
        "code": {"type": "string"},
        "message": {"type": "string"},
        "retryable": {"type": "boolean"},
        "docs_url": {"type": "string"},
        "details": {"type": "object"},
    },
    "required": ["code", "message", "retryable", "docs_url", "details"],
}


def receipt_schema(result_schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """The receipt's JSON Schema; ``result`` is the tool's own output schema when known."""
    return {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": ["result", "pending", "question", "error"]},
            "job_id": {"type": "string"},
            "status": {"type": "string"},
            "effect": {"type": ["string", "null"], "enum": ["read", "write", None]},
            "output": {
                "type": "object",
                "properties": {
                    "readable_until": {"type": ["string", "null"]},
                    "read_with": {"type": "string"},
                },
            },
            "result": result_schema if result_schema else {},
            "pending_input": {"type": "object"},
            "error": {"anyOf": [_ERROR_OBJECT, {"type": "null"}]},
        },
        "required": ["kind", "job_id", "effect", "output"],
    }
