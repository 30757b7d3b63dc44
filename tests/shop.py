"""The Demo Shop served over real HTTP in a thread, for the tests that need a website."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sitetools.demo.site import create_demo_site
from sitetools.demo.totp import totp
from tests.support import free_port, served


class Shop:
    def __init__(self, folder: Path) -> None:
        self.app, self.store = create_demo_site(folder / "shop.db")
        self.users = {u.username: u for u in self.store.seed()}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.allow = f"127.0.0.1:{self.port}"

    def code(self, username: str) -> str:
        """The user's current TOTP code, as their authenticator app shows it."""
        return totp(self.users[username].totp_secret)


@contextmanager
def running_shop(folder: Path) -> Iterator[Shop]:
    site = Shop(folder)
    with served(site.app, site.port):
        yield site
