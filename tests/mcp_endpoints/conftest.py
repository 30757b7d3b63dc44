"""MCP tests run against the jobs server (embedded worker, Demo Shop, test tools)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.jobs.conftest import jobs_server, runner, shop

__all__ = ["error_of", "jobs_server", "mcp_session", "runner", "shop", "structured_of"]


class Recording(httpx.AsyncBaseTransport):
    """Keeps every byte the server sends (SSE streams included) as it passes."""

    def __init__(self, inner: httpx.AsyncBaseTransport, into: list[Any]) -> None:
        self.inner = inner
        self.into = into

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        into = self.into
        inner_stream = response.stream

        class Tee(httpx.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                assert isinstance(inner_stream, httpx.AsyncByteStream)
                async for chunk in inner_stream:
                    into.append(chunk.decode("utf-8", "replace"))
                    yield chunk

            async def aclose(self) -> None:
                assert isinstance(inner_stream, httpx.AsyncByteStream)
                await inner_stream.aclose()

        response.stream = Tee()
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


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

    transport: httpx.AsyncBaseTransport = httpx.AsyncHTTPTransport()
    if messages is not None:
        transport = Recording(transport, messages)
    async with (
        httpx.AsyncClient(
            headers={"Authorization": f"Bearer {token}", **(headers or {})},
            timeout=httpx.Timeout(60, read=120),
            transport=transport,
        ) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(
            read, write, elicitation_callback=elicitation, message_handler=record
        ) as session,
    ):
        await session.initialize()
        yield session


def structured_of(result: types.CallToolResult) -> dict[str, Any]:
    """A tool result's structured content (a receipt, a page, …)."""
    assert result.structuredContent is not None, result
    return result.structuredContent


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    """An MCP tool error's object: the envelope's error, as the result text."""
    assert result.isError, result
    assert isinstance(result.content[0], types.TextContent)
    body: dict[str, Any] = json.loads(result.content[0].text)
    return body
