"""Integration MCP endpoints: the integration's tools under their MCP names, its jobs only,
list_changed, and place_order end to end (a form question by elicitation, the website login
and TOTP code on the protected page in Chromium)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp.types as types
from sqlalchemy import update

from sitetools.tools.models import Tool
from tests.jobs.conftest import Runner
from tests.mcp_endpoints.conftest import error_of, mcp_session, structured_of
from tests.shop import Shop
from tests.support import chromium, ctx_for, signed_in_page


def _url(runner: Runner, integration_id: str | None = None) -> str:
    return f"{runner.server.url}/mcp/integrations/{integration_id or runner.integration_id}"


async def test_the_integrations_tools_under_their_mcp_names(runner: Runner) -> None:
    async with mcp_session(_url(runner), runner.key) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == {
        "get_product_page",
        "list_deals",
        "list_orders",
        "place_order",
        "search_products",
        "get_job",
        "answer_job",
        "cancel_job",
    }
    page = tools["get_product_page"]
    assert page.inputSchema["required"] == ["product_id"]
    assert page.outputSchema is not None
    assert page.outputSchema["properties"]["result"]["properties"]["price"]["type"]
    assert page.annotations is not None
    assert page.annotations.readOnlyHint is True
    assert tools["place_order"].annotations is not None
    assert tools["place_order"].annotations.readOnlyHint is False


async def test_every_read_tool_of_the_demo_shop_answers_its_result(runner: Runner) -> None:
    async with mcp_session(_url(runner), runner.key) as session:
        found = structured_of(await session.call_tool("search_products", {"query": "mug"}))
        page = structured_of(await session.call_tool("get_product_page", {"product_id": 1}))
        deals = structured_of(await session.call_tool("list_deals", {}))
        orders = structured_of(await session.call_tool("list_orders", {}))
    assert found["kind"] == "result"
    assert {p["name"] for p in found["result"]["products"]} >= {"Blue ceramic mug"}
    assert page["result"]["name"] == "Blue ceramic mug"
    assert deals["kind"] == "result"
    assert isinstance(deals["result"]["deals"], list)
    # list_orders needs the website login: asked on the protected page, never here.
    assert orders["kind"] == "question"
    assert orders["pending_input"]["delivery"] == "protected"


def page_answerer(
    page: Any, shop: Shop, urls: list[str], codes: list[str]
) -> Callable[[Any, types.ElicitRequestParams], Awaitable[types.ElicitResult]]:
    """An elicitation callback that answers URL elicitations on the protected page: the
    website login, then alice's TOTP code."""

    async def elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams)
        urls.append(params.url)
        await page.goto(params.url)
        if await page.locator('input[name="login.username"]').count():
            await page.fill('input[name="login.username"]', "alice")
            await page.fill('input[name="login.password"]', "alice-password")
        else:
            code = shop.code("alice")
            codes.append(code)
            await page.fill('input[name="code"]', code)
        await page.click('#answer-form button[type="submit"]')
        await page.wait_for_selector("#done")
        return types.ElicitResult(action="accept")

    return elicit


async def test_list_orders_signs_in_on_the_protected_page(runner: Runner, shop: Shop) -> None:
    urls: list[str] = []
    codes: list[str] = []
    messages: list[Any] = []
    async with chromium() as browser:
        page = await signed_in_page(browser, runner.server.url, runner.person.session_token)
        elicit = page_answerer(page, shop, urls, codes)
        async with mcp_session(
            _url(runner), runner.key, elicitation=elicit, messages=messages
        ) as session:
            done = structured_of(
                await session.call_tool("list_orders", {}, meta={"sitetools/wait_seconds": 60})
            )
    assert done["kind"] == "result", done
    assert isinstance(done["result"]["orders"], list)
    assert len(urls) == 2
    text = "\n".join(str(m) for m in messages)
    assert "alice-password" not in text
    assert codes[0] not in text


