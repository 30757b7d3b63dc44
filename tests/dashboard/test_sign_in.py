"""Dashboard sign-in and sign-out: CSRF-protected forms, HttpOnly Lax cookie, throttling."""

from __future__ import annotations

import re

import httpx
from fastapi import FastAPI

from sitetools.accounts import sessions
from tests.support import ctx_for, new_person


def _csrf(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match
    return match.group(1)


async def _form(client: httpx.AsyncClient) -> str:
    page = await client.get("/dashboard/sign-in")
    assert page.status_code == 200
    return _csrf(page.text)


async def test_sign_in_sets_an_httponly_lax_session_cookie(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    token = await _form(client)
    response = await client.post(
        "/dashboard/sign-in",
        data={
            "email": person.email.upper(),
            "password": person.password,
            "csrf_token": token,
            "next": "/dashboard",
        },
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/dashboard"
    cookie = next(
        c for c in response.headers.get_list("set-cookie") if c.startswith("sitetools_session=")
    )
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie
    home = await client.get("/dashboard")
    assert home.status_code == 200
    assert person.email in home.text
    api = await client.get("/v1/account")  # the cookie also works on /v1
    assert api.status_code == 200
    client.cookies.clear()


async def test_wrong_password_and_unknown_email_get_the_same_generic_error(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    token = await _form(client)
    wrong = await client.post(
        "/dashboard/sign-in",
        data={"email": person.email, "password": "nope", "csrf_token": token},
    )
    unknown = await client.post(
        "/dashboard/sign-in",
        data={"email": "nobody-" + person.email, "password": "nope", "csrf_token": token},
    )
    assert wrong.status_code == unknown.status_code == 401
    assert "Email or password is incorrect." in wrong.text
    assert "Email or password is incorrect." in unknown.text
    assert "sitetools_session=" not in wrong.headers.get("set-cookie", "")
    client.cookies.clear()


async def test_sign_in_without_csrf_token_is_refused(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    await _form(client)
    response = await client.post(
        "/dashboard/sign-in",
        data={"email": person.email, "password": person.password, "csrf_token": "forged"},
    )
    assert response.status_code == 403
    assert "sitetools_session" not in response.headers.get("set-cookie", "")
    client.cookies.clear()


async def test_repeated_failures_are_throttled_even_with_the_right_password(
    app: FastAPI,
    client: httpx.AsyncClient,
    clock,  # type: ignore[no-untyped-def]
) -> None:
    person = await new_person(app)
    token = await _form(client)
    for _ in range(5):
        await client.post(
            "/dashboard/sign-in",
            data={"email": person.email, "password": "guess", "csrf_token": token},
        )
    blocked = await client.post(
        "/dashboard/sign-in",
        data={"email": person.email, "password": person.password, "csrf_token": token},
    )
    assert blocked.status_code == 429
    assert "Too many failed sign-ins" in blocked.text
    assert int(blocked.headers["retry-after"]) > 0
    clock.advance(901)
    allowed = await client.post(
        "/dashboard/sign-in",
        data={"email": person.email, "password": person.password, "csrf_token": token},
    )
    assert allowed.status_code == 303
    client.cookies.clear()


async def test_open_redirects_are_refused(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app)
    token = await _form(client)
    response = await client.post(
        "/dashboard/sign-in",
        data={
            "email": person.email,
            "password": person.password,
            "csrf_token": token,
            "next": "https://evil.example/",
        },
    )
    assert response.headers["location"] == "/dashboard"
    client.cookies.clear()


async def test_sign_out_needs_the_session_csrf_token_and_ends_the_session(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    client.cookies.set("sitetools_session", person.session_token)
    forged = await client.post("/dashboard/sign-out", data={"csrf_token": "x"})
    assert forged.status_code == 403
    assert (await client.get("/v1/account")).status_code == 200
    page = await client.get("/dashboard/sign-out")
    done = await client.post("/dashboard/sign-out", data={"csrf_token": _csrf(page.text)})
    assert done.status_code == 303
    client.cookies.clear()
    after = await client.get("/v1/account", headers=person.auth())
    assert after.status_code == 401


async def test_dashboard_redirects_to_sign_in_when_signed_out(client: httpx.AsyncClient) -> None:
    response = await client.get("/dashboard")
    assert response.status_code == 303
    assert response.headers["location"] == "/dashboard/sign-in?next=/dashboard"


async def test_sign_in_link_works_once(app: FastAPI, client: httpx.AsyncClient) -> None:
    person = await new_person(app)
    async with ctx_for(app) as ctx:
        link = await sessions.sign_in_link(ctx, person.email)
    path = link.removeprefix("http://testserver")
    first = await client.get(path)
    assert first.status_code == 303
    assert "sitetools_session=" in first.headers["set-cookie"]
    client.cookies.clear()
    second = await client.get(path)
    assert second.status_code == 400
    forged = await client.get(path[:-3] + "abc")
    assert forged.status_code == 400
    client.cookies.clear()


async def test_a_password_sign_in_is_a_fresh_sign_in_for_key_creation(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    token = await _form(client)
    await client.post(
        "/dashboard/sign-in",
        data={"email": person.email, "password": person.password, "csrf_token": token},
    )
    created = await client.post("/v1/api-keys", json={"name": "from the browser"})
    assert created.status_code == 201
    client.cookies.clear()
