"""HTTPS POSTs to webhook receivers, connecting only to checked addresses.

The host of each new connection is resolved here and the address checked (public, or named in
``SITETOOLS_WEBHOOK_ALLOW``) before connecting to exactly that address, so a name that resolves
somewhere else by the time of delivery (DNS rebinding) is refused. TLS still verifies the name.
Redirects are never followed. Errors are described by kind only (a URL may carry a token).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import certifi
import httpcore

from sitetools.core.addresses import AddressRefusedError, AllowList, resolve_admitted
from sitetools.core.config import Settings

__all__ = ["PostResult", "Sender"]

_READ_AT_MOST = 64 * 1024
USER_AGENT = "sitetools-webhooks/1"


@dataclass(frozen=True, slots=True)
class PostResult:
    status: int | None
    error: str | None
    latency_ms: int

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@functools.lru_cache(maxsize=4)
def _ssl_context(ca_file: Path | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=certifi.where())
    if ca_file is not None:
        context.load_verify_locations(cafile=str(ca_file))
    return context


class _CheckedBackend(httpcore.AsyncNetworkBackend):
    """Connects to the checked address of the host, never to what a later lookup says."""

    def __init__(self, allow: AllowList) -> None:
        self._allow = allow
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        address = await resolve_admitted(host, port, self._allow, lookup_seconds=timeout or 10.0)
        return await self._inner.connect_tcp(
            address, port, timeout=timeout, local_address=local_address, socket_options=None
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise AddressRefusedError("unix sockets are not webhook receivers")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _causes(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(chain) < 8:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _describe(error: BaseException) -> str:
    """A safe, stable description of why a POST failed (no URL, no response text)."""
    if isinstance(error, AddressRefusedError):
        return "address refused: the host resolves to an address webhooks may not reach"
    if isinstance(error, TimeoutError | httpcore.TimeoutException):
        return "timeout: no answer in time"
    text = str(error).lower()
    if "certificate" in text or "ssl" in text or "tls" in text or "handshake" in text:
        return "tls: the certificate or handshake was refused"
    if isinstance(error, httpcore.ConnectError):
        if any(isinstance(cause, ConnectionRefusedError) for cause in _causes(error)):
            return "connection refused"
        return "connection failed"
    if isinstance(error, httpcore.ProtocolError | httpcore.NetworkError):
        return "connection broken: the receiver closed or sent no valid HTTP answer"
    return "delivery failed"


class Sender:
    """Keep-alive connection pools, one per receiver origin (httpcore's pool does work in
    proportion to its connections times its waiting requests: small pools stay cheap)."""

    def __init__(self, settings: Settings, *, max_connections: int = 16) -> None:
        self._timeout = settings.webhook_timeout_seconds
        self._max_connections = max_connections
        self._ssl = _ssl_context(settings.webhook_ca_file)
        self._backend = _CheckedBackend(AllowList.parse(settings.webhook_allow))
        self._pools: dict[tuple[str, str, int | None], httpcore.AsyncConnectionPool] = {}

    def _pool(self, url: str) -> httpcore.AsyncConnectionPool:
        parts = urlsplit(url)
        key = (parts.scheme, (parts.hostname or "").lower(), parts.port)
        pool = self._pools.get(key)
        if pool is None:
            pool = httpcore.AsyncConnectionPool(
                ssl_context=self._ssl,
                max_connections=self._max_connections,
                max_keepalive_connections=self._max_connections,
                keepalive_expiry=30.0,
                http1=True,
                http2=False,
                retries=0,
                network_backend=self._backend,
            )
            self._pools[key] = pool
        return pool

    async def post(self, url: str, headers: list[tuple[str, str]], body: bytes) -> PostResult:
        started = time.monotonic()
        timeout = self._timeout
        extensions = {
            "timeout": {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
        }
        all_headers = [
            ("content-type", "application/json"),
            ("user-agent", USER_AGENT),
            *headers,
        ]
        status: int | None = None
        error: str | None = None
        try:
            async with asyncio.timeout(timeout):
                async with self._pool(url).stream(
                    "POST", url, headers=all_headers, content=body, extensions=extensions
                ) as response:
                    status = response.status
                    read = 0
                    async for chunk in response.aiter_stream():
                        read += len(chunk)
                        if read > _READ_AT_MOST:
                            break
        except Exception as failure:  # every failure is an outcome to record, never a crash
            error = _describe(failure)
        latency = int((time.monotonic() - started) * 1000)
        if status is not None and 200 <= status < 300:
            # Answered 2xx: delivered, even if the rest of its body never came.
            return PostResult(status, None, latency)
        if error is None:
            redirect = status is not None and 300 <= status < 400
            error = f"HTTP {status}" + (": redirects are not followed" if redirect else "")
        return PostResult(status, error, latency)

    async def close(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()
