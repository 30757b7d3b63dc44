"""Questions over MCP elicitation (issue 7, 4).

A job's non-secret questions with ``form`` delivery are asked by form elicitation when the
client declared it; secret ones (password, code, login) only ever as a URL: the protected page,
by URL elicitation where the client supports it, else in the receipt. Nothing secret is ever
carried in an MCP message: the URL names the page, the person types on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp.types as types
from mcp.server.session import ServerSession

from sitetools.jobs.schemas import JobDetail, QuestionOut

__all__ = ["Outcome", "ask_person"]


@dataclass(frozen=True, slots=True)
class Outcome:
    action: str  # answer | decline | cancel
    answers: dict[str, Any] | None = None


def _capability(session: ServerSession) -> types.ElicitationCapability | None:
    params = session.client_params
    if params is None:
        return None
    return params.capabilities.elicitation


def _field(question: QuestionOut) -> dict[str, Any]:
    if question.type == "confirm":
        return {"type": "boolean", "title": question.prompt}
    if question.type == "choice" and question.options:
        values = [o.value for o in question.options]
        if question.multiple:
            field: dict[str, Any] = {
                "type": "array",
                "title": question.prompt,
                "items": {"type": "string", "enum": values},
            }
            if question.min_selections is not None:
                field["minItems"] = question.min_selections
            if question.max_selections is not None:
                field["maxItems"] = question.max_selections
            return field
        if question.allow_other:
            return {
                "type": "string",
                "title": question.prompt,
                "description": "One of: " + ", ".join(values) + " (or your own words).",
            }
        return {
            "type": "string",
            "title": question.prompt,
            "enum": values,
            "enumNames": [o.label for o in question.options],
        }
    text: dict[str, Any] = {"type": "string", "title": question.prompt}
    if question.max_length is not None:
        text["maxLength"] = question.max_length
    return text


def _answers(questions: list[QuestionOut], content: dict[str, Any]) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for question in questions:
        if question.id not in content:
            continue
        value = content[question.id]
        if (
            question.type == "choice"
            and not question.multiple
            and question.allow_other
            and question.options
            and value not in {o.value for o in question.options}
        ):
            value = {"other": value}
        answers[question.id] = value
    return answers


async def ask_person(
    session: ServerSession, request_id: types.RequestId, job: JobDetail
) -> Outcome | None:
    """Ask the pending questions by elicitation; None when this client cannot be asked (the
    receipt carries the question instead)."""
    pending = job.pending_input
    capability = _capability(session)
    if pending is None or capability is None:
        return None
    title = job.tool_name or "A tool"
    if pending.delivery == "protected":
        if capability.url is None:
            return None
        result = await session.elicit_url(
            f"{title} on {job.site_name} needs a password or code. Open the page to type it "
            "there; it is never shared with the agent.",
            pending.protected_input_url,
            f"{pending.request_id}.{pending.request_version}",
            related_request_id=request_id,
        )
        # The person answers on the page; the run goes on from there.
        return Outcome("answer") if result.action == "accept" else None
    if pending.delivery != "form":
        return None
    # A client declaring elicitation without modes supports forms (2025-06-18 clients).
    if capability.form is None and capability.url is not None:
        return None
    questions = pending.questions
    schema = {
        "type": "object",
        "properties": {q.id: _field(q) for q in questions},
        "required": [q.id for q in questions],
    }
    result = await session.elicit_form(
        f"{title} on {job.site_name} asks:", schema, related_request_id=request_id
    )
    if result.action == "accept":
        return Outcome("answer", _answers(questions, result.content or {}))
    return Outcome(result.action)
