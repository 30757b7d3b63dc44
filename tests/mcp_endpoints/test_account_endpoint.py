"""The account MCP endpoint with the real ``mcp`` client over HTTP: every tool, receipts,
questions by elicitation and on the protected page, and the errors as MCP tool errors."""

from __future__ import annotations

from typing import Any

import httpx
import mcp.types as types
import pytest
from sqlalchemy import select

from sitetools.jobs.models import Job
from tests.jobs.conftest import Runner
from tests.mcp_endpoints.conftest import error_of, mcp_session, structured_of
from tests.shop import Shop
from tests.support import chromium, ctx_for, signed_in_page


def _url(runner: Runner) -> str:
    return f"{runner.server.url}/mcp"


async def test_the_account_tools_are_listed_with_schemas_and_effect_hints(
    runner: Runner,
) -> None:
    async with mcp_session(_url(runner), runner.key) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == {
        "search_tools",
        "get_tool",
        "run_tool",
        "get_job",
        "answer_job",
        "cancel_job",
        "search_service_api",
        "describe_service_api",
        "call_service_api",
        "sign_in",
    }
    for tool in tools.values():
        assert tool.inputSchema["type"] == "object"
        assert tool.outputSchema is not None
        assert tool.outputSchema["type"] == "object"
        assert tool.annotations is not None
    assert tools["search_tools"].annotations.readOnlyHint is True  # type: ignore[union-attr]
    assert tools["run_tool"].annotations.readOnlyHint is False  # type: ignore[union-attr]
    assert tools["call_service_api"].annotations.destructiveHint is True  # type: ignore[union-attr]
    assert tools["run_tool"].inputSchema["required"] == ["tool_id", "input"]


async def test_search_tools_and_get_tool_answer_what_rest_answers(runner: Runner) -> None:
    params = {"query": "product", "integration_id": runner.integration_id, "limit": 3}
    rest = (await runner.http.get("/v1/tools", params=params)).json()
    async with mcp_session(_url(runner), runner.key) as session:
        page = structured_of(await session.call_tool("search_tools", params))
        tool = structured_of(await session.call_tool("get_tool", {"tool_id": runner.tools["noop"]}))
        by_site = structured_of(
            await session.call_tool("search_tools", {"site_url": runner.server.url, "limit": 5})
        )
    assert [t["id"] for t in page["data"]] == [t["id"] for t in rest["data"]]
    assert page["data"], page
    assert tool["id"] == runner.tools["noop"]
    assert tool["mcp_name"] == "noop"
    assert "data" in by_site


async def test_run_tool_answers_the_result_once_and_the_job_is_the_rest_job(
    runner: Runner,
) -> None:
    async with mcp_session(_url(runner), runner.key) as session:
        done = structured_of(
            await session.call_tool(
                "run_tool", {"tool_id": runner.tools["noop"], "input": {}, "wait_seconds": 30}
            )
        )
        assert done["kind"] == "result"
        assert done["result"] == {"ok": True}
        assert done["effect"] == "read"
        assert done["output"]["read_with"] == "get_job"
        # The result was read by that call: later reads, on MCP or REST, answer result_expired.
        again = error_of(await session.call_tool("get_job", {"job_id": done["job_id"]}))
        assert again["code"] == "result_expired"
    rest = await runner.http.get(f"/v1/jobs/{done['job_id']}")
    assert rest.status_code == 410
    async with ctx_for(runner.person.app) as ctx:
        origin = await ctx.db.scalar(select(Job.origin).where(Job.id == done["job_id"]))
    assert origin == "mcp"


async def test_a_pending_receipt_then_get_job_reads_the_result(runner: Runner) -> None:
    async with mcp_session(_url(runner), runner.key) as session:
        started = structured_of(
            await session.call_tool(
                "run_tool", {"tool_id": runner.tools["noop"], "input": {}, "wait_seconds": 0}
            )
        )
        assert started["kind"] == "pending"
        await runner.until(started["job_id"], "succeeded")
        read = structured_of(await session.call_tool("get_job", {"job_id": started["job_id"]}))
    assert read["kind"] == "result"
    assert read["result"] == {"ok": True}


async def test_a_job_started_on_rest_is_read_and_cancelled_on_mcp(runner: Runner) -> None:
    job = (await runner.run("long_sleeper", {"seconds": 60})).json()
    async with mcp_session(_url(runner), runner.key) as session:
        seen = structured_of(await session.call_tool("get_job", {"job_id": job["id"]}))
        assert seen["kind"] == "pending"
        cancelled = structured_of(await session.call_tool("cancel_job", {"job_id": job["id"]}))
    assert cancelled["status"] == "cancelled"
    assert (await runner.job(job["id"]))["status"] == "cancelled"


