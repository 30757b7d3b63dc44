"""A real HTTPS webhook receiver for the tests: uvicorn with a certificate from a test CA.

Paths choose the answer: ``/ok/<name>`` 200, ``/status/<code>/<name>`` that status,
``/slow/<seconds>/<name>`` 200 after a sleep, ``/redirect/<name>`` 302 to a private address,
``/script/<name>`` the next status queued with :meth:`Receiver.script` for that path (200 when
none is left). The receiver lives for the whole session: tests give each path a unique name.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trustme
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support import free_port, served


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def event_id(self) -> str:
        return self.headers["webhook-id"]


@dataclass
class Receiver:
    ca_file: Path
    port: int
    requests: list[Received] = field(default_factory=list)
    scripts: dict[str, deque[int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def allow(self) -> str:
        """``SITETOOLS_WEBHOOK_ALLOW`` for this receiver."""
        return f"localhost:{self.port},127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"https://localhost:{self.port}{path}"

    def script(self, path: str, *statuses: int) -> None:
        with self.lock:
            self.scripts.setdefault(path, deque()).extend(statuses)

    def at(self, path: str) -> list[Received]:
        with self.lock:
            return [r for r in self.requests if r.path == path]

    async def wait_for(self, path: str, count: int = 1, seconds: float = 30) -> list[Received]:
        deadline = time.monotonic() + seconds
        while True:
            got = self.at(path)
            if len(got) >= count:
                return got
            assert time.monotonic() < deadline, f"{path}: {len(got)} of {count} arrived"
            await asyncio.sleep(0.02)

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        path = request.url.path
        with self.lock:
            self.requests.append(Received(path, dict(request.headers), body, time.monotonic()))
            script = self.scripts.get(path)
            status = script.popleft() if script else 200
        parts = path.strip("/").split("/")
        if parts[0] == "status":
            status = int(parts[1])
        elif parts[0] == "slow":
            await asyncio.sleep(float(parts[1]))
        elif parts[0] == "redirect":
            return Response(status_code=302, headers={"location": "https://10.0.0.1/private"})
        return Response(b"ok", status_code=status)


def plain_signatures(secret: str, headers: dict[str, str], body: bytes) -> tuple[str, list[str]]:
    """The spec's check written out: the expected v1 signature and the ones sent."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.digest(key, signed, hashlib.sha256)).decode()
    sent = [part.split(",", 1)[1] for part in headers["webhook-signature"].split(" ")]
    return expected, sent


class RunningReceiver:
    def __init__(self, directory: Path) -> None:
        ca = trustme.CA()
        cert = ca.issue_cert("localhost", "127.0.0.1")
        ca_file, key_file, cert_file = (directory / n for n in ("ca.pem", "key.pem", "cert.pem"))
        ca.cert_pem.write_to_path(str(ca_file))
        cert.private_key_pem.write_to_path(str(key_file))
        cert.cert_chain_pems[0].write_to_path(str(cert_file))
        self.receiver = Receiver(ca_file, free_port())
        app = Starlette(
            routes=[Route("/{path:path}", self.receiver.handle, methods=["POST", "GET"])]
        )
        self._serving = served(
            app,
            self.receiver.port,
            ssl_keyfile=str(key_file),
            ssl_certfile=str(cert_file),
            access_log=False,
        )

    def __enter__(self) -> Receiver:
        self._serving.__enter__()
        return self.receiver

    def __exit__(self, *exc: Any) -> None:
        self._serving.__exit__(*exc)
