"""place_order end to end: a confirm answered over REST, the website login and a TOTP code
typed by the person on the protected page in real Chromium (Playwright)."""

from __future__ import annotations

from typing import Any

import httpx
from playwright.async_api import Page
from sqlalchemy import select

from sitetools.jobs.models import InputRequest
from tests.jobs.conftest import Runner
from tests.shop import Shop
from tests.support import chromium, ctx_for, new_person, signed_in_page


async def _pending(runner: Runner, job_id: str) -> dict[str, Any]:
    job = await runner.until(job_id, "needs_input", "failed", "succeeded")
    assert job["status"] == "needs_input", job
    pending: dict[str, Any] = job["pending_input"]
    return pending


async def _signed_in_page(browser: Any, runner: Runner, token: str) -> Page:
    return await signed_in_page(browser, runner.server.url, token)


async def test_place_order_with_login_and_totp_on_the_protected_page(
    runner: Runner, shop: Shop
) -> None:
    before = len(shop.store.orders("alice"))
    job = (
        await runner.run("place_order", {"product_id": 1, "quantity": 2}, wait_seconds=30)
    ).json()
    confirm = job["pending_input"]
    assert confirm["questions"][0]["type"] == "confirm"
    assert "$24.00" in confirm["questions"][0]["prompt"]
    answered = await runner.http.post(
        f"/v1/jobs/{job['id']}/input",
        json={
            "request_id": confirm["request_id"],
            "request_version": confirm["request_version"],
            "answers": {"confirm": True},
        },
    )
    assert answered.status_code == 200, answered.text

    login = await _pending(runner, job["id"])
    assert login["delivery"] == "protected"
    assert login["request_version"] == 2
    async with chromium() as browser:
        page = await _signed_in_page(browser, runner, runner.person.session_token)
        await page.goto(login["protected_input_url"])
        await page.fill('input[name="login.username"]', "alice")
        await page.fill('input[name="login.password"]', "alice-password")
        await page.click('#answer-form button[type="submit"]')
        await page.wait_for_selector("#done")

        code = await _pending(runner, job["id"])
        assert code["request_version"] == 3
        await page.goto(code["protected_input_url"])
        await page.fill('input[name="code"]', shop.code("alice"))
        await page.click('#answer-form button[type="submit"]')
        await page.wait_for_selector("#done")

    await runner.until(job["id"], "succeeded")
    result = (await runner.job(job["id"]))["result"]
    assert result["total_cents"] == 2400
    orders = shop.store.orders("alice")
    assert len(orders) == before + 1
    assert orders[0]["id"] == result["order_id"]
    # The answers left the database once the tool had them.
    async with ctx_for(runner.person.app) as ctx:
        stored = await ctx.db.scalars(
            select(InputRequest.answers_enc).where(InputRequest.job_id == job["id"])
        )
        assert all(value is None for value in stored)


async def test_the_protected_page_asks_for_the_jobs_own_person(runner: Runner) -> None:
    job = (await runner.run("secret_code", {}, wait_seconds=30)).json()
    url = job["pending_input"]["protected_input_url"]
    stranger = await new_person(runner.person.app)

    async def get(target: str, session: str | None = None) -> httpx.Response:
        cookies = {"sitetools_session": session} if session else {}
        async with httpx.AsyncClient(follow_redirects=False, cookies=cookies) as http:
            return await http.get(target)

    anonymous = await get(url)
    assert anonymous.status_code == 303
    assert anonymous.headers["location"].startswith("/dashboard/sign-in?next=")
    assert (await get(url, stranger.session_token)).status_code == 404
    forged = await get(url.split("?token=")[0] + "?token=forged", runner.person.session_token)
    assert forged.status_code == 410
    own = await get(url, runner.person.session_token)
    assert own.status_code == 200
    assert 'name="code"' in own.text
    assert own.headers["cache-control"] == "no-store"


async def test_a_wrong_answer_on_the_page_shows_the_reason_and_keeps_the_question(
    runner: Runner,
) -> None:
    job = (await runner.run("secret_code", {}, wait_seconds=30)).json()
    url = job["pending_input"]["protected_input_url"]
    async with chromium() as browser:
        page = await _signed_in_page(browser, runner, runner.person.session_token)
        await page.goto(url)
        await page.click('#answer-form button[type="submit"]')
        assert await page.inner_text("#form-error") == "Please answer this question."
        await page.fill('input[name="code"]', "654321")
        await page.click('#answer-form button[type="submit"]')
        await page.wait_for_selector("#done")
    await runner.until(job["id"], "succeeded")
    assert (await runner.job(job["id"]))["result"] == {"length": 6}
