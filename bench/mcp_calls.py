"""MCP ``tools/call`` of a read tool that answers at once (the no-op tool on its integration's
MCP endpoint) beside ``POST /v1/runs`` with ``wait_seconds`` for the same tool, in one run:
requests per second and p95 with 8 concurrent sessions (SQLite, embedded worker). Prints a
table and writes ``bench/results/mcp.json``. ``BENCH_SECONDS`` (default 10) per side.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import free_port, service_env, wait_up, write_results
from runs import percentile, prepare, serve

SECONDS = float(os.environ.get("BENCH_SECONDS", "10"))
SESSIONS = 8


async def drive(call: Callable[[], Awaitable[None]]) -> list[float]:
    timings: list[float] = []
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline:
        started = time.perf_counter()
        await call()
        timings.append((time.perf_counter() - started) * 1000)
    return timings


async def mcp_side(url: str, secret: str) -> list[float]:
    async def one() -> list[float]:
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            httpx.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(url, http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()

            async def call() -> None:
                result = await session.call_tool("noop", {})
                assert result.structuredContent is not None
                assert result.structuredContent["kind"] == "result", result

            return await drive(call)

    return [t for ts in await asyncio.gather(*(one() for _ in range(SESSIONS))) for t in ts]


async def rest_side(base: str, secret: str, tool_id: str) -> list[float]:
    async def one() -> list[float]:
        headers = {"Authorization": f"Bearer {secret}"}
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http:

            async def call() -> None:
                answer = await http.post(
                    "/v1/runs", json={"tool_id": tool_id, "input": {}, "wait_seconds": 10}
                )
                assert answer.status_code == 201, answer.text
                assert answer.json()["status"] == "succeeded", answer.text

            return await drive(call)

    return [t for ts in await asyncio.gather(*(one() for _ in range(SESSIONS))) for t in ts]


def figures(timings: list[float]) -> dict[str, float]:
    return {
        "calls": len(timings),
        "rps": round(len(timings) / SECONDS, 1),
        "p50_ms": round(percentile(timings, 50), 1),
        "p95_ms": round(percentile(timings, 95), 1),
    }


def main() -> None:
    port = free_port()
    env = service_env(Path(tempfile.mkdtemp(prefix="bench-mcp-")), port)
    secret, tool_id = prepare(env)
    server = serve(env, "serve")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_up(f"{base}/healthz")
        tool = httpx.get(
            f"{base}/v1/tools/{tool_id}", headers={"Authorization": f"Bearer {secret}"}
        ).json()
        url = f"{base}/mcp/integrations/{tool['integration_id']}"
        mcp = figures(asyncio.run(mcp_side(url, secret)))
        rest = figures(asyncio.run(rest_side(base, secret, tool_id)))
    finally:
        server.terminate()
        server.wait(20)
    results = {"sessions": SESSIONS, "seconds": SECONDS, "mcp_tools_call": mcp, "rest_runs": rest}
    write_results("mcp.json", results)
    print(f"{'side':<18}{'calls':>8}{'req/s':>9}{'p50 ms':>9}{'p95 ms':>9}")
    for name, row in (("MCP tools/call", mcp), ("POST /v1/runs", rest)):
        print(f"{name:<18}{row['calls']:>8}{row['rps']:>9}{row['p50_ms']:>9}{row['p95_ms']:>9}")


if __name__ == "__main__":
    main()
