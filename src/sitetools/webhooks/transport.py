"""HTTPS POSTs to webhook receivers (aiohttp), connecting only to checked addresses.

The host of each new connection is resolved here and the address checked (public, or named in
``SITETOOLS_WEBHOOK_ALLOW``) before connecting to exactly that address, so a name that resolves
somewhere else by the time of delivery (DNS rebinding) is refused. TLS still verifies the name.
Redirects are never followed. Errors are described by kind only (a URL may carry a token).
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import certifi
from aiohttp.abc import AbstractResolver, ResolveResult

from sitetools.core.addresses import (
    AddressRefusedError,
    AllowList,
    public_address,
    resolve_admitted,
)
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


class _CheckedResolver(AbstractResolver):
    """Answers only the checked address of a host: the connection goes exactly there."""

    def __init__(self, allow: AllowList) -> None:
        self._allow = allow

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        address = await resolve_admitted(host, port, self._allow)
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": socket.AF_INET6 if ":" in address else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        return None


def _check_literal(url: str, allow: AllowList) -> None:
    """An IP literal is connected to as written (no lookup): check it here."""
    parts = urlsplit(url)
    host = (parts.hostname or "").strip("[]")
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return  # a name: the resolver checks it
    if not (public_address(address) or allow.admits(host, address, parts.port or 443)):
        raise AddressRefusedError(f"{host} may not be reached")


def _causes(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(chain) < 8:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _describe(error: BaseException) -> str:
    """A safe, stable description of why a POST failed (no URL, no response text)."""
    causes = _causes(error)
    if any(isinstance(cause, AddressRefusedError) for cause in causes):
        return "address refused: the host resolves to an address webhooks may not reach"
    if any(isinstance(cause, TimeoutError) for cause in causes):
        return "timeout: no answer in time"
    if any(isinstance(cause, aiohttp.ClientSSLError | ssl.SSLError) for cause in causes):
        return "tls: the certificate or handshake was refused"
    if any(isinstance(cause, ConnectionRefusedError) for cause in causes):
        return "connection refused"
    if isinstance(error, aiohttp.ClientConnectorError):
        return "connection failed"
    if isinstance(error, aiohttp.ClientError):
        return "connection broken: the receiver closed or sent no valid HTTP answer"
    return "delivery failed"


class Sender:
    """Keep-alive connections to receivers (at most ``max_connections`` in all)."""

    def __init__(self, settings: Settings, *, max_connections: int = 128) -> None:
        self._timeout = settings.webhook_timeout_seconds
        self._allow = AllowList.parse(settings.webhook_allow)
        self._ssl = _ssl_context(settings.webhook_ca_file)
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                resolver=_CheckedResolver(self._allow),
                use_dns_cache=False,
                ssl=self._ssl,
                # Webhooks of different people often share a host: the dispatcher caps each
                # webhook; a per-host cap here would let one slow webhook hold up the others.
                limit=self._max_connections,
                limit_per_host=0,
                # Below common servers' idle timeouts (uvicorn: 5 s), so an idle connection is
                # dropped here before the receiver closes it under a new request.
                keepalive_timeout=4.0,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=self._timeout),
                auto_decompress=False,
                trust_env=False,
                skip_auto_headers=("Accept-Encoding",),
            )
        return self._session

    async def post(self, url: str, headers: list[tuple[str, str]], body: bytes) -> PostResult:
        started = time.monotonic()
        status: int | None = None
        error: str | None = None
        all_headers = [("content-type", "application/json"), ("user-agent", USER_AGENT), *headers]
        try:
            _check_literal(url, self._allow)
            async with asyncio.timeout(self._timeout):
                async with self._client().post(
                    url, data=body, headers=all_headers, allow_redirects=False
                ) as response:
                    status = response.status
                    await response.content.read(_READ_AT_MOST)
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
        session, self._session = self._session, None
        if session is not None:
            await session.close()
