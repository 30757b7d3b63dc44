"""Runs end to end over real HTTP: the embedded worker runs each tool in its sandboxed process
against the real Demo Shop."""

from __future__ import annotations

import asyncio
import os

from sqlalchemy import update

from sitetools.jobs import worker as steps
from sitetools.jobs.models import Job
from sitetools.runtime.sandbox import process_tree
from tests.jobs.conftest import Runner
from tests.support import ctx_for, error_code


async def test_a_fast_run_answers_its_result_once(runner: Runner) -> None:
    response = await runner.run("search_products", {"query": "mug"}, wait_seconds=30)
    assert response.status_code == 201, response.text
    job = response.json()
    assert job["status"] == "succeeded"
    assert job["stage"] == "finished"
    assert {p["name"] for p in job["result"]["products"]} >= {"Blue ceramic mug"}
    assert job["tool_id"] == runner.tools["search_products"]
    assert job["watch_url"].endswith(f"/dashboard/jobs/{job['id']}")
    assert job["completed_at"] is not None
    again = await runner.http.get(f"/v1/jobs/{job['id']}")
    assert again.status_code == 410
    assert error_code(again) == "result_expired"
    # The listing never carries a result.
    listed = (await runner.http.get("/v1/jobs")).json()
    assert [j["id"] for j in listed["data"]] == [job["id"]]
    assert "result" not in listed["data"][0]


async def test_a_queued_run_is_read_later_and_the_result_is_taken_by_that_read(
    runner: Runner,
) -> None:
    response = await runner.run("noop", {})
    assert response.status_code == 201
    job = response.json()
    assert job["status"] in ("queued", "running", "succeeded")
    assert job["result"] is None
    await runner.until(job["id"], "succeeded")
    first = await runner.job(job["id"])
    assert first["result"] == {"ok": True}
    assert (await runner.http.get(f"/v1/jobs/{job['id']}")).status_code == 410


async def test_the_browser_tool_reads_the_javascript_page_in_chromium(runner: Runner) -> None:
    response = await runner.run("list_deals", {}, wait_seconds=60)
    job = response.json()
    assert job["status"] == "succeeded", job["error"]["details"]
    assert {d["id"] for d in job["result"]["deals"]} >= {2, 3}


async def test_invalid_input_starts_nothing_and_uses_no_quota(runner: Runner) -> None:
    before = (await runner.http.get("/v1/quota", headers=runner.person.auth())).json()
    response = await runner.run("search_products", {"query": 5, "extra": True})
    assert response.status_code == 400
    assert error_code(response) == "invalid_input"
    paths = {issue["path"] for issue in response.json()["error"]["details"]["issues"]}
    assert "/body/input/query" in paths
    assert "5" not in str(response.json()["error"]["details"])
    after = (await runner.http.get("/v1/quota", headers=runner.person.auth())).json()
    assert after["tool_calls"]["used"] == before["tool_calls"]["used"]
    assert after["tool_calls"]["reserved"] == before["tool_calls"]["reserved"]
    assert (await runner.http.get("/v1/jobs")).json()["data"] == []


async def test_a_run_uses_one_tool_call_of_the_quota(runner: Runner) -> None:
    response = await runner.run("noop", {}, wait_seconds=30)
    assert response.json()["status"] == "succeeded"
    quota = (await runner.http.get("/v1/quota", headers=runner.person.auth())).json()
    assert quota["tool_calls"]["used"] == 1
    assert quota["tool_calls"]["reserved"] == 0


async def test_an_unknown_tool_is_not_found(runner: Runner) -> None:
    response = await runner.http.post("/v1/runs", json={"tool_id": "tool_" + "0" * 32, "input": {}})
    assert response.status_code == 404
    assert error_code(response) == "not_found"


