"""Webhook operations, URL rules, signatures, delivery outcomes and the retry ladder."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from standardwebhooks.webhooks import Webhook as StandardWebhook

from sitetools.app import create_app
from sitetools.auth.permissions import Role
from sitetools.webhooks.dispatcher import Dispatcher
from sitetools.webhooks.models import Webhook, WebhookDelivery, WebhookEvent
from sitetools.webhooks.outbox import record_event, stop_question_events
from tests.support import MovableClock, Person, ctx_for, error_code, new_integration, new_person
from tests.webhooks.conftest import hook_settings
from tests.webhooks.receiver import Receiver, plain_signatures

JOB_EVENTS = ["job.needs_input", "job.input_expiring", "job.succeeded", "job.failed"]


async def create(
    http: httpx.AsyncClient, person: Person, url: str, **fields: Any
) -> httpx.Response:
    return await http.post("/v1/webhooks", json={"url": url, **fields}, headers=person.auth())


async def hook_for(
    http: httpx.AsyncClient, person: Person, receiver: Receiver, path: str, **fields: Any
) -> dict[str, Any]:
    """A webhook at ``path`` + a unique suffix (the receiver outlives each test); its
    ``path`` key says where its deliveries arrive."""
    path = f"{path}-{uuid.uuid4().hex[:8]}"
    response = await create(http, person, receiver.url(path), **fields)
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    body["path"] = path
    return body


async def queue_event(
    app: FastAPI,
    person: Person,
    event_type: str = "job.succeeded",
    request_id: str | None = None,
) -> str:
    """An event for the person's webhooks, written as a job change writes it."""
    event_id = await record_for(app, person, event_type, request_id)
    assert event_id is not None
    return event_id


async def record_for(
    app: FastAPI,
    person: Person,
    event_type: str = "job.succeeded",
    request_id: str | None = None,
) -> str | None:
    """The event's ID, or None when none of the person's webhooks wants it."""
    async with ctx_for(app) as ctx:
        event_id = await record_event(
            ctx,
            account_id=person.account_id,
            membership_id=person.membership_id,
            event_type=event_type,
            data={"job_id": "job_" + "0" * 32, "job_type": "run", "origin": "rest"},
            job_id="job_" + "0" * 32,
            request_id=request_id,
        )
        await ctx.commit()
    return event_id


async def row(app: FastAPI, hook_id: str) -> Webhook:
    async with ctx_for(app) as ctx:
        hook = await ctx.db.scalar(select(Webhook).where(Webhook.id == hook_id))
    assert hook is not None
    return hook


async def deliveries(app: FastAPI, hook_id: str) -> list[WebhookDelivery]:
    async with ctx_for(app) as ctx:
        return list(
            await ctx.db.scalars(
                select(WebhookDelivery).where(WebhookDelivery.webhook_id == hook_id)
            )
        )


# -- create, list, get ---------------------------------------------------------------------


async def test_create_answers_the_secret_once_and_defaults_to_the_four_job_events(
    hooks_app: FastAPI, http: httpx.AsyncClient, person: Person, receiver: Receiver
) -> None:
    created = await hook_for(http, person, receiver, "/ok/create")
    assert created["id"].startswith("wh_")
    assert len(created["id"]) == 35
    assert created["secret"].startswith("whsec_")
    assert created["events"] == JOB_EVENTS
    assert created["status"] == "active"
    assert created["disabled_reason"] is None
    assert created["created_by"] == {"user_id": person.user_id, "email": person.email}
    assert created["last_delivery_at"] is None
    got = await http.get(f"/v1/webhooks/{created['id']}", headers=person.auth())
    assert got.status_code == 200
    assert "secret" not in got.json()
    listed = await http.get("/v1/webhooks", headers=person.auth())
    assert [h["id"] for h in listed.json()["data"]] == [created["id"]]
    assert "secret" not in json.dumps(listed.json())
    async with ctx_for(hooks_app) as ctx:
        stored = await ctx.db.scalar(select(Webhook).where(Webhook.id == created["id"]))
    assert stored is not None
    assert created["secret"].encode() not in stored.secret_enc


