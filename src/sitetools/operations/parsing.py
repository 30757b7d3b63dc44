"""Request parsing: path, query, headers and JSON body into models, failures into ``issues``."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from sitetools.core.errors import ServiceError

__all__ = ["issues_from", "parse_json_body", "parse_model"]

M = TypeVar("M", bound=BaseModel)


def _pointer(parts: tuple[int | str, ...]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def issues_from(error: ValidationError, where: str) -> list[dict[str, str]]:
    """``{path, message}`` per failure; pydantic's messages never carry the value sent."""
    issues = []
    for failure in error.errors(include_url=False, include_input=False, include_context=False):
        loc = tuple(p for p in failure["loc"] if p != "__root__")
        message = failure["msg"]
        if failure["type"] == "value_error":
            message = message.removeprefix("Value error, ")
        issues.append({"path": f"/{where}{_pointer(loc)}", "message": message})
    return issues


def parse_model(model: type[M], data: Any, where: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise ServiceError("invalid_request", issues=issues_from(error, where)) from None


def parse_json_body(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise ServiceError(
            "invalid_request", issues=[{"path": "/body", "message": "The body is not valid JSON."}]
        ) from None