async def test_retry_key_returns_the_same_job_and_refuses_a_different_request(
    runner: Runner,
) -> None:
    first = await runner.run("noop", {}, retry_key="order-42")
    second = await runner.run("noop", {}, retry_key="order-42")
    assert first.status_code == second.status_code == 201
    assert first.json()["id"] == second.json()["id"]
    other = await runner.run("search_products", {"query": "mug"}, retry_key="order-42")
    assert other.status_code == 409
    assert error_code(other) == "retry_conflict"


async def test_two_concurrent_identical_requests_make_one_job(runner: Runner) -> None:
    responses = await asyncio.gather(
        *(runner.run("noop", {}, retry_key="same-time") for _ in range(4))
    )
    assert {r.status_code for r in responses} == {201}
    assert len({r.json()["id"] for r in responses}) == 1
    listed = (await runner.http.get("/v1/jobs")).json()
    assert len(listed["data"]) == 1
    quota = (await runner.http.get("/v1/quota", headers=runner.person.auth())).json()
    assert quota["tool_calls"]["used"] + quota["tool_calls"]["reserved"] == 1


async def test_invalid_output_fails_the_run(runner: Runner) -> None:
    job = (await runner.run("bad_output", {}, wait_seconds=30)).json()
    assert job["status"] == "failed"
    assert job["error"]["code"] == "invalid_output"
    assert job["result"] is None


async def test_a_tool_error_carries_its_customer_message(runner: Runner) -> None:
    job = (await runner.run("fails_politely", {}, wait_seconds=30)).json()
    assert job["status"] == "failed"
    assert job["error"]["code"] == "execution_failed"
    assert job["error"]["message"] == "The shop is closed for inventory today."


async def test_a_crash_shows_a_safe_message_without_internals(runner: Runner) -> None:
    job = (await runner.run("crashes", {}, wait_seconds=30)).json()
    assert job["status"] == "failed"
    assert job["error"]["code"] == "execution_failed"
    assert "do-not-leak" not in str(job)
    assert "RuntimeError" not in str(job)


async def test_the_execution_budget_ends_a_run_that_takes_too_long(runner: Runner) -> None:
    job = (await runner.run("sleeper", {"seconds": 30}, wait_seconds=30)).json()
    assert job["status"] == "failed"
    assert job["error"]["code"] == "execution_budget_exhausted"


async def test_time_waiting_for_an_answer_is_not_counted_in_the_budget(runner: Runner) -> None:
    job = (await runner.run("sleep_after_ask", {"seconds": 1}, wait_seconds=30)).json()
    assert job["status"] == "needs_input"
    await asyncio.sleep(3.5)  # longer than the 3 s budget, while waiting
    pending = job["pending_input"]
    answered = await runner.http.post(
        f"/v1/jobs/{job['id']}/input",
        json={
            "request_id": pending["request_id"],
            "request_version": pending["request_version"],
            "answers": {"confirm": True},
        },
    )
    assert answered.status_code == 200, answered.text
    done = await runner.until(job["id"], "succeeded", "failed")
    assert done["status"] == "succeeded", done


async def test_memory_over_the_limit_kills_the_run(runner: Runner) -> None:
    job = (await runner.run("memory_hog", {}, wait_seconds=40)).json()
    assert job["status"] == "failed"
    assert job["error"]["code"] == "execution_failed"
    assert job["error"]["details"]["reason"] == "memory_limit"


async def test_too_many_processes_kill_the_run_and_all_of_them(runner: Runner) -> None:
    before = set(process_tree(os.getpid()))
    job = (await runner.run("fork_bomb", {}, wait_seconds=40)).json()
    assert job["status"] == "failed"
    assert job["error"]["details"]["reason"] == "process_limit"
    await asyncio.sleep(0.5)
    leftover = [
        pid for pid in process_tree(os.getpid()) if pid not in before and _command(pid) == "sleep"
    ]
    assert leftover == []


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as file:
            return file.read().strip()
    except OSError:
        return ""


