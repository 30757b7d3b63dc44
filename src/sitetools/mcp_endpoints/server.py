"""The MCP servers: tool lists and tool calls of the account and integration endpoints.

Every tool runs one or more operations of the registry through ``operations.rest.execute`` with
the caller re-admitted for that step, so permissions, limits, errors and job visibility are the
REST ones. Only the shaping differs: receipts for jobs, tool errors for refusals.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession
from mcp.shared.exceptions import McpError
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request

from sitetools.auth.caller import Caller
from sitetools.auth.permissions import Permission
from sitetools.core.context import AppServices, Ctx, unit
from sitetools.core.errors import ServiceError
from sitetools.jobs import service as jobs
from sitetools.jobs.schemas import JobDetail, JobOut
from sitetools.mcp_endpoints import schemas
from sitetools.mcp_endpoints.access import Admitted, Endpoint, admit, request_token
from sitetools.mcp_endpoints.elicit import ask_person
from sitetools.mcp_endpoints.receipts import receipt, receipt_schema, structured, tool_error
from sitetools.mcp_endpoints.service_api import ServiceApi
from sitetools.operations.registry import Operation, Reply
from sitetools.operations.rest import NO_BODY, execute
from sitetools.tools import service as catalog
from sitetools.tools.models import Tool

__all__ = ["McpServers"]

# A tool call waits this long for its job by default (REST's default is 0: MCP clients want
# an answer in the call when the job is quick).
DEFAULT_WAIT_SECONDS = 10
MAX_WAIT_SECONDS = 60


@dataclass
class Call:
    """One tool call in progress: its endpoint, HTTP request and MCP session."""

    endpoint: Endpoint
    request: Request
    session: ServerSession
    request_id: types.RequestId


def _annotations(title: str, effect: str) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        title=title,
        readOnlyHint=effect == "read",
        destructiveHint=effect == "destructive",
        idempotentHint=effect == "read",
        openWorldHint=False,
    )


def _dump(result: BaseModel | Reply | None) -> dict[str, Any]:
    if isinstance(result, Reply):
        return result.body.model_dump(mode="json") if result.body is not None else {}
    return result.model_dump(mode="json") if result is not None else {}


def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(mode="serialization")


class McpServers:
    """Builds the low-level SDK servers: one for ``/mcp``, one per integration endpoint."""

    def __init__(
        self,
        services: AppServices,
        sessions: async_sessionmaker[AsyncSession],
        operations: list[Operation],
        document: dict[str, Any],
    ) -> None:
        self.services = services
        self.sessions = sessions
        self.base_url = services.settings.base_url
        self.ops = {op.operation_id: op for op in operations}
        self.api = ServiceApi(operations, document)
        # What each session was last told about an integration's tools (list_changed).
        self._seen: weakref.WeakKeyDictionary[ServerSession, str] = weakref.WeakKeyDictionary()

    # -- the per-step unit of work ------------------------------------------------------

    @asynccontextmanager
    async def acting(self, call: Call) -> AsyncIterator[tuple[Ctx, Admitted]]:
        """One unit of work with the caller admitted again (spec: "Authentication" 4)."""
        async with unit(self.services, self.sessions) as ctx:
            admitted = await admit(ctx, request_token(call.request), call.endpoint)
            yield ctx, admitted

    async def check_access(self, call: Call) -> None:
        """Admit the caller for a tool that reads nothing of theirs (spec: "Authentication" 4)."""
        async with self.acting(call):
            pass

    async def run_op(
        self,
        call: Call,
        operation_id: str,
        *,
        path: dict[str, Any] | None = None,
        query: dict[str, Any] | None = None,
        body: Any = NO_BODY,
        check: Callable[[Ctx, Caller], Awaitable[None]] | None = None,
    ) -> BaseModel | Reply | None:
        operation = self.ops[operation_id]
        async with self.acting(call) as (ctx, admitted):
            if check is not None:
                await check(ctx, admitted.caller)
            return await execute(
                operation,
                ctx,
                admitted.caller,
                call.request,
                path_params={k: str(v) for k, v in (path or {}).items()},
                query_params=_query(query),
                body=body,
                surface="mcp",
            )

    # -- servers ------------------------------------------------------------------------

    def build(self, endpoint: Endpoint) -> Server[Any, Request]:
        name = "sitetools" if endpoint.integration_id is None else "sitetools-integration"
        server: Server[Any, Request] = Server(
            name,
            instructions="Find and run tools that operate on websites. Tool calls answer a "
            "receipt; poll get_job for a pending job. Passwords and codes are never asked "
            "here: open the protected_input_url.",
        )

        def current() -> Call:
            context = server.request_context
            assert context.request is not None
            return Call(endpoint, context.request, context.session, context.request_id)

        async def list_tools(_request: types.ListToolsRequest) -> types.ServerResult:
            call = current()
            try:
                tools = await self._list(call)
            except ServiceError as error:
                raise _protocol_error(error) from None
            return types.ServerResult(types.ListToolsResult(tools=tools))

        async def call_tool(request: types.CallToolRequest) -> types.ServerResult:
            call = current()
            name, arguments = request.params.name, request.params.arguments or {}
            meta = request.params.meta.model_dump() if request.params.meta else {}
            try:
                result = await self._call(call, name, arguments, meta)
            except ServiceError as error:
                result = tool_error(error, self.base_url)
            return types.ServerResult(result)

        server.request_handlers[types.ListToolsRequest] = list_tools
        server.request_handlers[types.CallToolRequest] = call_tool
        return server

    # -- tool lists -----------------------------------------------------------------------

    async def _list(self, call: Call) -> list[types.Tool]:
        if call.endpoint.integration_id is None:
            await self.check_access(call)
            return ACCOUNT_TOOLS
        async with self.acting(call) as (_ctx, admitted):
            # Discovery is a read of the catalog (the permission GET /v1/tools needs).
            admitted.caller.require(Permission.TOOLS_READ)
            tools = admitted.tools
        self._seen[call.session] = _fingerprint(tools)
        return [*(_integration_tool(tool) for tool in tools), *JOB_TOOLS]

    async def _tools_changed(self, call: Call, tools: tuple[Tool, ...]) -> None:
        """Tell a session whose tool list is stale, on this request's stream (there is no
        standalone stream: the endpoints accept POST only)."""
        fingerprint = _fingerprint(tools)
        seen = self._seen.get(call.session)
        if seen is not None and seen != fingerprint:
            self._seen[call.session] = fingerprint
            await call.session.send_notification(
                types.ServerNotification(types.ToolListChangedNotification()),
                related_request_id=call.request_id,
            )

    # -- tool calls -----------------------------------------------------------------------

    async def _call(
        self, call: Call, name: str, arguments: dict[str, Any], meta: dict[str, Any]
    ) -> types.CallToolResult:
        if call.endpoint.integration_id is not None:
            async with self.acting(call) as (_ctx, admitted):
                tools = admitted.tools
            await self._tools_changed(call, tools)
            by_name = {tool.mcp_name: tool for tool in tools}
            if name in by_name:
                tool = by_name[name]
                return await self._run(
                    call,
                    tool.id,
                    arguments,
                    retry_key=_meta_str(meta, "retry_key"),
                    connected_account_id=_meta_str(meta, "connected_account_id"),
                    wait_seconds=_meta_wait(meta),
                )
            if name not in schemas.JOB_TOOL_NAMES:
                raise ServiceError("not_found", resource="tool")
        elif name not in ACCOUNT_TOOL_NAMES:
            raise ServiceError("not_found", resource="tool")
        handler = getattr(self, f"_tool_{name}")
        result: types.CallToolResult = await handler(call, _checked(name, arguments))
        return result

    async def _tool_search_tools(self, call: Call, args: dict[str, Any]) -> types.CallToolResult:
        page = await self.run_op(call, "tools.list", query=args)
        return structured(_dump(page))

    async def _tool_get_tool(self, call: Call, args: dict[str, Any]) -> types.CallToolResult:
        tool = await self.run_op(call, "tools.get", path={"id": args["tool_id"]})
        return structured(_dump(tool))

    async def _tool_run_tool(self, call: Call, args: dict[str, Any]) -> types.CallToolResult:
        return await self._run(
            call,
            args["tool_id"],
            args.get("input", {}),
            retry_key=args.get("retry_key"),
            connected_account_id=args.get("connected_account_id"),
            wait_seconds=args.get("wait_seconds", DEFAULT_WAIT_SECONDS),
        )

    def _own_job(self, call: Call, job_id: str) -> Callable[[Ctx, Caller], Awaitable[None]]:
        """On an integration endpoint only the jobs of its integration (spec: 1)."""

        async def check(ctx: Ctx, caller: Caller) -> None:
            if call.endpoint.integration_id is None:
                return
            if await jobs.job_integration(ctx, caller, job_id) != call.endpoint.integration_id:
                raise ServiceError("not_found", resource="job")

        return check

    async def _tool_get_job(self, call: Call, args: dict[str, Any]) -> types.CallToolResult:
        job_id = args["job_id"]
        detail = await self.run_op(
            call, "jobs.get", path={"id": job_id}, check=self._own_job(call, job_id)
        )
        assert isinstance(detail, JobDetail)
        return _receipt_result(detail)

    async def _tool_answer_job(self, call: Call, args: dict[str, Any]) -> types.CallToolResult:
        job_id = args["job_id"]
        body = {k: v for k, v in args.items() if k != "job_id"}
        detail = await self.run_op(
            call, "jobs.input", path={"id": job_id}, body=body, check=self._own_job(call, job_id)
        )
        assert isinstance(detail, JobDetail)
        return _receipt_result(detail)

    async def _tool_cancel_job(self, call: Call, args: dict[str, Any]) -> types.CallToolResult:
        job_id = args["job_id"]
        job = await self.run_op(
            call, "jobs.cancel", path={"id": job_id}, check=self._own_job(call, job_id)
        )
        assert isinstance(job, JobOut)
        return structured(_dump(job))

    async def _tool_search_service_api(
        self, call: Call, args: dict[str, Any]
    ) -> types.CallToolResult:
        await self.check_access(call)
        found = self.api.search(args.get("query"), int(args.get("limit", 20)))
        return structured({"data": found})

    async def _tool_describe_service_api(
        self, call: Call, args: dict[str, Any]
    ) -> types.CallToolResult:
        await self.check_access(call)
        described = self.api.describe(args["operation_id"])
        if described is None:
            raise ServiceError("not_found", resource="operation")
        return structured(described)

    async def _tool_call_service_api(
        self, call: Call, args: dict[str, Any]
    ) -> types.CallToolResult:
        operation = self.ops.get(args["operation_id"])
        if operation is None:
            raise ServiceError("not_found", resource="operation")
        body = args.get("body", NO_BODY)
        write = operation.effect != "read"
        try:
            result = await self.run_op(
                call,
                operation.operation_id,
                path=args.get("path_params"),
                query=args.get("query"),
                body=body,
            )
        except ServiceError as error:
            retry_key = body.get("retry_key") if isinstance(body, dict) else None
            return tool_error(error, self.base_url, write=write, retry_key=retry_key)
        status = result.status if isinstance(result, Reply) else operation.success_status
        return structured({"status": status, "body": _dump(result) or None})

    async def _tool_sign_in(self, call: Call, args: dict[str, Any]) -> types.CallToolResult:
        if args.get("sign_in_id"):
            polled = await self.run_op(
                call, "connect.poll_sign_in", path={"id": args["sign_in_id"]}
            )
            return structured(_dump(polled))
        body = {"client_name": args["client_name"]} if args.get("client_name") else {}
        started = await self.run_op(call, "connect.sign_in", body=body)
        return structured(_dump(started))

    # -- runs -----------------------------------------------------------------------------

    async def _run(
        self,
        call: Call,
        tool_id: str,
        tool_input: Any,
        *,
        retry_key: str | None,
        connected_account_id: str | None,
        wait_seconds: float,
    ) -> types.CallToolResult:
        """Start the run, wait, ask the person by elicitation where the client can, and
        answer the receipt."""
        deadline = anyio.current_time() + max(0.0, min(float(wait_seconds), MAX_WAIT_SECONDS))
        body: dict[str, Any] = {"tool_id": tool_id, "input": tool_input}
        if retry_key is not None:
            body["retry_key"] = retry_key
        if connected_account_id is not None:
            body["connected_account_id"] = connected_account_id
        body["wait_seconds"] = int(max(0.0, deadline - anyio.current_time()))
        effect = "write"
        try:
            async with self.acting(call) as (ctx, _admitted):
                effect = await catalog.tool_effect(ctx, tool_id) or "write"
            detail = await self.run_op(call, "runs.create", body=body)
        except ServiceError as error:
            return tool_error(error, self.base_url, write=effect == "write", retry_key=retry_key)
        assert isinstance(detail, JobDetail)
        asked: set[tuple[str, int]] = set()
        while (
            detail.status == "needs_input"
            and detail.pending_input is not None
            and (detail.pending_input.request_id, detail.pending_input.request_version) not in asked
            and anyio.current_time() < deadline
        ):
            pending = detail.pending_input
            asked.add((pending.request_id, pending.request_version))
            outcome = await ask_person(call.session, call.request_id, detail)
            if outcome is None:
                break
            if outcome.answers is not None or outcome.action != "answer":
                input_body: dict[str, Any] = {
                    "request_id": pending.request_id,
                    "request_version": pending.request_version,
                    "action": outcome.action,
                }
                if outcome.answers is not None:
                    input_body["answers"] = outcome.answers
                try:
                    await self.run_op(call, "jobs.input", path={"id": detail.id}, body=input_body)
                except ServiceError as error:
                    if error.code not in ("input_declined", "input_cancelled"):
                        return tool_error(error, self.base_url)
                    # Declined or cancelled: the question stays pending, marked so.
                    detail = await self._wait(call, detail.id, anyio.current_time())
                    break
            detail = await self._wait(
                call, detail.id, deadline, answered_version=pending.request_version
            )
        return _receipt_result(detail)

    async def _wait(
        self, call: Call, job_id: str, deadline: float, *, answered_version: int = 0
    ) -> JobDetail:
        left = deadline - anyio.current_time()
        if left > 0:
            async with self.acting(call) as (ctx, admitted):
                await jobs.wait_for_job(
                    ctx, admitted.caller, job_id, left, answered_version=answered_version
                )
        detail = await self.run_op(call, "jobs.get", path={"id": job_id})
        assert isinstance(detail, JobDetail)
        return detail


def _query(values: dict[str, Any] | None) -> dict[str, str]:
    def text(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return {name: text(value) for name, value in (values or {}).items() if value is not None}


def _meta_str(meta: dict[str, Any], name: str) -> str | None:
    value = meta.get(f"sitetools/{name}")
    return value if isinstance(value, str) and value else None


def _meta_wait(meta: dict[str, Any]) -> float:
    value = meta.get("sitetools/wait_seconds")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return DEFAULT_WAIT_SECONDS


def _checked(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments against the tool's input schema: ``invalid_request`` with pointers."""
    issues = schemas.argument_issues(name, arguments)
    if issues:
        raise ServiceError("invalid_request", issues=issues)
    return arguments


