"""Webhooks: deliveries per second from one worker to a local HTTPS receiver, and the delay from
a job's end to its event's arrival (p50/p95). SQLite, ``sitetools serve`` with its embedded
worker; the receiver is its own process. Prints a table, writes ``bench/results/webhooks.json``.
``BENCH_WEBHOOK_EVENTS`` (default 3000) sets the throughput batch.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import trustme

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import free_port, service_env, wait_up, write_results
from runs import percentile, prepare, serve

EVENTS = int(os.environ.get("BENCH_WEBHOOK_EVENTS", "3000"))
JOBS = int(os.environ.get("BENCH_WEBHOOK_JOBS", "60"))
HOOKS = 4
HERE = Path(__file__).resolve().parent


def receiver(directory: Path) -> tuple[subprocess.Popen[bytes], int, Path]:
    ca = trustme.CA()
    cert = ca.issue_cert("localhost")
    ca_file, cert_file, key_file = (directory / n for n in ("ca.pem", "cert.pem", "key.pem"))
    ca.cert_pem.write_to_path(str(ca_file))
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "webhook_receiver.py"),
            str(port),
            str(cert_file),
            str(key_file),
        ]
    )
    return process, port, ca_file


async def arrivals(http: httpx.AsyncClient, url: str) -> list[Any]:
    result: list[Any] = (await http.get(url)).json()
    return result


async def queue_events(env: dict[str, str], count: int) -> None:
    """Events written by the outbox, as job changes write them, for the bench member's hooks."""
    from sqlalchemy import select

    from sitetools.app import create_app
    from sitetools.core.config import Settings
    from sitetools.core.context import Ctx
    from sitetools.webhooks.models import Webhook
    from sitetools.webhooks.outbox import record_event

    settings = Settings(
        data_dir=Path(env["SITETOOLS_DATA_DIR"]), webhook_allow=env["SITETOOLS_WEBHOOK_ALLOW"]
    )
    app = create_app(settings)
    try:
        async with app.state.sessions() as db:
            ctx = Ctx(db, app.state.services)
            hook = (await db.execute(select(Webhook.account_id, Webhook.membership_id))).first()
            assert hook is not None
            for n in range(count):
                await record_event(
                    ctx,
                    account_id=hook[0],
                    membership_id=hook[1],
                    event_type="job.failed",
                    data={"n": n},
                )
            await ctx.commit()
    finally:
        await app.state.engine.dispose()


async def measure(
    base: str, secret: str, tool_id: str, stats: str, env: dict[str, str]
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {secret}"}
    async with (
        httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http,
        httpx.AsyncClient(verify=False, timeout=60) as plain,
    ):
        for n in range(HOOKS):
            response = await http.post(
                "/v1/webhooks", json={"url": f"{stats.rsplit('/', 1)[0]}/hook/{n}"}
            )
            assert response.status_code == 201, response.text
        # (b) job end → arrival.
        ends: dict[str, datetime] = {}
        for _ in range(JOBS):
            response = await http.post(
                "/v1/runs", json={"tool_id": tool_id, "input": {}, "wait_seconds": 30}
            )
            job = response.json()
            assert job["status"] == "succeeded", job
            ends[job["id"]] = datetime.fromisoformat(job["completed_at"])
        await asyncio.sleep(2)
        first_arrival: dict[str, float] = {}
        for _event, job_id, at in await arrivals(plain, stats):
            if job_id in ends:
                first_arrival[job_id] = min(at, first_arrival.get(job_id, at))
        delays = [(first_arrival[j] - ends[j].timestamp()) * 1000 for j in ends]
        # (a) throughput: EVENTS events spread over the hooks, one worker.
        before = len(await arrivals(plain, stats))
        await queue_events(env, EVENTS // HOOKS)
        expected = before + (EVENTS // HOOKS) * HOOKS
        while True:
            got = await arrivals(plain, stats)
            if len(got) >= expected:
                break
            await asyncio.sleep(0.2)
        batch = sorted(at for _e, _j, at in got[before:])
        seconds = batch[-1] - batch[0]
    return {
        "deliveries": len(batch),
        "deliveries_per_s": len(batch) / seconds if seconds else float("inf"),
        "job_end_to_delivery_p50_ms": statistics.median(delays),
        "job_end_to_delivery_p95_ms": percentile(delays, 95),
        "jobs": len(delays),
    }


def main() -> None:
    directory = Path(tempfile.mkdtemp(prefix="sitetools-bench-webhooks-"))
    receiving, receiver_port, ca_file = receiver(directory)
    port = free_port()
    env = service_env(directory / "data", port)
    env["SITETOOLS_WEBHOOK_ALLOW"] = f"localhost:{receiver_port}"
    env["SITETOOLS_WEBHOOK_CA_FILE"] = str(ca_file)
    server = None
    try:
        secret, tool_id = prepare(env)
        server = serve(env, "serve")
        base = f"http://127.0.0.1:{port}"
        wait_up(f"{base}/healthz")
        stats = f"https://localhost:{receiver_port}/stats"
        figures = asyncio.run(measure(base, secret, tool_id, stats, env))
    finally:
        if server is not None:
            server.terminate()
            server.wait(20)
        receiving.terminate()
        receiving.wait(10)
    print("webhooks (SQLite, one worker, local HTTPS receiver)")
    print(f"  deliveries/s            {figures['deliveries_per_s']:8.0f}   (target >= 300)")
    print(f"  job end → delivery p50  {figures['job_end_to_delivery_p50_ms']:8.1f} ms")
    print(
        f"  job end → delivery p95  {figures['job_end_to_delivery_p95_ms']:8.1f} ms (target < 250)"
    )
    write_results("webhooks", figures)


if __name__ == "__main__":
    main()