async def test_events_subset_and_bad_events(
    http: httpx.AsyncClient, person: Person, receiver: Receiver
) -> None:
    subset = await hook_for(
        http, person, receiver, "/ok/subset", events=["job.failed", "job.failed"]
    )
    assert subset["events"] == ["job.failed"]
    for events in ([], ["job.started"], ["webhook.test"], "job.failed"):
        response = await create(http, person, receiver.url("/ok/x"), events=events)
        assert response.status_code == 400
        assert error_code(response) == "invalid_request"


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost/hook",
        "https://user:pass@localhost/hook",
        "https://user@localhost/hook",
        "https://localhost/hook#part",
        "https://10.0.0.1/hook",
        "https://192.168.1.1/hook",
        "https://127.0.0.1/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://[::ffff:10.0.0.1]/hook",
        "https://[fe80::1]/hook",
        "https://localhost:1/hook",  # a name that resolves to a loopback address
        "https://no-such-host.invalid/hook",
        "https:///hook",
        "ftp://example.com/hook",
        "https://exa mple.com/",
    ],
)
async def test_url_rules(http: httpx.AsyncClient, person: Person, url: str) -> None:
    response = await create(http, person, url)
    assert response.status_code == 400, response.text
    assert error_code(response) == "invalid_request"
    assert response.json()["error"]["details"]["issues"][0]["path"] == "/body/url"


async def test_a_public_address_is_accepted(http: httpx.AsyncClient, person: Person) -> None:
    response = await create(http, person, "https://93.184.216.34/hooks?token=abc")
    assert response.status_code == 201, response.text


async def test_twenty_webhooks_per_member(
    http: httpx.AsyncClient, person: Person, receiver: Receiver
) -> None:
    for n in range(20):
        await hook_for(http, person, receiver, f"/ok/limit-{n}")
    response = await create(http, person, receiver.url("/ok/limit-20"))
    assert response.status_code == 409
    assert error_code(response) == "webhook_limit_reached"
    listed = await http.get("/v1/webhooks", params={"limit": 7}, headers=person.auth())
    page = listed.json()
    seen = [h["id"] for h in page["data"]]
    while page["next_cursor"]:
        page = (
            await http.get(
                "/v1/webhooks",
                params={"limit": 7, "cursor": page["next_cursor"]},
                headers=person.auth(),
            )
        ).json()
        seen += [h["id"] for h in page["data"]]
    assert len(seen) == len(set(seen)) == 20


async def test_who_sees_changes_and_deletes(
    hooks_app: FastAPI, http: httpx.AsyncClient, receiver: Receiver
) -> None:
    owner = await new_person(hooks_app, account_type="business")
    admin = await new_person(hooks_app, account_id=owner.account_id, role=Role.ADMIN)
    member = await new_person(hooks_app, account_id=owner.account_id, role=Role.MEMBER)
    other = await new_person(hooks_app, account_id=owner.account_id, role=Role.MEMBER)
    hook = await hook_for(http, member, receiver, "/ok/team")
    path = f"/v1/webhooks/{hook['id']}"
    # A non-admin never sees another member's webhook.
    for method, suffix in (
        ("GET", ""),
        ("PATCH", ""),
        ("DELETE", ""),
        ("POST", "/test"),
        ("POST", "/rotate-secret"),
    ):
        body = {"status": "disabled"} if method == "PATCH" else None
        response = await http.request(method, path + suffix, json=body, headers=other.auth())
        assert response.status_code == 404
        assert error_code(response) == "not_found"
    assert (await http.get("/v1/webhooks", headers=other.auth())).json()["data"] == []
    # An admin sees it but only its creator changes, tests or rotates it.
    assert (await http.get(path, headers=admin.auth())).status_code == 200
    listed = await http.get("/v1/webhooks", headers=owner.auth())
    assert hook["id"] in [h["id"] for h in listed.json()["data"]]
    for method, suffix in (("PATCH", ""), ("POST", "/test"), ("POST", "/rotate-secret")):
        body = {"status": "disabled"} if method == "PATCH" else None
        response = await http.request(method, path + suffix, json=body, headers=admin.auth())
        assert response.status_code == 403
        assert error_code(response) == "forbidden"
    # The creator leaves: the webhook stays, created_by turns null, admins still see it.
    async with ctx_for(hooks_app) as ctx:
        from sitetools.accounts.models import Membership

        await ctx.db.execute(
            update(Membership)
            .where(Membership.id == member.membership_id)
            .values(ended_at=ctx.now())
        )
        await ctx.commit()
    seen = await http.get(path, headers=admin.auth())
    assert seen.status_code == 200
    assert seen.json()["created_by"] is None
    listed = await http.get("/v1/webhooks", headers=admin.auth())
    assert hook["id"] in [h["id"] for h in listed.json()["data"]]
    assert (await http.delete(path, headers=admin.auth())).status_code == 204
    assert (await http.get(path, headers=owner.auth())).status_code == 404


