"""The OpenAPI 3.1 document, generated from the same declarations that serve the API."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from sitetools.core.errors import CATALOGUE
from sitetools.operations.registry import TAGS, Operation

__all__ = ["build_openapi"]

_REF = "#/components/schemas/{model}"
NO_NUL = "^[^\\x00]*$"

_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Error",
    "description": "The error envelope: branch on `code`, never on `message`.",
    "required": ["error"],
    "additionalProperties": False,
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "retryable", "docs_url", "details"],
            "additionalProperties": False,
            "properties": {
                "code": {"type": "string", "enum": sorted(CATALOGUE)},
                "message": {"type": "string"},
                "retryable": {"type": "boolean"},
                "docs_url": {"type": "string", "format": "uri"},
                "details": {"type": "object"},
            },
        }
    },
}


def _schemas(operations: Sequence[Operation]) -> tuple[dict[Any, Any], dict[str, Any]]:
    wanted: list[tuple[type[BaseModel], JsonSchemaMode]] = []
    for op in operations:
        if op.body_model is not None:
            wanted.append((op.body_model, "validation"))
        for response in op.responses.values():
            models = response if isinstance(response, tuple) else (response,) if response else ()
            wanted.extend((model, "serialization") for model in models)
    unique = list(dict.fromkeys(wanted))
    refs, defs = models_json_schema(unique, ref_template=_REF)
    return dict(refs), dict(defs.get("$defs", {}))


def _parameters(
    model: type[BaseModel] | None, where: Literal["path", "query"]
) -> list[dict[str, Any]]:
    if model is None:
        return []
    schema = model.model_json_schema(ref_template=_REF)
    required = set(schema.get("required", []))
    params = []
    for name, prop in schema.get("properties", {}).items():
        prop = dict(prop)
        description = prop.pop("description", None)
        prop.pop("title", None)
        if prop.get("type") == "string" and "pattern" not in prop:
            prop["pattern"] = NO_NUL  # refused by parsing.py: PostgreSQL text cannot hold NUL
        for option in prop.get("anyOf", []):
            if option.get("type") == "string" and "pattern" not in option:
                option["pattern"] = NO_NUL
        param: dict[str, Any] = {
            "name": name,
            "in": where,
            "required": where == "path" or name in required,
            "schema": prop,
        }
        if description:
            param["description"] = description
        params.append(param)
    return params


def _error_responses(op: Operation) -> dict[str, Any]:
    by_status: dict[int, list[str]] = {}
    for code in op.all_errors():
        by_status.setdefault(CATALOGUE[code].status, []).append(code)
    responses = {}
    for status, codes in sorted(by_status.items()):
        responses[str(status)] = {
            "description": "Error: " + ", ".join(f"`{c}`" for c in codes),
            "x-service-error-codes": codes,
            "content": {"application/json": {"schema": {"$ref": _REF.format(model="Error")}}},
        }
    return responses


def _operation(op: Operation, refs: dict[Any, Any]) -> dict[str, Any]:
    responses: dict[str, Any] = {}
    for status, model in sorted(op.responses.items()):
        entry: dict[str, Any] = {"description": "Success" if status != 204 else "No content"}
        if isinstance(model, tuple):
            schema = {"oneOf": [refs[(m, "serialization")] for m in model]}
            entry["content"] = {"application/json": {"schema": schema}}
        elif model is not None:
            entry["content"] = {"application/json": {"schema": refs[(model, "serialization")]}}
        responses[str(status)] = entry
    responses.update(_error_responses(op))
    document: dict[str, Any] = {
        "operationId": op.operation_id,
        "tags": [op.tag],
        "summary": op.summary,
        "parameters": _parameters(op.path_model, "path") + _parameters(op.query_model, "query"),
        "responses": responses,
        "x-service-effect": op.effect,
        "x-service-callers": list(op.callers),
        "x-service-permission": op.permission if isinstance(op.permission, str) else "",
    }
    if op.description:
        document["description"] = op.description
    if op.key_permission is not None:
        document["x-service-key-permission"] = op.key_permission.value
    if op.body_model is not None:
        document["requestBody"] = {
            "required": op.body_required,
            "content": {"application/json": {"schema": refs[(op.body_model, "validation")]}},
        }
    if op.public:
        document["security"] = [{}, {"bearerAuth": []}]
    return document


def build_openapi(operations: Sequence[Operation], base_url: str) -> dict[str, Any]:
    """The whole document for ``operations``, served at ``GET /v1/openapi.json``."""
    refs, defs = _schemas(operations)
    defs["Error"] = _ERROR_SCHEMA
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op, refs)
    used_tags = {op.tag for op in operations}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "sitetools API",
            "version": "1",
            "description": "Find, run and build tools that operate on websites. "
            f"Error codes: {base_url}/docs/errors",
        },
        "servers": [{"url": base_url}],
        "tags": [{"name": tag} for tag in TAGS if tag in used_tags],
        "paths": paths,
        "components": {
            "schemas": defs,
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API key (`svc_…`), an OAuth access token of the account "
                    "MCP endpoint, or a Dashboard session token.",
                },
                "sessionCookie": {"type": "apiKey", "in": "cookie", "name": "sitetools_session"},
            },
        },
        "security": [{"bearerAuth": []}, {"sessionCookie": []}],
    }
