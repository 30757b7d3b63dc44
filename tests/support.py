"""Helpers the tests share: a clock that can be moved, and people with credentials."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI
from playwright.async_api import Browser, Page, async_playwright

from sitetools.accounts import service as accounts
from sitetools.accounts import sessions
from sitetools.auth.permissions import Role
from sitetools.auth.resolve import resolve_caller
from sitetools.core.clock import Clock
from sitetools.core.context import Ctx
from sitetools.keys import service as keys
from sitetools.keys.schemas import ApiKeyWithSecret, CreateKeyIn


class MovableClock(Clock):
    """Real time plus an offset tests can move forward (never sleeps)."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


def unique_email(label: str = "person") -> str:
    return f"{label}-{uuid.uuid4().hex[:12]}@example.com"


@dataclass
class Person:
    """A member of an account with a Dashboard session token."""

    app: FastAPI
    email: str
    password: str
    account_id: str
    user_id: str
    membership_id: str
    session_token: str
    keys: dict[str, str] = field(default_factory=dict)

    def auth(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.session_token}"}

    async def key(self, name: str = "key", **fields: Any) -> ApiKeyWithSecret:
        """A new API key for this person, made through the service (fresh sign-in)."""
        async with ctx_for(self.app) as ctx:
            caller = await resolve_caller(ctx, self.session_token)
            data = CreateKeyIn.model_validate({"name": name, **fields})
            created = await keys.create_key(ctx, caller, data)
            await ctx.db.commit()
        assert isinstance(created, ApiKeyWithSecret)
        return created


class ctx_for:  # noqa: N801 - used like a function: ``async with ctx_for(app) as ctx``
    """A Ctx over the app's database, as the CLI or a worker would have."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    async def __aenter__(self) -> Ctx:
        self._session = self.app.state.sessions()
        db = await self._session.__aenter__()
        return Ctx(db, self.app.state.services)

    async def __aexit__(self, *exc: Any) -> None:
        await self._session.__aexit__(*exc)


async def new_person(
    app: FastAPI,
    *,
    account_type: accounts.AccountType = "personal",
    plan: Any = None,
    role: Role = Role.OWNER,
    account_id: str | None = None,
) -> Person:
    """A person with a fresh session; ``account_id`` adds them to that Business account."""
    email, password = unique_email(), "correct horse battery"
    async with ctx_for(app) as ctx:
        if account_id is None:
            account, user, membership = await accounts.create_account(
                ctx, email=email, password=password, account_type=account_type, plan=plan
            )
            account_id = account.id
            if role is not Role.OWNER:
                membership.role = role.value
        else:
            user, membership = await accounts.add_member(
                ctx, account_id=account_id, email=email, password=password, role=role
            )
        new = await sessions.create_session(ctx, user.id, account_id)
        await ctx.db.commit()
    return Person(app, email, password, account_id, user.id, membership.id, new.token)


def error_code(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "retryable", "docs_url", "details"}
    return str(body["error"]["code"])


async def new_integration(app: FastAPI, *, account_id: str | None = None) -> str:
    """An integration row (public, or private to ``account_id``)."""
    from sitetools.core.ids import new_id
    from sitetools.tools.models import Integration

    async with ctx_for(app) as ctx:
        integration = Integration(
            id=new_id("int"),
            account_id=account_id,
            visibility="private" if account_id else "public",
            name="Demo Shop",
            site_url="https://shop.example",
            domain="shop.example",
            status="active",
            created_at=ctx.now(),
        )
        ctx.db.add(integration)
        await ctx.db.commit()
    return integration.id


CHROMIUM = os.environ.get("SITETOOLS_CHROMIUM", "/usr/lib/chromium/chromium")
# Debian's Chromium as root, headless, without the background traffic this closed network refuses.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """A headless Chromium for one test, closed afterwards."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


def sitetools_worker(database_url: str, data_dir: Any, **settings: str) -> subprocess.Popen[bytes]:
    """``sitetools worker`` in its own process over ``database_url``; ``settings`` become
    ``SITETOOLS_`` variables (the test's own are not passed on)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITETOOLS_")}
    env.update(
        SITETOOLS_DATABASE_URL=database_url,
        SITETOOLS_DATA_DIR=str(data_dir),
        SITETOOLS_LOG_LEVEL="WARNING",
        **{f"SITETOOLS_{name.upper()}": value for name, value in settings.items()},
    )
    return subprocess.Popen(
        [sys.executable, "-m", "sitetools.cli.main", "worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def served(app: Any, port: int, **config: Any) -> Iterator[None]:
    """``app`` served by uvicorn on 127.0.0.1:``port`` in a thread while the block runs."""
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, **config)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"the server on port {port} did not start")
        time.sleep(0.02)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)


async def signed_in_page(browser: Browser, server_url: str, session_token: str) -> Page:
    """A new browser page that carries ``session_token`` as the Dashboard session cookie."""
    context = await browser.new_context()
    await context.add_cookies(
        [{"name": "sitetools_session", "value": session_token, "url": server_url}]
    )
    return await context.new_page()