async def test_place_order_end_to_end_over_mcp(runner: Runner, shop: Shop) -> None:
    before = len(shop.store.orders("alice"))
    forms: list[types.ElicitRequestFormParams] = []
    urls: list[str] = []
    messages: list[Any] = []
    code_typed: list[str] = []

    async with chromium() as browser:
        context = await browser.new_context()
        await context.add_cookies(
            [
                {
                    "name": "sitetools_session",
                    "value": runner.person.session_token,
                    "url": runner.server.url,
                }
            ]
        )
        page = await context.new_page()

        on_page = page_answerer(page, shop, urls, code_typed)

        async def elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            if isinstance(params, types.ElicitRequestFormParams):
                forms.append(params)
                return types.ElicitResult(action="accept", content={"confirm": True})
            return await on_page(_context, params)

        account_url = f"{runner.server.url}/mcp"
        async with mcp_session(account_url, runner.key) as account:
            await account.call_tool(
                "call_service_api",
                {
                    "operation_id": "account.update_preferences",
                    "body": {"connection": {"question_delivery": "form"}},
                },
            )
        async with mcp_session(
            _url(runner), runner.key, elicitation=elicit, messages=messages
        ) as session:
            result = await session.call_tool(
                "place_order",
                {"product_id": 1, "quantity": 1},
                meta={"sitetools/retry_key": "order-1", "sitetools/wait_seconds": 60},
            )
    done = structured_of(result)
    assert done["kind"] == "result", (done, len(forms), urls)
    assert done["effect"] == "write"
    assert done["result"]["total_cents"] == 1200
    assert len(forms) == 1
    assert len(urls) == 2
    assert len(shop.store.orders("alice")) == before + 1
    text = "\n".join(str(m) for m in messages)
    assert "alice-password" not in text
    assert code_typed
    assert code_typed[0] not in text


async def test_jobs_of_another_integration_are_not_found_here(runner: Runner) -> None:
    other = (await runner.run("noop", {})).json()  # a test-tools job, not the demo shop's
    async with mcp_session(_url(runner), runner.key) as session:
        missing = error_of(await session.call_tool("get_job", {"job_id": other["id"]}))
        cancel = error_of(await session.call_tool("cancel_job", {"job_id": other["id"]}))
        unknown = error_of(await session.call_tool("noop", {}))
    assert missing["code"] == "not_found"
    assert cancel["code"] == "not_found"
    assert unknown["code"] == "not_found"


async def test_an_integration_key_works_on_its_own_endpoint(runner: Runner) -> None:
    key = await runner.person.key("shop only", integration_id=runner.integration_id)
    async with mcp_session(_url(runner), key.secret) as session:
        page = structured_of(await session.call_tool("get_product_page", {"product_id": 2}))
        read = error_of(await session.call_tool("get_job", {"job_id": page["job_id"]}))
    assert page["result"]["name"] == "Red ceramic mug"
    assert read["code"] == "result_expired"


async def test_the_tool_list_changes_when_the_integrations_tools_change(
    runner: Runner,
) -> None:
    notified: list[Any] = []

    async def on_message(message: Any) -> None:
        notified.append(message)

    async with mcp_session(_url(runner), runner.key, messages=[]) as session:
        session._message_handler = on_message  # type: ignore[attr-defined]
        before = {tool.name for tool in (await session.list_tools()).tools}
        async with ctx_for(runner.person.app) as ctx:
            await ctx.db.execute(
                update(Tool)
                .where(Tool.integration_id == runner.integration_id, Tool.mcp_name == "list_deals")
                .values(enabled=False)
            )
            await ctx.db.commit()
        await session.call_tool("get_product_page", {"product_id": 1})
        after = {tool.name for tool in (await session.list_tools()).tools}
    assert "list_deals" in before
    assert "list_deals" not in after
    changed = [
        m
        for m in notified
        if isinstance(m, types.ServerNotification)
        and isinstance(m.root, types.ToolListChangedNotification)
    ]
    assert changed, notified
