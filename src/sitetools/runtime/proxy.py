"""The per-run egress proxy the worker runs: HTTP ``CONNECT`` and plain HTTP forwarding.

Every destination passes ``EgressPolicy`` on the address actually connected to. A plain HTTP
request is forwarded with ``Connection: close``, so one client connection never reaches a
second host unchecked. A refusal answers 403 and is recorded for the run's log.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from urllib.parse import urlsplit

import structlog

from sitetools.runtime.egress import EgressPolicy, EgressRefusedError

__all__ = ["EgressProxy"]

_log = structlog.get_logger("sitetools.egress")
_HEAD_LIMIT = 64 * 1024
_HOP_HEADERS = {"proxy-authorization", "proxy-connection", "connection", "keep-alive"}


class EgressProxy:
    def __init__(
        self, policy: EgressPolicy, on_connect: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """``on_connect`` is awaited after each connection to the site opens and before any
        byte of the tool's request is sent (the runner records that the site was reached)."""
        self.policy = policy
        self._on_connect = on_connect
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.refusals: list[str] = []
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _refuse(self, writer: asyncio.StreamWriter, reason: str, status: int = 403) -> None:
        self.refusals.append(reason)
        _log.info("egress_refused", reason=reason)
        body = f"sitetools egress refused: {reason}\n".encode()
        writer.write(
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: text/plain\r\n"
            f"X-Sitetools-Egress: refused\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n".encode()
            + body
        )
        with contextlib.suppress(ConnectionError):
            await writer.drain()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > _HEAD_LIMIT:
            await self._refuse(writer, "request head too large", 431)
            return
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ", 2)
        except ValueError:
            await self._refuse(writer, "malformed request", 400)
            return
        if method.upper() == "CONNECT":
            host, _, port_text = target.rpartition(":")
            if not host or not port_text.isdigit():
                await self._refuse(writer, "malformed CONNECT target", 400)
                return
            await self._tunnel(reader, writer, host, int(port_text))
            return
        url = urlsplit(target)
        if url.scheme != "http" or not url.hostname:
            await self._refuse(writer, "only absolute http:// URLs or CONNECT", 400)
            return
        port = url.port or 80
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        headers = [
            line
            for line in lines[1:]
            if line and line.split(":", 1)[0].strip().lower() not in _HOP_HEADERS
        ]
        request = "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close", ""])
        await self._forward(reader, writer, url.hostname, port, request.encode("latin-1") + b"\r\n")

    async def _open(
        self, writer: asyncio.StreamWriter, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        try:
            address = await self.policy.resolve(host, port)
        except EgressRefusedError as refused:
            await self._refuse(writer, refused.reason)
            return None
        try:
            upstream = await asyncio.wait_for(asyncio.open_connection(address, port), 15)
        except (OSError, TimeoutError):
            await self._refuse(writer, f"{host}:{port} did not answer", 502)
            return None
        try:
            if self._on_connect is not None:
                await self._on_connect()
        except Exception:
            upstream[1].close()
            _log.exception("egress_connect_not_recorded")
            await self._refuse(writer, "the connection could not be recorded", 503)
            return None
        return upstream

    async def _tunnel(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, port: int
    ) -> None:
        upstream = await self._open(writer, host, port)
        if upstream is None:
            return
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.drain()
        await _pipe_both(reader, writer, *upstream)

    async def _forward(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        host: str,
        port: int,
        head: bytes,
    ) -> None:
        upstream = await self._open(writer, host, port)
        if upstream is None:
            return
        upstream[1].write(head)
        await _pipe_both(reader, writer, *upstream)


async def _copy(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    try:
        while chunk := await source.read(65536):
            target.write(chunk)
            await target.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            if target.can_write_eof():
                target.write_eof()


async def _pipe_both(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream_writer: asyncio.StreamWriter,
) -> None:
    try:
        await asyncio.gather(
            _copy(client_reader, upstream_writer), _copy(upstream_reader, client_writer)
        )
    finally:
        upstream_writer.close()