async def test_integration_key_refused_and_feature_switch(
    hooks_app: FastAPI,
    http: httpx.AsyncClient,
    person: Person,
    receiver: Receiver,
    data_dir: Any,
    hooks_database: str,
    clock: MovableClock,
) -> None:
    integration = await new_integration(hooks_app, account_id=person.account_id)
    key = await person.key("bound", integration_id=integration)
    response = await http.get("/v1/webhooks", headers=person.auth(key.secret))
    assert response.status_code == 403
    assert error_code(response) == "forbidden"
    account_key = await person.key("account")
    response = await http.get("/v1/webhooks", headers=person.auth(account_key.secret))
    assert response.status_code == 200
    off = create_app(
        hook_settings(data_dir, hooks_database, receiver, webhooks_enabled=False), clock=clock
    )
    transport = httpx.ASGITransport(app=off, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            for method, path in (("GET", "/v1/webhooks"), ("POST", "/v1/webhooks")):
                body = {"url": receiver.url("/ok/off")} if method == "POST" else None
                response = await client.request(method, path, json=body, headers=person.auth())
                assert response.status_code == 403
                assert error_code(response) == "webhooks_unavailable"
    finally:
        await off.state.engine.dispose()


# -- status changes -------------------------------------------------------------------------


async def test_patch_status_url_and_events(
    hooks_app: FastAPI,
    http: httpx.AsyncClient,
    person: Person,
    receiver: Receiver,
    dispatcher: Dispatcher,
) -> None:
    hook = await hook_for(http, person, receiver, "/ok/patch")
    path = f"/v1/webhooks/{hook['id']}"
    response = await http.patch(path, json={"status": "disabled"}, headers=person.auth())
    assert response.json()["status"] == "disabled"
    assert response.json()["disabled_reason"] == "manual"
    assert await record_for(hooks_app, person) is None  # every webhook of theirs is off
    assert await dispatcher.run_once() == 0
    patched = f"/ok/patched-{uuid.uuid4().hex[:8]}"
    response = await http.patch(
        path,
        json={"status": "active", "url": receiver.url(patched), "events": ["job.failed"]},
        headers=person.auth(),
    )
    body = response.json()
    assert body["status"] == "active"
    assert body["disabled_reason"] is None
    assert body["url"] == receiver.url(patched)
    assert body["events"] == ["job.failed"]
    bad = await http.patch(path, json={"url": "http://x.example"}, headers=person.auth())
    assert bad.status_code == 400
    assert error_code(bad) == "invalid_request"
    bad = await http.patch(path, json={"status": "gone"}, headers=person.auth())
    assert bad.status_code == 400
    await queue_event(hooks_app, person, "job.failed")
    assert await dispatcher.run_once() == 1
    assert len(receiver.at(patched)) == 1


# -- signatures, test, rotation -------------------------------------------------------------


def verify_both_ways(secret: str, headers: dict[str, str], body: bytes) -> None:
    StandardWebhook(secret).verify(body, headers)
    expected, sent = plain_signatures(secret, headers, body)
    assert expected in sent


async def test_test_event_is_signed_and_not_counted(
    hooks_app: FastAPI, http: httpx.AsyncClient, person: Person, receiver: Receiver
) -> None:
    hook = await hook_for(http, person, receiver, "/ok/test-send")
    response = await http.post(f"/v1/webhooks/{hook['id']}/test", headers=person.auth())
    assert response.status_code == 200
    assert response.json() == {"delivered": True, "status": 200, "failure": None}
    (got,) = receiver.at(hook["path"])
    verify_both_ways(hook["secret"], got.headers, got.body)
    envelope = json.loads(got.body)
    assert envelope["type"] == "webhook.test"
    assert envelope["id"] == got.event_id
    assert envelope["id"].startswith("evt_")
    assert envelope["data"] == {"webhook_id": hook["id"]}
    failing = await hook_for(http, person, receiver, "/status/500/test-send")
    response = await http.post(f"/v1/webhooks/{failing['id']}/test", headers=person.auth())
    assert response.json() == {"delivered": False, "status": 500, "failure": "HTTP 500"}
    assert (await row(hooks_app, failing["id"])).consecutive_failures == 0
    attempts = await http.get(f"/v1/webhooks/{failing['id']}/attempts", headers=person.auth())
    (attempt,) = attempts.json()["data"]
    assert attempt["outcome"] == "test"
    assert attempt["status"] == 500


async def test_rotation_signs_with_both_secrets_for_a_day(
    hooks_app: FastAPI,
    http: httpx.AsyncClient,
    person: Person,
    receiver: Receiver,
    dispatcher: Dispatcher,
    clock: MovableClock,
) -> None:
    hook = await hook_for(http, person, receiver, "/ok/rotate")
    rotated = await http.post(f"/v1/webhooks/{hook['id']}/rotate-secret", headers=person.auth())
    assert rotated.status_code == 200
    new_secret = rotated.json()["secret"]
    assert new_secret.startswith("whsec_")
    assert new_secret != hook["secret"]
    await queue_event(hooks_app, person)
    assert await dispatcher.run_once() == 1
    (got,) = receiver.at(hook["path"])
    assert len(got.headers["webhook-signature"].split(" ")) == 2
    verify_both_ways(new_secret, got.headers, got.body)
    verify_both_ways(hook["secret"], got.headers, got.body)
    clock.advance(24 * 3600 + 1)
    await queue_event(hooks_app, person)
    assert await dispatcher.run_once() == 1
    later = receiver.at(hook["path"])[1]
    assert len(later.headers["webhook-signature"].split(" ")) == 1
    expected, sent = plain_signatures(new_secret, later.headers, later.body)
    assert sent == [expected]
    old_expected, _ = plain_signatures(hook["secret"], later.headers, later.body)
    assert old_expected not in sent


async def test_unreadable_secret_until_rotated(
    hooks_app: FastAPI, http: httpx.AsyncClient, person: Person, receiver: Receiver
) -> None:
    hook = await hook_for(http, person, receiver, "/ok/unreadable")
    async with ctx_for(hooks_app) as ctx:
        await ctx.db.execute(
            update(Webhook).where(Webhook.id == hook["id"]).values(secret_enc=b"\x00" * 40)
        )
        await ctx.commit()
    response = await http.post(f"/v1/webhooks/{hook['id']}/test", headers=person.auth())
    assert response.status_code == 409
    assert error_code(response) == "webhook_secret_unreadable"
    rotated = await http.post(f"/v1/webhooks/{hook['id']}/rotate-secret", headers=person.auth())
    response = await http.post(f"/v1/webhooks/{hook['id']}/test", headers=person.auth())
    assert response.json()["delivered"] is True
    (got,) = receiver.at(hook["path"])
    assert len(got.headers["webhook-signature"].split(" ")) == 1
    verify_both_ways(rotated.json()["secret"], got.headers, got.body)


# -- delivery outcomes ----------------------------------------------------------------------


async def test_delivery_is_signed_and_recorded(
    hooks_app: FastAPI,
    http: httpx.AsyncClient,
    person: Person,
    receiver: Receiver,
    dispatcher: Dispatcher,
) -> None:
    hook = await hook_for(http, person, receiver, "/ok/deliver")
    event_id = await queue_event(hooks_app, person)
    assert await dispatcher.run_once() == 1
    assert await dispatcher.run_once() == 0  # delivered once, not again
    (got,) = receiver.at(hook["path"])
    assert got.event_id == event_id
    verify_both_ways(hook["secret"], got.headers, got.body)
    envelope = json.loads(got.body)
    assert set(envelope) == {"id", "type", "created_at", "data"}
    assert envelope["type"] == "job.succeeded"
    assert envelope["created_at"].endswith("Z")
    (delivery,) = await deliveries(hooks_app, hook["id"])
    assert delivery.state == "delivered"
    assert delivery.attempts == 1
    shown = (await http.get(f"/v1/webhooks/{hook['id']}", headers=person.auth())).json()
    assert shown["last_delivery_at"] is not None
    attempts = await http.get(f"/v1/webhooks/{hook['id']}/attempts", headers=person.auth())
    (attempt,) = attempts.json()["data"]
    assert attempt["event_id"] == event_id
    assert attempt["outcome"] == "delivered"
    assert attempt["status"] == 200
    assert attempt["error"] is None


async def test_retry_ladder_then_give_up_then_replay(
    hooks_app: FastAPI,
    http: httpx.AsyncClient,
    person: Person,
    receiver: Receiver,
    dispatcher: Dispatcher,
    clock: MovableClock,
) -> None:
    hook = await hook_for(http, person, receiver, "/script/ladder")
    receiver.script(hook["path"], *[500] * 6)
    event_id = await queue_event(hooks_app, person)
    assert await dispatcher.run_once() == 1
    for wait in (5, 20, 60, 180, 600):
        clock.advance(wait - 1)
        assert await dispatcher.run_once() == 0, f"sent before {wait} s passed"
        clock.advance(1)
        assert await dispatcher.run_once() == 1, f"not sent after {wait} s"
    clock.advance(3600)
    assert await dispatcher.run_once() == 0
    (delivery,) = await deliveries(hooks_app, hook["id"])
    assert delivery.state == "failed"
    assert delivery.attempts == 6
    sent = receiver.at(hook["path"])
    assert len(sent) == 6
    assert {r.event_id for r in sent} == {event_id}
    assert (await row(hooks_app, hook["id"])).consecutive_failures == 6
    # Replay: the same webhook-id, from the start of the ladder.
    path = f"/v1/webhooks/{hook['id']}/events/{event_id}/replay"
    replayed = await http.post(path, headers=person.auth())
    assert replayed.status_code == 202
    assert replayed.json()["state"] == "pending"
    assert await dispatcher.run_once() == 1
    assert receiver.at(hook["path"])[-1].event_id == event_id
    (delivery,) = await deliveries(hooks_app, hook["id"])
    assert delivery.state == "delivered"
    assert (await row(hooks_app, hook["id"])).consecutive_failures == 0
    missing = await http.post(
        f"/v1/webhooks/{hook['id']}/events/evt_{'0' * 32}/replay", headers=person.auth()
    )
    assert missing.status_code == 404
    assert error_code(missing) == "not_found"


async def test_410_turns_the_webhook_off(
    hooks_app: FastAPI,
    http: httpx.AsyncClient,
    person: Person,
    receiver: Receiver,
    dispatcher: Dispatcher,
) -> None:
    hook = await hook_for(http, person, receiver, "/status/410/gone")
    await queue_event(hooks_app, person)
    await queue_event(hooks_app, person)
    await dispatcher.run_once()
    shown = (await http.get(f"/v1/webhooks/{hook['id']}", headers=person.auth())).json()
    assert shown["status"] == "disabled"
    assert shown["disabled_reason"] == "gone"
    assert {d.state for d in await deliveries(hooks_app, hook["id"])} <= {"failed", "dropped"}
    assert await record_for(hooks_app, person) is None  # every webhook of theirs is off


async def test_413_drops_only_that_event(
    hooks_app: FastAPI,
    http: httpx.AsyncClient,
    person: Person,
    receiver: Receiver,
    dispatcher: Dispatcher,
) -> None:
    hook = await hook_for(http, person, receiver, "/script/too-large")
    receiver.script(hook["path"], 413)
    await queue_event(hooks_app, person)
    assert await dispatcher.run_once() == 1
    (delivery,) = await deliveries(hooks_app, hook["id"])
    assert delivery.state == "dropped"
    stored = await row(hooks_app, hook["id"])
    assert stored.status == "active"
    assert stored.consecutive_failures == 0
    await queue_event(hooks_app, person)
    assert await dispatcher.run_once() == 1
    assert {d.state for d in await deliveries(hooks_app, hook["id"])} == {"dropped", "delivered"}


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("/slow/3/timeout", "timeout: no answer in time"),
        ("/redirect/away", "HTTP 302: redirects are not followed"),
        ("/status/503/unavailable", "HTTP 503"),
    ],
)
async def test_failures_are_retried(
    hooks_app: FastAPI,
    http: httpx.AsyncClient,
    person: Person,
    receiver: Receiver,
    dispatcher: Dispatcher,
    path: str,
    error: str,
) -> None:
    hook = await hook_for(http, person, receiver, path)
    await queue_event(hooks_app, person)
    assert await dispatcher.run_once() == 1
    (delivery,) = await deliveries(hooks_app, hook["id"])
    assert delivery.state == "pending"
    assert delivery.attempts == 1
    attempts = await http.get(f"/v1/webhooks/{hook['id']}/attempts", headers=person.auth())
    (attempt,) = attempts.json()["data"]
    assert attempt["outcome"] == "retrying"
    assert attempt["error"] == error
    assert (await row(hooks_app, hook["id"])).consecutive_failures == 1
    # A redirect is not followed: nothing was asked of the private address it named.


