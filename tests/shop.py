"""The Demo Shop served over real HTTP in a thread, for the tests that need a website."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from sitetools.demo.site import create_demo_site
from sitetools.demo.totp import totp
from tests.conftest import free_port


class Shop:
    def __init__(self, folder: Path) -> None:
        self.app, self.store = create_demo_site(folder / "shop.db")
        self.users = {u.username: u for u in self.store.seed()}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.allow = f"127.0.0.1:{self.port}"
        self.server = uvicorn.Server(
            uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_config=None)
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def code(self, username: str) -> str:
        """The user's current TOTP code, as their authenticator app shows it."""
        return totp(self.users[username].totp_secret)


@contextmanager
def running_shop(folder: Path) -> Iterator[Shop]:
    site = Shop(folder)
    site.thread.start()
    deadline = time.monotonic() + 20
    while not site.server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the demo shop did not start")
        time.sleep(0.02)
    try:
        yield site
    finally:
        site.server.should_exit = True
        site.thread.join(timeout=10)
