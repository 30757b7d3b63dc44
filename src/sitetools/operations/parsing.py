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


def _refuse_nul(data: Any, where: str) -> None:
    """NUL characters are refused everywhere: PostgreSQL text cannot hold them."""
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, str) and "\x00" in value:
                raise ServiceError(
                    "invalid_request",
                    issues=[
                        {
                            "path": f"/{where}{_pointer((key,))}",
                            "message": "Must not contain NUL characters.",
                        }
                    ],
                )


def parse_model(model: type[M], data: Any, where: str) -> M:
    if where in ("path", "query"):
        _refuse_nul(data, where)
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise ServiceError("invalid_request", issues=issues_from(error, where)) from None


def parse_json_body(raw: bytes) -> Any:
    try:
        data = json.loads(raw)
        if b"\\u" in raw:  # an escaped lone surrogate is JSON but not text any database stores
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        return data
    except (ValueError, UnicodeError):
        raise ServiceError(
            "invalid_request", issues=[{"path": "/body", "message": "The body is not valid JSON."}]
        ) from None
