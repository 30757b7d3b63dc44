"""MCP tests run against the jobs server (embedded worker, Demo Shop, test tools)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.jobs.conftest import jobs_server, runner, shop

__all__ = ["jobs_server", "mcp_session", "runner", "shop"]


@asynccontextmanager
async def mcp_session(
    url: str,
    token: str,
    *,
    elicitation: Callable[..., Awaitable[Any]] | None = None,
    messages: list[Any] | None = None,
    headers: dict[str, str] | None = None,
) -> AsyncIterator[ClientSession]:
    """The real ``mcp`` client over Streamable HTTP, initialized; ``messages`` collects every
    message the server sent (for the secrets scan)."""

    async def record(message: Any) -> None:
        if messages is not None:
            messages.append(message)

    async def on_response(response: httpx.Response) -> None:
        if messages is not None:
            await response.aread()
            messages.append(response.text)

    async with httpx.AsyncClient(
        headers={"Authorization": f"Bearer {token}", **(headers or {})},
        timeout=httpx.Timeout(60, read=120),
        event_hooks={"response": [on_response]} if messages is not None else {},
    ) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, _):
            async with ClientSession(
                read, write, elicitation_callback=elicitation, message_handler=record
            ) as session:
                await session.initialize()
                yield session
