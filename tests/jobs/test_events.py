"""Job events reach the webhooks of the member who started the job (real runs, real HTTPS)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from standardwebhooks.webhooks import Webhook as StandardWebhook

from tests.jobs.conftest import Runner
from tests.webhooks.receiver import Received, Receiver


async def _webhook(runner: Runner, receiver: Receiver, **fields: Any) -> tuple[str, str]:
    path = f"/ok/job-events-{uuid.uuid4().hex[:8]}"
    response = await runner.http.post("/v1/webhooks", json={"url": receiver.url(path), **fields})
    assert response.status_code == 201, response.text
    return path, response.json()["secret"]


def _events(received: list[Received], secret: str) -> list[dict[str, Any]]:
    events = []
    for request in received:
        StandardWebhook(secret).verify(request.body, request.headers)
        events.append(json.loads(request.body))
    return events


async def _of_type(
    receiver: Receiver, path: str, secret: str, event_type: str, count: int = 1
) -> list[dict[str, Any]]:
    for wanted in range(1, 50):
        got = _events(await receiver.wait_for(path, wanted), secret)
        matching = [e for e in got if e["type"] == event_type]
        if len(matching) >= count:
            return matching
    raise AssertionError(f"no {event_type}")


async def test_succeeded_carries_status_never_the_result(
    runner: Runner, receiver: Receiver
) -> None:
    path, secret = await _webhook(runner, receiver)
    job = (await runner.run("noop", {})).json()
    (event,) = await _of_type(receiver, path, secret, "job.succeeded")
    data = event["data"]
    assert event["id"].startswith("evt_")
    assert data["job_id"] == job["id"]
    assert data["job_type"] == "run"
    assert data["origin"] == "rest"
    assert data["status"] == "succeeded"
    assert data["effect"] == "read"
    assert data["output"]["read_with"] == f"GET /v1/jobs/{job['id']}"
    assert data["output"]["readable_until"].endswith("Z")
    assert '"ok"' not in json.dumps(data)  # the result {"ok": true} is not in the event
    # The result is still there for the client that started the job.
    detail = await runner.job(job["id"])
    assert detail["result"] == {"ok": True}


async def test_questions_expiry_warning_and_cancel(runner: Runner, receiver: Receiver) -> None:
    path, secret = await _webhook(runner, receiver)
    job = (await runner.run("questions", {"expires_in": 170})).json()
    (asked,) = await _of_type(receiver, path, secret, "job.needs_input")
    data = asked["data"]
    pending = (await runner.until(job["id"], "needs_input"))["pending_input"]
    assert data["request_id"] == pending["request_id"]
    assert data["request_version"] == pending["request_version"] == 1
    assert data["question_types"] == ["text", "choice", "confirm"]
    assert data["protected_input_url"].startswith(runner.server.url + "/dashboard/jobs/")
    assert [q["prompt"] for q in data["pending_input"]["questions"]] == [
        "Your name?",
        "Size?",
        "Sure?",
    ]
    # At most three minutes left from the start: the warning follows at the next sweep.
    (expiring,) = await _of_type(receiver, path, secret, "job.input_expiring")
    assert expiring["data"]["request_id"] == pending["request_id"]
    assert expiring["data"]["expires_at"] == data["expires_at"]
    cancelled = await runner.http.post(f"/v1/jobs/{job['id']}/cancel")
    assert cancelled.json()["status"] == "cancelled"
    (failed,) = await _of_type(receiver, path, secret, "job.failed")
    assert failed["data"]["status"] == "cancelled"
    assert failed["data"]["failure_reason"] == "cancelled"


async def test_failed_with_a_customer_message_and_subscriptions(
    runner: Runner, receiver: Receiver
) -> None:
    path, secret = await _webhook(runner, receiver, events=["job.failed"])
    await runner.run("noop", {})
    job = (await runner.run("fails_politely", {})).json()
    (failed,) = await _of_type(receiver, path, secret, "job.failed")
    assert failed["data"]["job_id"] == job["id"]
    assert failed["data"]["failure_reason"] == "execution_failed"
    assert failed["data"]["customer_message"] == "The shop is closed for inventory today."
    assert {e["type"] for e in _events(receiver.at(path), secret)} == {"job.failed"}
