"""The sign-in page in real Chromium (Debian's, driven by Playwright)."""

from __future__ import annotations

from fastapi import FastAPI

from tests.conftest import LiveServer
from tests.support import chromium, new_person


async def test_person_signs_in_and_out_in_a_browser(app: FastAPI, live_server: LiveServer) -> None:
    person = await new_person(app)
    async with chromium() as browser:
        page = await browser.new_page()
        await page.goto(f"{live_server.url}/dashboard")
        assert page.url.endswith("/dashboard/sign-in?next=/dashboard")
        await page.fill("input[name=email]", person.email)
        await page.fill("input[name=password]", "wrong password")
        await page.click("button[type=submit]")
        assert await page.text_content("[role=alert]") == "Email or password is incorrect."
        await page.fill("input[name=password]", person.password)
        await page.click("button[type=submit]")
        await page.wait_for_url(f"{live_server.url}/dashboard")
        assert person.email in (await page.content())
        cookies = await page.context.cookies()
        session = next(c for c in cookies if c["name"] == "sitetools_session")
        assert session["httpOnly"] is True
        assert session["sameSite"] == "Lax"
        assert await page.evaluate("document.cookie.includes('sitetools_session')") is False
        await page.click("text=Sign out")
        await page.wait_for_url(f"{live_server.url}/dashboard/sign-in")
