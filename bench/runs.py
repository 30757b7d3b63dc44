"""Runs: end-to-end latency of a no-op tool beside a bare ``python -c pass``, and throughput of
many no-op runs (SQLite with the embedded worker; PostgreSQL with two ``sitetools worker``
processes when ``SITETOOLS_TEST_DATABASE_URL`` names a server). Prints a table and writes
``bench/results/runs.json``. ``BENCH_RUNS`` (default 1000) sets the throughput batch.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import create_key, free_port, service_env, sitetools, wait_up, write_results

ROOT = Path(__file__).resolve().parent.parent
LATENCY_RUNS = int(os.environ.get("BENCH_LATENCY_RUNS", "40"))
BATCH = int(os.environ.get("BENCH_RUNS", "1000"))

NOOP = {
    "integration.toml": 'key = "bench"\nname = "Bench"\n[site]\nurl = "https://bench.example"\n'
    'name = "Bench"\n',
    "tools/noop/tool.toml": 'name = "No-op"\ndescription = "Does nothing."\nmcp_name = "noop"\n'
    'effect = "read"\nentrypoint = "src/main.py:run"\n[input_schema]\ntype = "object"\n'
    '[output_schema]\ntype = "object"\n',
    "tools/noop/src/main.py": "def run(ctx, input):\n    return {'ok': True}\n",
}


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def bare_process_ms() -> list[float]:
    timings = []
    for _ in range(LATENCY_RUNS):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def prepare(env: dict[str, str]) -> tuple[str, str]:
    """An account with a key and the no-op tool; answers (key secret, tool id)."""
    sitetools(env, "migrate")
    email = f"bench-{uuid.uuid4().hex[:8]}@example.com"
    account = json.loads(
        sitetools(
            env,
            "admin",
            "create-account",
            "--email",
            email,
            "--password",
            "bench-password",
            "--type",
            "business",
        )
    )
    package = Path(tempfile.mkdtemp(prefix="bench-noop-"))
    for name, text in NOOP.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    imported = json.loads(
        sitetools(env, "tools", "import", str(package), "--account", account["account_id"])
    )
    secret = create_key(env, email, "runs:create", "jobs:read", "tools:read")
    return secret, (imported["created"] or imported["unchanged"] or imported["updated"])[0]


async def latency(base: str, secret: str, tool_id: str) -> list[float]:
    timings = []
    async with httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {secret}"}, timeout=60
    ) as http:
        for index in range(LATENCY_RUNS + 3):
            started = time.perf_counter()
            response = await http.post(
                "/v1/runs", json={"tool_id": tool_id, "input": {}, "wait_seconds": 30}
            )
            elapsed = (time.perf_counter() - started) * 1000
            assert response.json()["status"] == "succeeded", response.text
            if index >= 3:  # warm-up
                timings.append(elapsed)
    return timings


async def throughput(base: str, secret: str, tool_id: str) -> tuple[float, float]:
    """Runs per second for BATCH no-op runs posted by 8 clients; (runs/s, seconds)."""
    headers = {"Authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http:
        before = (await http.get("/v1/jobs")).json()["counts"]["finished"]
        queue = list(range(BATCH))
        started = time.perf_counter()

        async def poster() -> None:
            while queue:
                queue.pop()
                response = await http.post("/v1/runs", json={"tool_id": tool_id, "input": {}})
                assert response.status_code == 201, response.text

        await asyncio.gather(*(poster() for _ in range(8)))
        while True:
            counts = (await http.get("/v1/jobs")).json()["counts"]
            if counts["finished"] - before >= BATCH:
                break
            await asyncio.sleep(0.2)
        seconds = time.perf_counter() - started
        failed = (await http.get("/v1/jobs", params={"status": "failed"})).json()["data"]
        assert not failed, failed[0]
    return BATCH / seconds, seconds


def serve(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "sitetools.cli.main", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def sqlite_figures() -> dict[str, object]:
    data = Path(tempfile.mkdtemp(prefix="sitetools-bench-runs-"))
    port = free_port()
    env = service_env(data, port)
    secret, tool_id = prepare(env)
    server = serve(env, "serve")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_up(f"{base}/healthz")
        runs = asyncio.run(latency(base, secret, tool_id))
        bare = bare_process_ms()
        rate, seconds = asyncio.run(throughput(base, secret, tool_id))
    finally:
        server.terminate()
        server.wait(20)
    return {
        "run_p50_ms": statistics.median(runs),
        "run_p95_ms": percentile(runs, 95),
        "bare_process_p50_ms": statistics.median(bare),
        "ratio_p50": statistics.median(runs) / statistics.median(bare),
        "throughput_runs_per_s": rate,
        "throughput_seconds": seconds,
    }


def postgres_figures(server_url: str) -> dict[str, object]:
    import asyncpg

    name = f"sitetools_bench_{uuid.uuid4().hex[:8]}"
    admin = server_url.replace("postgresql+asyncpg://", "postgresql://")

    async def sql(statement: str) -> None:
        connection = await asyncpg.connect(admin)
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    asyncio.run(sql(f'CREATE DATABASE "{name}"'))
    data = Path(tempfile.mkdtemp(prefix="sitetools-bench-pg-"))
    port = free_port()
    env = service_env(data, port)
    env["SITETOOLS_DATABASE_URL"] = admin.rsplit("/", 1)[0] + f"/{name}"
    processes = []
    try:
        secret, tool_id = prepare(env)
        processes = [serve(env, "serve", "--no-worker"), serve(env, "worker"), serve(env, "worker")]
        base = f"http://127.0.0.1:{port}"
        wait_up(f"{base}/healthz")
        rate, seconds = asyncio.run(throughput(base, secret, tool_id))
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(20)
        asyncio.run(sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    return {"throughput_runs_per_s": rate, "throughput_seconds": seconds}


def main() -> None:
    results: dict[str, object] = {"sqlite": sqlite_figures()}
    pg = os.environ.get("SITETOOLS_TEST_DATABASE_URL")
    if pg:
        results["postgresql_2_workers"] = postgres_figures(pg)
    lite = results["sqlite"]
    assert isinstance(lite, dict)
    print(f"\nNo-op runs ({os.cpu_count()} cores)")
    print(
        f"  POST /v1/runs wait_seconds → result: p50 {lite['run_p50_ms']:.0f} ms, "
        f"p95 {lite['run_p95_ms']:.0f} ms; bare `python -c pass` p50 "
        f"{lite['bare_process_p50_ms']:.0f} ms; ratio {lite['ratio_p50']:.1f}x "
        f"(target <= 3x: {'met' if lite['ratio_p50'] <= 3 else 'NOT met'})"
    )
    print(
        f"  {BATCH} runs, SQLite, embedded worker: {lite['throughput_runs_per_s']:.1f} runs/s "
        f"({lite['throughput_seconds']:.0f} s)"
    )
    if "postgresql_2_workers" in results:
        row = results["postgresql_2_workers"]
        assert isinstance(row, dict)
        print(
            f"  {BATCH} runs, PostgreSQL, 2 workers: {row['throughput_runs_per_s']:.1f} runs/s "
            f"({row['throughput_seconds']:.0f} s)"
        )
    write_results("runs.json", results)


if __name__ == "__main__":
    main()
