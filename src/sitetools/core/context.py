"""What a service function needs besides its caller: one database session and the app's tools."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from sitetools.core.clock import Clock
from sitetools.core.config import Settings
from sitetools.core.crypto import Keyring, PasswordHashing

__all__ = ["AppServices", "Ctx"]


@dataclass(frozen=True, slots=True)
class AppServices:
    """Created once per process in ``create_app`` (or the CLI) and shared by every request."""

    settings: Settings
    clock: Clock
    keyring: Keyring
    passwords: PasswordHashing


@dataclass(frozen=True, slots=True)
class Ctx:
    """One unit of work: a transaction owned by the caller of the service (habit 1)."""

    db: AsyncSession
    app: AppServices

    @property
    def settings(self) -> Settings:
        return self.app.settings

    @property
    def keyring(self) -> Keyring:
        return self.app.keyring

    def now(self) -> datetime:
        return self.app.clock.now()
