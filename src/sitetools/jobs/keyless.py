"""Keyless runs (spec: "What the service does" 6; decisions: "Keyless runs").

A caller without credentials may run public, read-only tools that need no login. Its network
(/24 for IPv4, /56 for IPv6) is its client: the jobs it starts are read, answered and cancelled
from that network only. Runs are counted per UTC day, per network and over all networks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from sitetools.core.context import Ctx
from sitetools.core.errors import ServiceError
from sitetools.jobs.models import KeylessRunCount

__all__ = ["OVERALL", "Keyless", "count_keyless_run"]

OVERALL = "*"


@dataclass(frozen=True)
class Keyless:
    """An anonymous caller, known by its network."""

    network: str
    kind: Literal["keyless"] = "keyless"

    @property
    def client_id(self) -> str:
        return f"net:{self.network}"


def _day(now: datetime) -> tuple[datetime, datetime]:
    start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


async def count_keyless_run(ctx: Ctx, caller: Keyless) -> None:
    """Count one run in the caller's transaction: 503 ``try_tier_unavailable`` when keyless
    use is off, 429 ``try_limit_reached`` when the network's or the overall count is used up."""
    settings = ctx.settings
    if not settings.keyless_enabled or settings.keyless_daily_runs <= 0:
        raise ServiceError("try_tier_unavailable")
    now = ctx.now()
    start, end = _day(now)
    insert = pg_insert if ctx.db.get_bind().dialect.name == "postgresql" else sqlite_insert
    for network, limit in (
        (caller.network, settings.keyless_daily_runs_per_network),
        (OVERALL, settings.keyless_daily_runs),
    ):
        await ctx.db.execute(
            insert(KeylessRunCount)
            .values(day=start, network=network, used=0)
            .on_conflict_do_nothing()
        )
        # One conditional UPDATE: concurrent runs never pass the limit on either backend.
        counted = await ctx.db.execute(
            update(KeylessRunCount)
            .where(
                KeylessRunCount.day == start,
                KeylessRunCount.network == network,
                KeylessRunCount.used < limit,
            )
            .values(used=KeylessRunCount.used + 1)
        )
        if counted.rowcount != 1:  # type: ignore[attr-defined]
            # The caller's transaction is rolled back with the error: nothing is counted.
            raise ServiceError(
                "try_limit_reached",
                reset_at=end.isoformat().replace("+00:00", "Z"),
                retry_after_seconds=max(1, int((end - now).total_seconds())),
                scope="network" if network != OVERALL else "overall",
            )
