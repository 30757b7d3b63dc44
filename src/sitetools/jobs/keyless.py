"""Keyless runs (spec: "What the service does" 6; decisions: "Keyless runs").

A caller without credentials may run public, read-only tools that need no login. Its network
(/24 for IPv4, /56 for IPv6) is its client: the jobs it starts are read, answered and cancelled
from that network only. Runs are counted per UTC day, per network and over all networks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import update

from sitetools.core.clock import iso_utc, utc_day
from sitetools.core.context import Ctx
from sitetools.core.db import insert_if_missing
from sitetools.core.errors import ServiceError
from sitetools.jobs.models import KeylessRunCount

__all__ = ["OVERALL", "Keyless", "count_keyless_run", "require_keyless_runs"]

OVERALL = "*"


@dataclass(frozen=True)
class Keyless:
    """An anonymous caller, known by its network."""

    network: str

    @property
    def client_id(self) -> str:
        return f"net:{self.network}"


def _day(now: datetime) -> tuple[datetime, datetime]:
    return utc_day(now)


def require_keyless_runs(ctx: Ctx) -> None:
    """503 ``try_tier_unavailable`` when keyless use, or its runs, are switched off."""
    if not ctx.settings.keyless_enabled or ctx.settings.keyless_daily_runs <= 0:
        raise ServiceError("try_tier_unavailable")


async def count_keyless_run(ctx: Ctx, caller: Keyless) -> None:
    """Count one run in the caller's transaction (after ``require_keyless_runs``): 429
    ``try_limit_reached`` when the network's or the overall count is used up."""
    settings = ctx.settings
    now = ctx.now()
    start, end = _day(now)
    for network, limit in (
        (caller.network, settings.keyless_daily_runs_per_network),
        (OVERALL, settings.keyless_daily_runs),
    ):
        await insert_if_missing(ctx.db, KeylessRunCount, day=start, network=network, used=0)
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
                reset_at=iso_utc(end),
                retry_after_seconds=max(1, int((end - now).total_seconds())),
                scope="network" if network != OVERALL else "overall",
            )