def _receipt_result(detail: JobDetail) -> types.CallToolResult:
    data = receipt(detail)
    return structured(data, is_error=data["kind"] == "error")


def _protocol_error(error: ServiceError) -> McpError:
    """A refusal of a list request (no tool result to carry it) as a JSON-RPC error."""
    code = types.INTERNAL_ERROR if error.status >= 500 else types.INVALID_REQUEST
    return McpError(types.ErrorData(code=code, message=f"{error.code}: {error.message}"))


def _fingerprint(tools: tuple[Tool, ...]) -> str:
    text = json.dumps([(t.mcp_name, t.version_id, t.updated_at.isoformat()) for t in tools])
    return hashlib.sha256(text.encode()).hexdigest()


def _integration_tool(tool: Tool) -> types.Tool:
    input_schema = (
        tool.input_schema if tool.input_schema.get("type") == "object" else {"type": "object"}
    )
    return types.Tool(
        name=tool.mcp_name,
        title=tool.name,
        description=tool.description,
        inputSchema=input_schema,
        outputSchema=receipt_schema(tool.output_schema),
        annotations=_annotations(tool.name, tool.effect),
    )


ACCOUNT_TOOLS = schemas.account_tools(_annotations, _model_schema)
JOB_TOOLS = [tool for tool in ACCOUNT_TOOLS if tool.name in schemas.JOB_TOOL_NAMES]
ACCOUNT_TOOL_NAMES = frozenset(tool.name for tool in ACCOUNT_TOOLS)