async def test_cancelling_a_running_job_kills_its_process_within_a_second(
    runner: Runner,
) -> None:
    job = (await runner.run("long_sleeper", {"seconds": 60})).json()
    running = await runner.until(job["id"], "running")
    assert running["stage"] in ("starting", "running")
    await asyncio.sleep(0.5)
    sleepers = _tool_processes(job["id"])
    assert sleepers, "the tool process should be running"
    cancelled = await runner.http.post(f"/v1/jobs/{job['id']}/cancel")
    started = asyncio.get_running_loop().time()  # the cancel is accepted
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    while any(_alive(pid) for pid in sleepers):
        assert asyncio.get_running_loop().time() - started < 1.0
        await asyncio.sleep(0.02)
    # Cancelling again answers the job unchanged.
    again = await runner.http.post(f"/v1/jobs/{job['id']}/cancel")
    assert again.json()["status"] == "cancelled"
    assert again.json()["completed_at"] == cancelled.json()["completed_at"]


def _tool_processes(job_id: str) -> list[int]:
    """The job's tool process (others' may still be running): it is named for its job."""
    found = []
    for pid in process_tree(os.getpid()):
        try:
            with open(f"/proc/{pid}/comm") as file:
                if file.read().strip() == job_id[:15]:
                    found.append(pid)
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as file:
        return file.read().split()[2] != "Z"


async def test_cancelling_a_job_waiting_for_an_answer_closes_its_question(
    runner: Runner,
) -> None:
    job = (await runner.run("questions", {}, wait_seconds=30)).json()
    assert job["status"] == "needs_input"
    cancelled = await runner.http.post(f"/v1/jobs/{job['id']}/cancel")
    assert cancelled.json()["status"] == "cancelled"
    pending = job["pending_input"]
    late = await runner.http.post(
        f"/v1/jobs/{job['id']}/input",
        json={
            "request_id": pending["request_id"],
            "request_version": pending["request_version"],
            "answers": {"name": "x", "size": "s", "sure": True},
        },
    )
    assert error_code(late) == "input_not_pending"


async def test_revoking_the_key_that_started_a_job_stops_it(runner: Runner) -> None:
    job = (await runner.run("long_sleeper", {"seconds": 60})).json()
    await runner.until(job["id"], "running")
    revoked = await runner.http.delete(
        f"/v1/api-keys/{runner.key_id}", headers=runner.person.auth()
    )
    assert revoked.status_code == 204
    stopped = await runner.until(job["id"], "cancelled", seconds=5)
    assert stopped["status"] == "cancelled"


async def test_another_clients_job_is_not_found(runner: Runner) -> None:
    job = (await runner.run("noop", {}, wait_seconds=30)).json()
    other = await runner.person.key("other")
    response = await runner.http.get(
        f"/v1/jobs/{job['id']}", headers={"Authorization": f"Bearer {other.secret}"}
    )
    assert response.status_code == 404
    assert error_code(response) == "not_found"
    listed = await runner.http.get("/v1/jobs", headers={"Authorization": f"Bearer {other.secret}"})
    assert listed.json()["data"] == []
    # The Dashboard sees every job of its member (without taking the result).
    seen = await runner.http.get(f"/v1/jobs/{job['id']}", headers=runner.person.auth())
    assert seen.status_code == 200


async def test_a_write_that_reached_the_site_is_outcome_unknown_when_its_worker_dies(
    runner: Runner,
) -> None:
    # The worker is simulated lost: its lease is taken away while the tool runs.
    job = (await runner.run("write_touching_site", {"seconds": 60})).json()
    await runner.until(job["id"], "running")
    await asyncio.sleep(1.5)  # the tool has fetched from the site
    app = runner.person.app
    async with ctx_for(app) as ctx:
        await ctx.db.execute(
            update(Job)
            .where(Job.id == job["id"])
            .values(lease_owner="dead-worker", lease_expires_at=ctx.now())
        )
        await ctx.db.commit()
    async with ctx_for(app) as ctx:
        await steps.recover_lost(ctx)
        await ctx.db.commit()
    ended = await runner.until(job["id"], "failed", seconds=5)
    assert ended["error"]["code"] == "outcome_unknown"
    assert ended["error"]["details"]["possible_commit"] is True