async def test_connection_refused_tls_failure_and_rebinding(
    hooks_app: FastAPI,
    http: httpx.AsyncClient,
    person: Person,
    receiver: Receiver,
    data_dir: Any,
    hooks_database: str,
    clock: MovableClock,
) -> None:
    from tests.support import free_port

    closed = free_port()
    settings = hook_settings(
        data_dir,
        hooks_database,
        receiver,
        webhook_allow=f"{receiver.allow},localhost:{closed}",
    )
    app = create_app(settings, clock=clock)
    try:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            response = await create(client, person, f"https://localhost:{closed}/refused")
            assert response.status_code == 201
            refused = response.json()["id"]
            response = await client.post(f"/v1/webhooks/{refused}/test", headers=person.auth())
            assert response.json() == {
                "delivered": False,
                "status": None,
                "failure": "connection refused",
            }
    finally:
        await app.state.engine.dispose()
    # The receiver's CA not trusted: the handshake fails.
    untrusting = create_app(
        hook_settings(data_dir, hooks_database, receiver, webhook_ca_file=None), clock=clock
    )
    # The name now resolves to an address not allowed (as after DNS rebinding).
    rebound = create_app(
        hook_settings(data_dir, hooks_database, receiver, webhook_allow=""), clock=clock
    )
    hook = await hook_for(http, person, receiver, "/ok/never")
    try:
        for app, failure in (
            (untrusting, "tls: the certificate or handshake was refused"),
            (
                rebound,
                "address refused: the host resolves to an address webhooks may not reach",
            ),
        ):
            transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                response = await client.post(
                    f"/v1/webhooks/{hook['id']}/test", headers=person.auth()
                )
            assert response.json() == {"delivered": False, "status": None, "failure": failure}
    finally:
        await untrusting.state.engine.dispose()
        await rebound.state.engine.dispose()
    assert receiver.at(hook["path"]) == []