async def test_questions_go_back_to_an_agent_without_elicitation(runner: Runner) -> None:
    async with mcp_session(_url(runner), runner.key) as session:
        asked = structured_of(
            await session.call_tool(
                "run_tool", {"tool_id": runner.tools["questions"], "input": {}, "wait_seconds": 30}
            )
        )
        assert asked["kind"] == "question"
        pending = asked["pending_input"]
        assert [q["id"] for q in pending["questions"]] == ["name", "size", "sure"]
        bad = error_of(
            await session.call_tool(
                "answer_job",
                {
                    "job_id": asked["job_id"],
                    "request_id": pending["request_id"],
                    "request_version": pending["request_version"],
                    "answers": {"name": "Ada", "size": "xl", "sure": True},
                },
            )
        )
        assert bad["code"] == "invalid_answer"
        assert bad["details"]["reason"] == "unoffered_option"
        answered = structured_of(
            await session.call_tool(
                "answer_job",
                {
                    "job_id": asked["job_id"],
                    "request_id": pending["request_id"],
                    "request_version": pending["request_version"],
                    "answers": {"name": "Ada", "size": "m", "sure": True},
                },
            )
        )
        assert answered["job_id"] == asked["job_id"]
        await runner.until(asked["job_id"], "succeeded")
        read = structured_of(await session.call_tool("get_job", {"job_id": asked["job_id"]}))
    assert read["result"] == {"answers": {"name": "Ada", "size": "m", "sure": True}}


async def _form_delivery(session: Any) -> None:
    changed = structured_of(
        await session.call_tool(
            "call_service_api",
            {
                "operation_id": "account.update_preferences",
                "body": {"connection": {"question_delivery": "form"}},
            },
        )
    )
    assert changed["status"] == 200
    assert changed["body"]["connection"]["question_delivery"] == "form"


async def test_form_questions_are_asked_by_elicitation_and_the_run_goes_on(
    runner: Runner,
) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(
            action="accept", content={"name": "Grace", "size": "other size", "sure": False}
        )

    async with mcp_session(_url(runner), runner.key, elicitation=elicit) as session:
        await _form_delivery(session)
        done = structured_of(
            await session.call_tool(
                "run_tool",
                {
                    "tool_id": runner.tools["questions"],
                    "input": {"allow_other": True},
                    "wait_seconds": 40,
                },
            )
        )
    assert len(asked) == 1
    assert isinstance(asked[0], types.ElicitRequestFormParams)
    schema = asked[0].requestedSchema
    assert schema["properties"]["sure"]["type"] == "boolean"
    assert schema["properties"]["name"]["maxLength"] == 20
    assert done["kind"] == "result", done
    assert done["result"]["answers"] == {
        "name": "Grace",
        "size": {"other": "other size"},
        "sure": False,
    }


