"""A small HTTP load generator (run as its own process): N concurrent clients for T seconds."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import httpx


async def main(base: str, token: str, paths: list[str], clients: int, seconds: float) -> None:
    latencies: list[float] = []
    failures = 0
    deadline = time.perf_counter() + seconds

    async def client(index: int) -> None:
        nonlocal failures
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as http:
            i = index
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                response = await http.get(paths[i % len(paths)])
                latencies.append(time.perf_counter() - started)
                failures += response.status_code != 200
                i += clients

    started = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    print(
        json.dumps(
            {
                "requests": len(latencies),
                "failures": failures,
                "rps": len(latencies) / elapsed,
                "p50_ms": latencies[len(latencies) // 2] * 1000,
                "p95_ms": latencies[int(len(latencies) * 0.95)] * 1000,
            }
        )
    )


if __name__ == "__main__":
    spec = json.loads(sys.argv[1])
    asyncio.run(main(spec["base"], spec["token"], spec["paths"], spec["clients"], spec["seconds"]))