async def test_twenty_failures_turn_it_off_and_patch_turns_it_on(
    hooks_app: FastAPI,
    http: httpx.AsyncClient,
    person: Person,
    receiver: Receiver,
    dispatcher: Dispatcher,
) -> None:
    hook = await hook_for(http, person, receiver, "/script/unreachable")
    receiver.script(hook["path"], *[500] * 19)
    for _ in range(19):
        await queue_event(hooks_app, person)
    # At most 16 in flight per webhook: two rounds.
    assert await dispatcher.run_once() + await dispatcher.run_once() == 19
    assert (await row(hooks_app, hook["id"])).status == "active"
    receiver.script(hook["path"], 500)
    await queue_event(hooks_app, person)
    assert await dispatcher.run_once() == 1  # the 20th failure in a row
    shown = (await http.get(f"/v1/webhooks/{hook['id']}", headers=person.auth())).json()
    assert shown["status"] == "disabled"
    assert shown["disabled_reason"] == "unreachable"
    # The events left undelivered (19 waiting for a retry) are dropped.
    assert "pending" not in {d.state for d in await deliveries(hooks_app, hook["id"])}
    path = f"/v1/webhooks/{hook['id']}"
    response = await http.patch(path, json={"status": "active"}, headers=person.auth())
    assert response.json()["status"] == "active"
    assert (await row(hooks_app, hook["id"])).consecutive_failures == 0
    await queue_event(hooks_app, person)
    assert await dispatcher.run_once() == 1
    assert (await row(hooks_app, hook["id"])).last_delivery_at is not None