async def test_a_declined_elicitation_leaves_the_question_pending(runner: Runner) -> None:
    async def decline(_context: Any, _params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with mcp_session(_url(runner), runner.key, elicitation=decline) as session:
        await _form_delivery(session)
        receipt = structured_of(
            await session.call_tool(
                "run_tool", {"tool_id": runner.tools["questions"], "input": {}, "wait_seconds": 20}
            )
        )
    assert receipt["kind"] == "question"
    assert receipt["pending_input"]["declined"] is True


async def test_a_secret_question_goes_by_url_and_is_answered_on_the_protected_page(
    runner: Runner, shop: Shop
) -> None:
    """The code is typed in Chromium on the protected page; no MCP message ever carries it,
    the API key, or another client's result."""
    messages: list[Any] = []
    typed: list[str] = []

    async with chromium() as browser:
        page = await signed_in_page(browser, runner.server.url, runner.person.session_token)

        async def elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            assert isinstance(params, types.ElicitRequestURLParams)
            await page.goto(params.url)
            code = "246810"
            typed.append(code)
            await page.fill('input[name="code"]', code)
            await page.click('#answer-form button[type="submit"]')
            await page.wait_for_selector("#done")
            return types.ElicitResult(action="accept")

        async with mcp_session(
            _url(runner), runner.key, elicitation=elicit, messages=messages
        ) as session:
            done = structured_of(
                await session.call_tool(
                    "run_tool",
                    {"tool_id": runner.tools["secret_code"], "input": {}, "wait_seconds": 40},
                )
            )
    assert typed
    assert done["kind"] == "result", done
    assert done["result"] == {"length": 6}
    text = "\n".join(str(m) for m in messages)
    assert text, "no messages were recorded"
    assert typed[0] not in text
    assert runner.key not in text
    assert runner.person.session_token not in text


async def test_secret_questions_without_url_elicitation_come_as_the_protected_url(
    runner: Runner,
) -> None:
    async with mcp_session(_url(runner), runner.key) as session:
        receipt = structured_of(
            await session.call_tool(
                "run_tool",
                {"tool_id": runner.tools["secret_code"], "input": {}, "wait_seconds": 30},
            )
        )
    assert receipt["kind"] == "question"
    pending = receipt["pending_input"]
    assert pending["delivery"] == "protected"
    assert pending["protected_input_url"].startswith(f"{runner.server.url}/dashboard/jobs/")


async def test_tool_errors_carry_the_envelope(runner: Runner) -> None:
    async with mcp_session(_url(runner), runner.key) as session:
        bad_input = error_of(
            await session.call_tool(
                "run_tool",
                {"tool_id": runner.tools["get_product_page"], "input": {"product_id": "x"}},
            )
        )
        unknown = error_of(
            await session.call_tool("run_tool", {"tool_id": "tool_" + "0" * 32, "input": {}})
        )
        missing = error_of(await session.call_tool("get_job", {}))
        nope = error_of(await session.call_tool("no_such_tool", {}))
        foreign = error_of(await session.call_tool("get_job", {"job_id": "job_" + "1" * 32}))
    assert bad_input["code"] == "invalid_input"
    assert set(bad_input) >= {"code", "message", "retryable", "docs_url", "details"}
    assert bad_input["retryable"] is False
    assert "retry_after_seconds" not in bad_input
    assert unknown["code"] == "not_found"
    assert missing["code"] == "invalid_request"
    assert missing["details"]["issues"][0]["path"] == "/body"
    assert nope["code"] == "not_found"
    assert foreign["code"] == "not_found"


async def test_the_service_api_is_searchable_describable_and_callable(runner: Runner) -> None:
    manager = await runner.person.key("manager", permissions=["api_keys:manage", "tools:read"])
    async with mcp_session(_url(runner), manager.secret) as session:
        found = structured_of(await session.call_tool("search_service_api", {"query": "api keys"}))
        described = structured_of(
            await session.call_tool("describe_service_api", {"operation_id": "api_keys.create"})
        )
        listed = structured_of(
            await session.call_tool(
                "call_service_api", {"operation_id": "api_keys.list", "query": {"limit": 5}}
            )
        )
        refused = error_of(
            await session.call_tool(
                "call_service_api",
                {"operation_id": "api_keys.list", "query": {"limit": 500}},
            )
        )
        unknown = error_of(
            await session.call_tool("describe_service_api", {"operation_id": "nope.nothing"})
        )
    ids = [entry["operation_id"] for entry in found["data"]]
    assert "api_keys.create" in ids
    assert "api_keys.list" in ids
    assert described["method"] == "POST"
    assert described["path"] == "/v1/api-keys"
    assert described["key_permission"] == "api_keys:manage"
    assert described["body"]["schema"]["properties"]["name"]["type"] == "string"
    assert "201" in described["responses"]
    assert "FreshAuthenticationRequired" in described["errors"]
    assert listed["status"] == 200
    assert manager.id in [key["id"] for key in listed["body"]["data"]]
    assert refused["code"] == "invalid_request"
    assert refused["details"]["issues"][0]["path"] == "/query/limit"
    assert unknown["code"] == "not_found"


async def test_call_service_api_keeps_the_callers_permissions(runner: Runner) -> None:
    limited = await runner.person.key("readonly", permissions=["tools:read"])
    async with mcp_session(_url(runner), limited.secret) as session:
        refused = error_of(
            await session.call_tool("call_service_api", {"operation_id": "webhooks.list"})
        )
        run = error_of(
            await session.call_tool("run_tool", {"tool_id": runner.tools["noop"], "input": {}})
        )
    assert refused["code"] == "forbidden"
    assert run["code"] == "forbidden"


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


async def test_a_revoked_key_stops_working_mid_session(runner: Runner) -> None:
    key = await runner.person.key("short-lived")
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {key.secret}"}
    async with httpx.AsyncClient(timeout=30) as http:
        opened = await http.post(_url(runner), json=INITIALIZE, headers=auth)
        assert opened.status_code == 200, opened.text
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        revoked = await runner.http.delete(f"/v1/api-keys/{key.id}", headers=runner.person.auth())
        assert revoked.status_code == 204
        listed = await http.post(
            _url(runner),
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={**auth, **session},
        )
    assert listed.status_code == 401
    assert listed.json()["error"]["code"] == "unauthorized"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
async def test_mcp_accepts_post_only(runner: Runner, method: str) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.request(method, _url(runner), headers=runner.person.auth(runner.key))
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert response.headers["allow"] == "POST"
