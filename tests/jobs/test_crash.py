"""A worker killed mid-way loses no job (PostgreSQL, two ``sitetools worker`` processes).

Every run touches a counting site, so the test knows how often each job ran: a write never
twice; a read twice only when its first attempt was cut off by the kill.
"""

from __future__ import annotations

import asyncio
import collections
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from sitetools.jobs.models import Job
from sitetools.tools import service as catalog
from sitetools.tools.models import Tool
from sitetools.tools.package import IntegrationPackage
from tests.conftest import LiveServer
from tests.jobs.packages import tool
from tests.support import ctx_for, free_port, new_person, served, sitetools_worker

RUNS = 200
TERMINAL = {"succeeded", "failed", "cancelled"}

TOUCH = """
import asyncio
async def run(ctx, input):
    response = await ctx.http.get(f"{ctx.site_url}/hit", params={"n": input["n"]})
    response.raise_for_status()
    await asyncio.sleep(input["seconds"])
    return {"n": input["n"]}
"""


class CountingSite:
    """Counts the hits of each run number."""

    def __init__(self) -> None:
        self.hits: collections.Counter[int] = collections.Counter()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    async def hit(self, request: Request) -> JSONResponse:
        self.hits[int(request.query_params["n"])] += 1
        return JSONResponse({"ok": True})


@pytest.fixture
def counting_site() -> Iterator[CountingSite]:
    site = CountingSite()
    app = Starlette(routes=[Route("/hit", site.hit)])
    with served(app, site.port, backlog=2048):
        yield site


def _worker(database_url: str, data_dir: Path, site: CountingSite) -> subprocess.Popen[bytes]:
    return sitetools_worker(
        database_url,
        data_dir,
        egress_allow=f"127.0.0.1:{site.port}",
        job_lease_seconds="5",
        worker_concurrency="4",
    )


async def _jobs(app: FastAPI, ids: list[str]) -> dict[str, Job]:
    async with ctx_for(app) as ctx:
        rows = await ctx.db.scalars(select(Job).where(Job.id.in_(ids)))
        return {job.id: job for job in rows}


async def test_a_worker_killed_with_sigkill_loses_no_job_and_reruns_no_write(
    app: FastAPI,
    database_url: str,
    data_dir: Path,
    live_server: LiveServer,
    counting_site: CountingSite,
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("several worker processes need PostgreSQL")
    person = await new_person(app, account_type="business")
    package = IntegrationPackage(
        key="crash",
        name="Crash",
        description="Runs that count their visits",
        site_url=counting_site.url,
        site_name="Counter",
        mcp_hosted=True,
        tools=[tool("touch_read", TOUCH), tool("touch_write", TOUCH, effect="write")],
    )
    async with ctx_for(app) as ctx:
        imported = await catalog.import_package(ctx, package, account_id=person.account_id)
        await ctx.db.commit()
        rows = await ctx.db.execute(
            select(Tool.mcp_name, Tool.id).where(Tool.integration_id == imported.integration_id)
        )
        tools = {row[0]: row[1] for row in rows.all()}
    key = await person.key("crash")
    effects: dict[str, str] = {}
    numbers: dict[str, int] = {}
    async with httpx.AsyncClient(
        base_url=live_server.url, headers={"Authorization": f"Bearer {key.secret}"}, timeout=60
    ) as http:
        for n in range(RUNS):
            name = "touch_write" if n % 2 else "touch_read"
            body: dict[str, Any] = {"tool_id": tools[name], "input": {"n": n, "seconds": 0.3}}
            response = await http.post("/v1/runs", json=body)
            assert response.status_code == 201, response.text
            effects[response.json()["id"]] = name
            numbers[response.json()["id"]] = n
    ids = list(effects)
    first, second = (_worker(database_url, data_dir, counting_site) for _ in range(2))
    try:
        # Kill one worker once a quarter of the jobs have ended, while it holds others.
        deadline = time.monotonic() + 240
        while True:
            jobs = await _jobs(app, ids)
            ended = sum(job.status in TERMINAL for job in jobs.values())
            held = sum(
                job.status == "running" and f"-{first.pid}-" in (job.lease_owner or "")
                for job in jobs.values()
            )
            if ended >= RUNS // 4 and held >= 2:
                break
            assert time.monotonic() < deadline, f"only {ended} jobs ended"
            await asyncio.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        while True:
            jobs = await _jobs(app, ids)
            if all(job.status in TERMINAL for job in jobs.values()):
                break
            assert time.monotonic() < deadline, collections.Counter(
                job.status for job in jobs.values()
            )
            await asyncio.sleep(0.2)
    finally:
        for process in (first, second):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in (first, second):
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()

    outcomes: collections.Counter[str] = collections.Counter()
    for job_id, job in jobs.items():
        hits = counting_site.hits[numbers[job_id]]
        write = effects[job_id] == "touch_write"
        outcomes[f"{job.status}:{job.error_code}"] += 1
        assert job.lease_owner is None or job.status in TERMINAL
        if write:
            assert hits <= 1, f"a write ran {hits} times"
        if job.status == "succeeded":
            assert hits >= 1
            assert hits == 1 or (not write and job.attempts == 2)
            continue
        assert job.status == "failed", (job.status, job.error_code)
        if write:
            # It reached the site before its worker died: maybe written, never re-run.
            assert job.error_code == "outcome_unknown"
            assert (job.error_details or {}).get("possible_commit") is True
        else:
            assert job.error_code == "worker_lost"
    # The kill did interrupt work: some job was re-queued or ended by the recovery.
    recovered = sum(job.attempts > 1 for job in jobs.values())
    assert recovered + outcomes["failed:outcome_unknown"] + outcomes["failed:worker_lost"] >= 1