async def test_a_question_closing_stops_its_events(
    hooks_app: FastAPI,
    http: httpx.AsyncClient,
    person: Person,
    receiver: Receiver,
    dispatcher: Dispatcher,
) -> None:
    hook = await hook_for(http, person, receiver, "/ok/question")
    request_id = "req_" + "1" * 32
    await queue_event(hooks_app, person, "job.needs_input", request_id=request_id)
    await queue_event(hooks_app, person, "job.succeeded")
    async with ctx_for(hooks_app) as ctx:
        await stop_question_events(ctx, request_id)
        await ctx.commit()
    assert await dispatcher.run_once() == 1
    (got,) = receiver.at(hook["path"])
    assert json.loads(got.body)["type"] == "job.succeeded"


async def test_the_outbox_commits_with_the_change(
    hooks_app: FastAPI, http: httpx.AsyncClient, person: Person, receiver: Receiver
) -> None:
    hook = await hook_for(http, person, receiver, "/ok/rollback")
    async with ctx_for(hooks_app) as ctx:
        event_id = await record_event(
            ctx,
            account_id=person.account_id,
            membership_id=person.membership_id,
            event_type="job.failed",
            data={},
        )
        await ctx.rollback()
    async with ctx_for(hooks_app) as ctx:
        assert await ctx.db.get(WebhookEvent, event_id) is None
    assert await deliveries(hooks_app, hook["id"]) == []


