"""The account endpoint's tools: names, input schemas, output schemas and annotations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp.types as types
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from sitetools.connect.schemas import SignInOut, SignInPoll
from sitetools.jobs.schemas import JobOut
from sitetools.mcp_endpoints.receipts import receipt_schema
from sitetools.tools.schemas import ToolOut, ToolPage

__all__ = ["JOB_TOOL_NAMES", "account_tools", "argument_issues"]

JOB_TOOL_NAMES = frozenset({"get_job", "answer_job", "cancel_job"})

_ID = {"type": "string", "minLength": 1, "maxLength": 100}
_JOB = {
    "type": "object",
    "properties": {"job_id": {**_ID, "description": "The receipt's job_id."}},
    "required": ["job_id"],
    "additionalProperties": False,
}

INPUTS: dict[str, dict[str, Any]] = {
    "search_tools": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "maxLength": 500, "description": "Words to look for."},
            "site_url": {
                "type": "string",
                "maxLength": 2000,
                "description": "A domain or any URL of the website.",
            },
            "integration_id": _ID,
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
            "cursor": {"type": "string", "maxLength": 500},
        },
        "additionalProperties": False,
    },
    "get_tool": {
        "type": "object",
        "properties": {"tool_id": _ID},
        "required": ["tool_id"],
        "additionalProperties": False,
    },
    "run_tool": {
        "type": "object",
        "properties": {
            "tool_id": _ID,
            "input": {"type": "object", "description": "Fits the tool's input_schema."},
            "retry_key": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "Makes the call safe to repeat: the same key answers the same "
                "job. Always send one for tools whose effect is write.",
            },
            "connected_account_id": _ID,
            "wait_seconds": {
                "type": "integer",
                "minimum": 0,
                "maximum": 60,
                "default": 10,
                "description": "How long to wait for the result before answering pending.",
            },
        },
        "required": ["tool_id", "input"],
        "additionalProperties": False,
    },
    "get_job": _JOB,
    "answer_job": {
        "type": "object",
        "properties": {
            "job_id": _ID,
            "request_id": _ID,
            "request_version": {"type": "integer", "minimum": 1},
            "action": {"type": "string", "enum": ["answer", "decline", "cancel"]},
            "answers": {
                "type": "object",
                "description": "question id → value (text: string; confirm: boolean; choice: "
                "an option value, a list of them, or {other: text}).",
            },
        },
        "required": ["job_id", "request_id", "request_version"],
        "additionalProperties": False,
    },
    "cancel_job": _JOB,
    "search_service_api": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "maxLength": 200},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
        },
        "additionalProperties": False,
    },
    "describe_service_api": {
        "type": "object",
        "properties": {"operation_id": {**_ID, "description": "Such as api_keys.create."}},
        "required": ["operation_id"],
        "additionalProperties": False,
    },
    "call_service_api": {
        "type": "object",
        "properties": {
            "operation_id": _ID,
            "path_params": {"type": "object", "additionalProperties": {"type": "string"}},
            "query": {"type": "object"},
            "body": {"description": "The JSON body, as describe_service_api shows it."},
        },
        "required": ["operation_id"],
        "additionalProperties": False,
    },
    "sign_in": {
        "type": "object",
        "properties": {
            "client_name": {"type": "string", "minLength": 1, "maxLength": 100},
            "sign_in_id": {
                **_ID,
                "description": "Poll the sign-in started before (its id); without it a new "
                "sign-in starts.",
            },
        },
        "additionalProperties": False,
    },
}

_DESCRIPTIONS = {
    "search_tools": "Search the tool catalog by words and/or a website URL (the ranking of "
    "GET /v1/tools).",
    "get_tool": "A tool's description, input and output schemas, effect and login needs.",
    "run_tool": "Run a tool. Answers a receipt: kind result (with result), pending (poll "
    "get_job), question (answer with answer_job, or open protected_input_url for passwords "
    "and codes) or error.",
    "get_job": "Read a job's receipt. The result is returned once, on the first read after "
    "it finished.",
    "answer_job": "Answer a job's pending non-secret question (request_id, request_version).",
    "cancel_job": "Cancel a job; a finished job is answered unchanged.",
    "search_service_api": "Find operations of the service API (operationId, method, path).",
    "describe_service_api": "An operation's parameters, body and answer schemas, permission "
    "and effect, from the OpenAPI document.",
    "call_service_api": "Call any operation by operationId with your own permissions.",
    "sign_in": "Device sign-in: answers a user_code and verification_url for the person to "
    "approve; call again with sign_in_id to receive the API key once approved.",
}

_EFFECTS = {
    "search_tools": "read",
    "get_tool": "read",
    "run_tool": "write",
    "get_job": "read",
    "answer_job": "write",
    "cancel_job": "write",
    "search_service_api": "read",
    "describe_service_api": "read",
    "call_service_api": "destructive",
    "sign_in": "write",
}

_VALIDATORS = {name: Draft202012Validator(schema) for name, schema in INPUTS.items()}


def _open_object() -> dict[str, Any]:
    return {"type": "object"}


def account_tools(
    annotations: Callable[[str, str], types.ToolAnnotations],
    model_schema: Callable[[type[BaseModel]], dict[str, Any]],
) -> list[types.Tool]:
    outputs: dict[str, dict[str, Any]] = {
        "search_tools": model_schema(ToolPage),
        "get_tool": model_schema(ToolOut),
        "run_tool": receipt_schema(),
        "get_job": receipt_schema(),
        "answer_job": receipt_schema(),
        "cancel_job": model_schema(JobOut),
        "search_service_api": {
            "type": "object",
            "properties": {"data": {"type": "array", "items": {"type": "object"}}},
            "required": ["data"],
        },
        "describe_service_api": _open_object(),
        "call_service_api": {
            "type": "object",
            "properties": {"status": {"type": "integer"}, "body": {}},
            "required": ["status"],
        },
        # Either a new sign-in or a poll's answer (MCP wants one object schema).
        "sign_in": {
            "type": "object",
            "properties": {
                **model_schema(SignInOut)["properties"],
                **model_schema(SignInPoll)["properties"],
            },
            "$defs": model_schema(SignInPoll).get("$defs", {}),
        },
    }
    return [
        types.Tool(
            name=name,
            title=name.replace("_", " ").capitalize(),
            description=_DESCRIPTIONS[name],
            inputSchema=schema,
            outputSchema=outputs[name],
            annotations=annotations(name.replace("_", " ").capitalize(), _EFFECTS[name]),
        )
        for name, schema in INPUTS.items()
    ]


def argument_issues(name: str, arguments: dict[str, Any]) -> list[dict[str, str]]:
    validator = _VALIDATORS.get(name)
    if validator is None:
        return []
    issues = []
    for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path)):
        pointer = "".join(f"/{part}" for part in error.absolute_path)
        issues.append({"path": f"/body{pointer}", "message": _message(error)})
    return issues


def _message(error: Any) -> str:
    """The validator's words without the value sent (spec: never the value)."""
    kind = error.validator
    if kind == "required":
        return "A required field is missing."
    if kind == "additionalProperties":
        return "Unknown field."
    if kind == "type":
        return f"Must be of type {error.validator_value}."
    if kind in ("minLength", "maxLength", "minimum", "maximum"):
        return f"Must respect {kind} {error.validator_value}."
    if kind == "enum":
        return "Must be one of: " + ", ".join(map(str, error.validator_value)) + "."
    return "Does not match the schema."
