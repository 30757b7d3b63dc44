"""Job rules without a worker (a database of its own, so no worker claims these jobs):
listing, counts, cancelling queued jobs, result erasure and lost workers, with a moved clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from sitetools.app import create_app
from sitetools.core.migrate import migrate
from sitetools.jobs import worker as steps
from sitetools.jobs.models import Job
from sitetools.jobs.states import TRANSITIONS, InvalidTransitionError, move
from sitetools.tools import service as catalog
from sitetools.tools.package import IntegrationPackage
from tests.conftest import make_settings
from tests.jobs.packages import tool
from tests.support import MovableClock, Person, ctx_for, error_code, new_person

WORKER = "test-worker"


@pytest.fixture
async def quiet(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[FastAPI]:
    folder = tmp_path_factory.mktemp("quiet")
    url = f"sqlite+aiosqlite:///{folder / 'quiet.db'}"
    migrate(url)
    app = create_app(make_settings(Path(folder), url), clock=MovableClock())
    yield app
    await app.state.engine.dispose()


@pytest.fixture
async def setup(quiet: FastAPI) -> AsyncIterator[tuple[Person, httpx.AsyncClient, dict[str, str]]]:
    person = await new_person(quiet)
    package = IntegrationPackage(
        key="quiet",
        name="Quiet",
        description="",
        site_url="https://shop.example",
        site_name="Shop",
        mcp_hosted=True,
        tools=[
            tool("noop", "async def run(ctx, input):\n    return {}\n"),
            tool("writer", "async def run(ctx, input):\n    return {}\n", effect="write"),
        ],
    )
    async with ctx_for(quiet) as ctx:
        result = await catalog.import_package(ctx, package, account_id=person.account_id)
        await ctx.db.commit()
    tools = dict(zip(("noop", "writer"), result.created, strict=True))
    transport = httpx.ASGITransport(app=quiet)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://testserver", headers=person.auth()
    ) as http:
        yield person, http, tools


def _clock(app: FastAPI) -> MovableClock:
    clock: MovableClock = app.state.services.clock
    return clock


async def _start(http: httpx.AsyncClient, tool_id: str, **fields: Any) -> dict[str, Any]:
    response = await http.post("/v1/runs", json={"tool_id": tool_id, "input": {}, **fields})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def _claim(app: FastAPI) -> steps.ClaimedRun:
    async with ctx_for(app) as ctx:
        claimed = await steps.claim_next(ctx, WORKER, 30)
        await ctx.commit()
    assert claimed is not None
    return claimed


def test_terminal_states_never_change() -> None:
    for state in ("succeeded", "failed", "cancelled"):
        assert TRANSITIONS[state] == frozenset()
    job = Job(status="succeeded", stage="finished")
    with pytest.raises(InvalidTransitionError):
        move(job, "running", _now())


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


async def test_cancelling_a_queued_job_gives_its_quota_back(
    quiet: FastAPI, setup: tuple[Person, httpx.AsyncClient, dict[str, str]]
) -> None:
    _, http, tools = setup
    job = await _start(http, tools["noop"])
    assert job["status"] == "queued"
    assert job["eta"] == {"min_seconds": 1, "max_seconds": 30}
    quota = (await http.get("/v1/quota")).json()["tool_calls"]
    assert (quota["used"], quota["reserved"]) == (0, 1)
    cancelled = await http.post(f"/v1/jobs/{job['id']}/cancel")
    assert cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["eta"] is None
    quota = (await http.get("/v1/quota")).json()["tool_calls"]
    assert (quota["used"], quota["reserved"]) == (0, 0)


async def test_listing_filters_counts_and_pages(
    quiet: FastAPI, setup: tuple[Person, httpx.AsyncClient, dict[str, str]]
) -> None:
    _, http, tools = setup
    ids = [(await _start(http, tools["noop"]))["id"] for _ in range(5)]
    await http.post(f"/v1/jobs/{ids[0]}/cancel")
    page = (await http.get("/v1/jobs", params={"limit": 2})).json()
    assert [j["id"] for j in page["data"]] == ids[::-1][:2]
    assert page["counts"] == {"needs_input": 0, "in_progress": 4, "finished": 1}
    assert page["needs_input_count"] == 0
    seen = [j["id"] for j in page["data"]]
    while page["next_cursor"]:
        page = (
            await http.get("/v1/jobs", params={"limit": 2, "cursor": page["next_cursor"]})
        ).json()
        seen += [j["id"] for j in page["data"]]
    assert seen == ids[::-1]
    finished = (await http.get("/v1/jobs", params={"status": "cancelled"})).json()
    assert [j["id"] for j in finished["data"]] == [ids[0]]
    assert finished["counts"] == {"needs_input": 0, "in_progress": 4, "finished": 1}
    both = (await http.get("/v1/jobs", params={"status": "queued,cancelled"})).json()
    assert len(both["data"]) == 5
    assert (await http.get("/v1/jobs", params={"q": "SHOP.EXAMPLE"})).json()["data"]
    assert (await http.get("/v1/jobs", params={"q": "nowhere"})).json()["data"] == []
    builds = (await http.get("/v1/jobs", params={"type": "build"})).json()
    assert builds["data"] == []
    assert builds["counts"] == {"needs_input": 0, "in_progress": 0, "finished": 0}
    bad = await http.get("/v1/jobs", params={"status": "queued,bogus"})
    assert error_code(bad) == "invalid_request"
    assert error_code(await http.get("/v1/jobs", params={"limit": 51})) == "invalid_request"


async def test_a_result_is_erased_five_minutes_after_the_job_ends(
    quiet: FastAPI, setup: tuple[Person, httpx.AsyncClient, dict[str, str]]
) -> None:
    _, http, tools = setup
    job = await _start(http, tools["noop"])
    assert (await _claim(quiet)).job_id == job["id"]
    async with ctx_for(quiet) as ctx:
        assert await steps.succeed(ctx, job["id"], WORKER, {"answer": 42})
        await ctx.commit()
    _clock(quiet).advance(4 * 60)
    async with ctx_for(quiet) as ctx:
        assert await steps.erase_results(ctx) == 0
        await ctx.commit()
    _clock(quiet).advance(61)
    async with ctx_for(quiet) as ctx:
        assert await steps.erase_results(ctx) >= 1
        await ctx.commit()
    response = await http.get(f"/v1/jobs/{job['id']}")
    assert response.status_code == 410
    assert error_code(response) == "result_expired"


async def test_a_lost_read_job_is_queued_again_once_then_worker_lost(
    quiet: FastAPI, setup: tuple[Person, httpx.AsyncClient, dict[str, str]]
) -> None:
    _, http, tools = setup
    job = await _start(http, tools["noop"])
    for attempt in (1, 2):
        claimed = await _claim(quiet)
        assert claimed.job_id == job["id"]
        assert claimed.attempt == attempt
        _clock(quiet).advance(31)
        async with ctx_for(quiet) as ctx:
            assert await steps.recover_lost(ctx) == 1
            await ctx.commit()
        _clock(quiet).offset = _clock(quiet).offset.__class__()
        current = (await http.get(f"/v1/jobs/{job['id']}")).json()
        if attempt == 1:
            assert current["status"] == "queued"
    assert current["status"] == "failed"
    assert current["error"]["code"] == "worker_lost"
    assert current["error"]["retryable"] is True


async def test_a_lost_write_that_never_reached_the_site_is_queued_again(
    quiet: FastAPI, setup: tuple[Person, httpx.AsyncClient, dict[str, str]]
) -> None:
    _, http, tools = setup
    job = await _start(http, tools["writer"])
    assert (await _claim(quiet)).job_id == job["id"]
    _clock(quiet).advance(31)
    async with ctx_for(quiet) as ctx:
        await steps.recover_lost(ctx)
        await ctx.commit()
    _clock(quiet).offset = _clock(quiet).offset.__class__()
    assert (await http.get(f"/v1/jobs/{job['id']}")).json()["status"] == "queued"