async def test_delete_drops_undelivered_events(
    hooks_app: FastAPI, http: httpx.AsyncClient, person: Person, receiver: Receiver
) -> None:
    hook = await hook_for(http, person, receiver, "/ok/deleted")
    await queue_event(hooks_app, person)
    response = await http.delete(f"/v1/webhooks/{hook['id']}", headers=person.auth())
    assert response.status_code == 204
    assert response.content == b""
    assert await deliveries(hooks_app, hook["id"]) == []
    response = await http.get(f"/v1/webhooks/{hook['id']}", headers=person.auth())
    assert response.status_code == 404


async def test_a_slow_receiver_does_not_hold_up_another_webhook(
    hooks_app: FastAPI,
    http: httpx.AsyncClient,
    receiver: Receiver,
) -> None:
    import asyncio

    slow_person = await new_person(hooks_app)
    fast_person = await new_person(hooks_app)
    held = (await hook_for(http, slow_person, receiver, "/slow/0.5/held"))["path"]
    free = (await hook_for(http, fast_person, receiver, "/ok/not-held"))["path"]
    for _ in range(60):
        await queue_event(hooks_app, slow_person)
    for _ in range(5):
        await queue_event(hooks_app, fast_person)
    state = hooks_app.state
    worker = Dispatcher(state.services, state.sessions, "slow-test")
    running = asyncio.get_running_loop().create_task(worker.run())
    try:
        fast = await receiver.wait_for(free, 5, seconds=20)
        # All five arrived while most slow deliveries (16 at a time, 0.5 s each) still waited.
        assert len(receiver.at(held)) < 60
        assert max(r.at for r in fast) < min(r.at for r in receiver.at(held)) + 0.5
        await receiver.wait_for(held, 60, seconds=30)
    finally:
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running


async def test_only_the_creators_jobs_reach_a_webhook(
    hooks_app: FastAPI,
    http: httpx.AsyncClient,
    person: Person,
    receiver: Receiver,
    dispatcher: Dispatcher,
) -> None:
    hook = await hook_for(http, person, receiver, "/ok/mine")
    teammate = await new_person(hooks_app, plan="premium")
    assert await record_for(hooks_app, teammate) is None
    mine = await queue_event(hooks_app, person)
    assert await dispatcher.run_once() == 1
    assert [r.event_id for r in receiver.at(hook["path"])] == [mine]
