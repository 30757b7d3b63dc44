"""Apply the Alembic migrations shipped inside the package."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from alembic import command
from alembic.config import Config

__all__ = ["alembic_config", "migrate"]

_SCRIPTS = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    config.set_main_option("sqlalchemy.url", database_url)
    config.set_main_option("file_template", "%%(year)d%%(month).2d%%(day).2d_%%(rev)s_%%(slug)s")
    return config


def migrate(database_url: str, revision: str = "head") -> None:
    """Upgrade the database to ``revision``; safe to call from inside a running event loop."""
    config = alembic_config(database_url)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        command.upgrade(config, revision)
        return
    failure: list[BaseException] = []

    def run() -> None:
        try:
            command.upgrade(config, revision)
        except BaseException as error:  # re-raised in the calling thread
            failure.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
