"""``Context``: the run's view of the service, over the pipe to the worker."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import IO, Any

import httpx

__all__ = ["Context", "Login"]


@dataclass(frozen=True)
class Login:
    """A website login typed by the person on the protected page. Never log it."""

    username: str | None
    password: str | None
    email: str | None = None
    phone: str | None = None

    def __repr__(self) -> str:
        return "Login(…)"


class Context:
    def __init__(
        self,
        start: dict[str, Any],
        reader: IO[bytes],
        writer: IO[bytes],
    ) -> None:
        self.site_url: str = start["site_url"]
        self.proxy_url: str = start["proxy_url"]
        self.chromium: str = start["chromium"]
        self.login_fields: list[str] = start.get("login_fields") or ["username", "password"]
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()
        self._http: httpx.AsyncClient | None = None
        self._playwright: Any = None
        self._browser: Any = None

    # -- the pipe ---------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        self._writer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self._writer.flush()

    async def _receive(self) -> dict[str, Any]:
        line = await asyncio.to_thread(self._reader.readline)
        if not line:
            raise SystemExit(0)  # the worker went away: nothing left to do
        message: dict[str, Any] = json.loads(line)
        return message

    # -- reporting --------------------------------------------------------------------------

    def progress(self, stage: str, message: str = "") -> None:
        """Say what the run is doing (``stage`` such as ``signing_in`` or ``running``)."""
        self.send({"op": "progress", "stage": stage, "message": message})

    def log(self, message: str, **fields: Any) -> None:
        """A line in the run's log (never shown to the agent; secrets are redacted)."""
        self.send({"op": "log", "message": message, "fields": fields})

    # -- questions --------------------------------------------------------------------------

    async def ask_many(
        self, questions: list[dict[str, Any]], *, expires_in: int = 900
    ) -> dict[str, Any]:
        """Ask several questions at once; answers keyed by question id."""
        async with self._lock:
            self.send({"op": "ask", "questions": questions, "expires_in": expires_in})
            reply = await self._receive()
        answers: dict[str, Any] = reply.get("answers", {})
        return answers

    async def ask(
        self, prompt: str, *, max_length: int | None = None, expires_in: int = 900
    ) -> str:
        question: dict[str, Any] = {"id": "answer", "type": "text", "prompt": prompt}
        if max_length is not None:
            question["max_length"] = max_length
        return str((await self.ask_many([question], expires_in=expires_in))["answer"])

    async def confirm(self, prompt: str, *, expires_in: int = 900) -> bool:
        question = {"id": "confirm", "type": "confirm", "prompt": prompt}
        return bool((await self.ask_many([question], expires_in=expires_in))["confirm"])

    async def choose(
        self,
        prompt: str,
        options: list[str] | list[dict[str, str]],
        *,
        multiple: bool = False,
        allow_other: bool = False,
        min_selections: int | None = None,
        max_selections: int | None = None,
        expires_in: int = 900,
    ) -> Any:
        question: dict[str, Any] = {
            "id": "choice",
            "type": "choice",
            "prompt": prompt,
            "options": options,
            "multiple": multiple,
            "allow_other": allow_other,
        }
        if min_selections is not None:
            question["min_selections"] = min_selections
        if max_selections is not None:
            question["max_selections"] = max_selections
        return (await self.ask_many([question], expires_in=expires_in))["choice"]

    async def login(self, prompt: str | None = None) -> Login:
        """The site's login, typed by the person on the protected page (never by the agent)."""
        question = {
            "id": "login",
            "type": "secret",
            "secret": "login",
            "fields": self.login_fields,
            "prompt": prompt or "Sign in to the website",
        }
        self.progress("signing_in")
        values = (await self.ask_many([question]))["login"]
        return Login(
            username=values.get("username"),
            password=values.get("password"),
            email=values.get("email"),
            phone=values.get("phone"),
        )

    async def two_factor(self, method: str = "totp", prompt: str | None = None) -> str:
        """A two-factor code (``totp``, ``sms`` or ``email``), typed on the protected page."""
        question = {
            "id": "code",
            "type": "secret",
            "secret": "code",
            "method": method,
            "prompt": prompt or "Enter the code from your authenticator app",
        }
        return str((await self.ask_many([question]))["code"])

    # -- the site ---------------------------------------------------------------------------

    @property
    def http(self) -> httpx.AsyncClient:
        """An httpx client for the tool's site, through the run's egress proxy."""
        if self._http is None:
            self._http = httpx.AsyncClient(
                base_url=self.site_url,
                proxy=self.proxy_url,
                timeout=30,
                follow_redirects=True,
                headers={"user-agent": "sitetools-tool/1"},
            )
        return self._http

    @contextlib.asynccontextmanager
    async def page(self) -> AsyncIterator[Any]:
        """A Playwright page in a fresh browser context, through the egress proxy."""
        from playwright.async_api import async_playwright

        if self._browser is None:
            self._playwright = await async_playwright().start()
            self._browser = await self._playwright.chromium.launch(
                executable_path=self.chromium,
                args=[
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--no-first-run",
                    "--proxy-bypass-list=<-loopback>",
                ],
                proxy={"server": self.proxy_url, "bypass": "<-loopback>"},
            )
        context = await self._browser.new_context(base_url=self.site_url)
        try:
            yield await context.new_page()
        finally:
            await context.close()

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
        if self._browser is not None:
            with contextlib.suppress(Exception):
                await self._browser.close()
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                await self._playwright.stop()
