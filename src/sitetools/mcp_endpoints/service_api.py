"""``search_service_api`` and ``describe_service_api``: the operation set, read from the same
OpenAPI document ``GET /v1/openapi.json`` serves (spec: "What the service does" 7)."""

from __future__ import annotations

import re
from typing import Any

from sitetools.operations.registry import Operation

__all__ = ["ServiceApi"]

_REF = re.compile(r"^#/components/schemas/(.+)$")


def fold(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.casefold())


class ServiceApi:
    def __init__(self, operations: list[Operation], document: dict[str, Any]) -> None:
        self.by_id = {op.operation_id: op for op in operations}
        self.document = document
        self._components: dict[str, Any] = document.get("components", {}).get("schemas", {})
        self._words = {
            op.operation_id: fold(
                " ".join(
                    (
                        op.operation_id,
                        op.operation_id.replace(".", " ").replace("_", " "),
                        op.path,
                        op.summary,
                        op.description,
                    )
                )
            )
            for op in operations
        }

    def _entry(self, op: Operation) -> dict[str, Any]:
        return {
            "operation_id": op.operation_id,
            "method": op.method,
            "path": op.path,
            "summary": op.summary,
            "effect": op.effect,
            "permission": op.permission if isinstance(op.permission, str) else "",
        }

    def search(self, query: str | None, limit: int) -> list[dict[str, Any]]:
        """Operations whose ID, path, summary or description hold every word of ``query``,
        those naming it in their ID first."""
        words = fold(query or "").split()
        found = []
        for op_id, text in self._words.items():
            if all(word in text for word in words):
                in_id = sum(word in op_id for word in words)
                found.append((-in_id, op_id))
        found.sort()
        return [self._entry(self.by_id[op_id]) for _, op_id in found[:limit]]

    def _inline(self, node: Any, seen: frozenset[str] = frozenset()) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and (match := _REF.match(ref)):
                name = match.group(1)
                if name in seen:
                    return {"type": "object", "description": f"(recursive {name})"}
                return self._inline(self._components.get(name, {}), seen | {name})
            return {key: self._inline(value, seen) for key, value in node.items()}
        if isinstance(node, list):
            return [self._inline(value, seen) for value in node]
        return node

    def describe(self, operation_id: str) -> dict[str, Any] | None:
        op = self.by_id.get(operation_id)
        if op is None:
            return None
        documented = self.document["paths"][op.path][op.method.lower()]
        responses = {
            status: self._inline(
                answer.get("content", {}).get("application/json", {}).get("schema")
            )
            for status, answer in documented.get("responses", {}).items()
            if status.startswith("2")
        }
        body = documented.get("requestBody")
        return {
            **self._entry(op),
            "description": op.description,
            "callers": list(op.callers),
            # What an API key or OAuth token needs besides the member's own permission.
            "key_permission": op.key_permission.value if op.key_permission else None,
            "parameters": [
                {
                    "name": p["name"],
                    "in": p["in"],
                    "required": p.get("required", False),
                    "schema": self._inline(p.get("schema", {})),
                }
                for p in documented.get("parameters", [])
            ],
            "body": (
                {
                    "required": body.get("required", False),
                    "schema": self._inline(body["content"]["application/json"]["schema"]),
                }
                if body
                else None
            ),
            "responses": responses,
            "errors": list(op.all_errors()),
        }
