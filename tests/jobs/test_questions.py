"""The input request of a job, row by row of the spec's state table, over real HTTP."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from sitetools.jobs import worker as steps
from tests.jobs.conftest import Runner
from tests.support import ctx_for, error_code

GOOD = {"name": "Ada", "size": "m", "sure": True}


async def _asking(runner: Runner, tool: str = "questions", **tool_input: Any) -> dict[str, Any]:
    job = (await runner.run(tool, tool_input, wait_seconds=30)).json()
    assert job["status"] == "needs_input", job
    return job


async def _answer(runner: Runner, job: dict[str, Any], **fields: Any) -> Any:
    pending = job["pending_input"]
    body = {
        "request_id": pending["request_id"],
        "request_version": pending["request_version"],
        **fields,
    }
    return await runner.http.post(f"/v1/jobs/{job['id']}/input", json=body)


async def test_a_pending_request_describes_its_questions(runner: Runner) -> None:
    job = await _asking(runner)
    pending = job["pending_input"]
    assert job["question"] == "Your name?"
    assert job["waiting_since"] is not None
    assert job["stage"] == "waiting_for_input"
    assert pending["request_version"] == 1
    assert pending["delivery"] == "agent"
    assert pending["protected_input_url"].startswith(runner.server.url + "/dashboard/jobs/")
    kinds = [(q["id"], q["type"]) for q in pending["questions"]]
    assert kinds == [("name", "text"), ("size", "choice"), ("sure", "confirm")]
    listed = (await runner.http.get("/v1/jobs")).json()
    assert listed["needs_input_count"] == 1
    assert listed["counts"]["needs_input"] == 1


async def test_answers_that_fit_resume_the_run(runner: Runner) -> None:
    job = await _asking(runner)
    answered = await _answer(runner, job, answers=GOOD)
    assert answered.status_code == 200, answered.text
    assert answered.json()["status"] == "running"
    assert answered.json()["pending_input"] is None
    await runner.until(job["id"], "succeeded")
    result = (await runner.job(job["id"]))["result"]
    assert result == {"answers": GOOD}


async def test_answering_twice_is_input_not_pending(runner: Runner) -> None:
    job = await _asking(runner)
    assert (await _answer(runner, job, answers=GOOD)).status_code == 200
    again = await _answer(runner, job, answers=GOOD)
    assert again.status_code == 409
    assert error_code(again) == "input_not_pending"


@pytest.mark.parametrize(
    ("request_id", "version"), [("req_" + "0" * 32, 1), (None, 2)], ids=["id", "version"]
)
async def test_a_mismatched_request_is_input_not_pending(
    runner: Runner, request_id: str | None, version: int
) -> None:
    job = await _asking(runner)
    response = await runner.http.post(
        f"/v1/jobs/{job['id']}/input",
        json={
            "request_id": request_id or job["pending_input"]["request_id"],
            "request_version": version,
            "answers": GOOD,
        },
    )
    assert response.status_code == 409
    assert error_code(response) == "input_not_pending"


@pytest.mark.parametrize(
    ("answers", "question", "reason"),
    [
        ({"name": "Ada", "size": "m"}, "sure", "missing_answer"),
        ({**GOOD, "color": "red"}, "color", "unexpected_answer"),
        ({**GOOD, "sure": "yes"}, "sure", "malformed"),
        ({**GOOD, "size": "xl"}, "size", "unoffered_option"),
        ({**GOOD, "size": {"other": "xl"}}, "size", "other_not_allowed"),
        ({**GOOD, "name": "x" * 21}, "name", "too_long"),
    ],
)
async def test_bad_answers_are_invalid_answer_and_the_request_stays_pending(
    runner: Runner, answers: dict[str, Any], question: str, reason: str
) -> None:
    job = await _asking(runner)
    response = await _answer(runner, job, answers=answers)
    assert response.status_code == 400
    assert error_code(response) == "invalid_answer"
    details = response.json()["error"]["details"]
    assert details == {"question_id": question, "reason": reason}
    assert (await _answer(runner, job, answers=GOOD)).status_code == 200


async def test_other_is_accepted_where_allowed(runner: Runner) -> None:
    job = await _asking(runner, allow_other=True)
    response = await _answer(runner, job, answers={**GOOD, "size": {"other": "xl"}})
    assert response.status_code == 200
    await runner.until(job["id"], "succeeded")
    assert (await runner.job(job["id"]))["result"]["answers"]["size"] == {"other": "xl"}


async def test_selection_bounds_of_a_multiple_choice(runner: Runner) -> None:
    job = await _asking(runner, "multi")
    qid = job["pending_input"]["questions"][0]["id"]
    for picked in (["a"], ["a", "b", "c", "d"]):
        response = await _answer(runner, job, answers={qid: picked})
        assert response.json()["error"]["details"]["reason"] == "selection_bounds"
    assert (await _answer(runner, job, answers={qid: ["a", "c"]})).status_code == 200


async def test_declining_keeps_the_request_pending(runner: Runner) -> None:
    job = await _asking(runner)
    declined = await _answer(runner, job, action="decline")
    assert declined.status_code == 409
    assert error_code(declined) == "input_declined"
    current = await runner.until(job["id"], "needs_input")
    assert current["pending_input"]["declined"] is True
    assert current["pending_input"]["request_id"] == job["pending_input"]["request_id"]
    assert (await _answer(runner, job, answers=GOOD)).status_code == 200


async def test_cancelling_the_request_keeps_it_pending_and_the_job_can_be_cancelled(
    runner: Runner,
) -> None:
    job = await _asking(runner)
    cancelled = await _answer(runner, job, action="cancel")
    assert cancelled.status_code == 409
    assert error_code(cancelled) == "input_cancelled"
    current = await runner.until(job["id"], "needs_input")
    assert current["pending_input"]["cancelled"] is True
    ended = await runner.http.post(f"/v1/jobs/{job['id']}/cancel")
    assert ended.json()["status"] == "cancelled"


async def test_a_secret_question_is_never_answered_over_rest(runner: Runner) -> None:
    job = await _asking(runner, "secret_code")
    assert job["pending_input"]["delivery"] == "protected"
    question = job["pending_input"]["questions"][0]
    assert question["type"] == "secret"
    assert question["secret"] == "code"
    response = await _answer(runner, job, answers={question["id"]: "123456"})
    assert response.status_code == 403
    assert response.json()["error"]["details"]["reason"] == "protected_input_only"
    still = await runner.until(job["id"], "needs_input")
    assert still["pending_input"]["request_id"] == job["pending_input"]["request_id"]


async def test_an_unanswered_question_expires_and_the_run_stops_with_no_response(
    runner: Runner,
) -> None:
    job = await _asking(runner, expires_in=60)
    expires_at = job["pending_input"]["expires_at"]
    async with ctx_for(runner.person.app) as ctx:
        # Expire it now: the sweeper's step with the clock past the expiry.
        runner.person.app.state.services.clock.advance(
            (datetime.fromisoformat(expires_at) - ctx.now()).total_seconds() + 1
        )
        assert await steps.expire_questions(ctx) >= 1
        await ctx.db.commit()
    ended = await runner.until(job["id"], "failed", seconds=5)
    assert ended["error"]["code"] == "no_response"
    assert ended["error"]["details"] == {"possible_commit": False}
    late = await _answer(runner, job, answers=GOOD)
    assert late.status_code == 410
    assert error_code(late) == "input_expired"
