"""``make mcp-conformance``: the MCP conformance suite's server scenarios against a fresh
service's account endpoint, and prints the suite's summary.

The suite's client sends no credentials, so it talks to a small local relay that adds an API
key's ``Authorization`` header and forwards everything else unchanged (Host and Origin included,
so the DNS-rebinding scenario meets the service's own checks). Needs ``npx`` (Node); the suite
needs Node 22, fetched from the npm registry as the ``node`` package.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import free_port, service_env, wait_up
from runs import prepare, serve

SUITE = "@modelcontextprotocol/conformance@0.1.16"


def relay(target: str, target_host: str, secret: str, own_host: str) -> Starlette:
    client = httpx.AsyncClient(timeout=httpx.Timeout(60, read=300))

    async def forward(request: Request) -> StreamingResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("content-length",)}
        if headers.get("host") == own_host:
            headers["host"] = target_host
        if headers.get("origin") == f"http://{own_host}":
            headers["origin"] = f"http://{target_host}"
        headers["authorization"] = f"Bearer {secret}"
        upstream = await client.send(
            client.build_request(
                request.method, target, headers=headers, content=await request.body()
            ),
            stream=True,
        )
        passed = {
            k: v
            for k, v in upstream.headers.items()
            if k.lower() not in ("content-length", "transfer-encoding", "connection")
        }
        return StreamingResponse(
            upstream.aiter_raw(), status_code=upstream.status_code, headers=passed
        )

    return Starlette(routes=[Route("/mcp", forward, methods=["GET", "POST", "DELETE"])])


def main() -> int:
    port, relay_port = free_port(), free_port()
    env = service_env(Path(tempfile.mkdtemp(prefix="sitetools-conformance-")), port)
    secret, _tool = prepare(env)
    server = serve(env, "serve")
    target_host = f"127.0.0.1:{port}"
    own_host = f"127.0.0.1:{relay_port}"
    app: Any = relay(f"http://{target_host}/mcp", target_host, secret, own_host)
    runner = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=relay_port, log_level="warning")
    )
    thread = threading.Thread(target=runner.run, daemon=True)
    try:
        wait_up(f"http://{target_host}/healthz")
        thread.start()
        while not runner.started:
            time.sleep(0.05)
        out = Path(tempfile.mkdtemp(prefix="conformance-results-"))
        done = subprocess.run(
            [
                "npx",
                "-y",
                "-p",
                "node@22",
                "-p",
                SUITE,
                "--",
                "conformance",
                "server",
                "--url",
                f"http://{own_host}/mcp",
                "-o",
                str(out),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        lines = [line for line in done.stdout.splitlines() if "npm warn" not in line]
        print("\n".join(lines))
        print(f"(results under {out})")
        return 0
    finally:
        runner.should_exit = True
        server.terminate()
        server.wait(20)


if __name__ == "__main__":
    raise SystemExit(main())
