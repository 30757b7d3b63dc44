"""Operation declarations: the single source of REST routes, the OpenAPI document and MCP."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from sitetools.auth.permissions import CallerKind, Permission

if TYPE_CHECKING:
    from starlette.requests import Request

    from sitetools.auth.caller import Caller
    from sitetools.core.context import Ctx

__all__ = [
    "COMMON_ERRORS",
    "TAGS",
    "Effect",
    "OpRequest",
    "Operation",
    "Reply",
]

Effect = Literal["read", "write", "destructive"]

# spec: "Other areas" - the API's tags, in the spec's order.
TAGS = (
    "account",
    "api_keys",
    "connected_apps",
    "usage",
    "quota",
    "billing",
    "integrations",
    "connect",
    "code",
    "logins",
    "two_factor",
    "login_access",
    "tools",
    "webhooks",
    "runs",
    "builds",
    "jobs",
    "suggestions",
    "files",
    "team",
)

# spec: "Endpoints" - common errors on every endpoint.
COMMON_ERRORS = (
    "invalid_request",
    "unauthorized",
    "reauthentication_required",
    "forbidden",
    "internal_error",
    "temporarily_unavailable",
)

P = TypeVar("P", bound=BaseModel | None)
Q = TypeVar("Q", bound=BaseModel | None)
B = TypeVar("B", bound=BaseModel | None)


@dataclass(frozen=True, slots=True)
class OpRequest(Generic[P, Q, B]):
    """One parsed, authenticated request as a handler sees it."""

    ctx: Ctx
    caller: Caller | None
    path: P
    query: Q
    body: B
    request: Request
    # Which surface carries the call: REST, or MCP (its tools and ``call_service_api``).
    surface: Literal["rest", "mcp"] = "rest"

    @property
    def user(self) -> Caller:
        """The caller of an operation that is not public (always set there)."""
        assert self.caller is not None
        return self.caller


@dataclass(frozen=True, slots=True)
class Reply:
    """A handler's answer when it is not the operation's first success status."""

    status: int
    body: BaseModel | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


ResponseModel = type[BaseModel] | tuple[type[BaseModel], ...] | None

Handler = Callable[[OpRequest[Any, Any, Any]], Awaitable[BaseModel | Reply | None]]


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the API, declared once (architecture: "One operation registry")."""

    operation_id: str
    method: str
    path: str
    summary: str
    effect: Effect
    callers: tuple[CallerKind, ...]
    # "identity" for account and key routes, else the permission the caller must hold.
    permission: Permission | Literal["identity"]
    handler: Handler
    # status → model, several models (one of them), or None for no body.
    responses: Mapping[int, ResponseModel]
    description: str = ""
    # Where an API key (or OAuth token) needs more than its member holds.
    key_permission: Permission | None = None
    path_model: type[BaseModel] | None = None
    query_model: type[BaseModel] | None = None
    body_model: type[BaseModel] | None = None
    body_required: bool = True
    errors: tuple[str, ...] = ()
    public: bool = False

    @property
    def tag(self) -> str:
        return self.operation_id.split(".", 1)[0]

    @property
    def success_status(self) -> int:
        """The status of a plain handler answer: the first one declared."""
        return next(iter(self.responses))

    def all_errors(self) -> tuple[str, ...]:
        """Every code this operation may answer, common ones included (spec: "Endpoints")."""
        codes = list(self.errors)
        # A public operation still refuses a bad credential (401) or a missing permission (403).
        common = list(COMMON_ERRORS)
        if self.body_model is not None:
            common.append("request_too_large")
        return tuple(dict.fromkeys([*common, *codes]))
