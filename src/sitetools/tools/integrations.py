"""Rules about integrations other areas rely on."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from sitetools.core.errors import ServiceError
from sitetools.tools.models import Integration

__all__ = ["require_visible_integration"]


async def require_visible_integration(
    session: AsyncSession, account_id: str, integration_id: str
) -> Integration:
    """The integration if it is active and public or the account's own; else 404 ``not_found``."""
    integration = await session.scalar(select(Integration).where(Integration.id == integration_id))
    if (
        integration is None
        or integration.status != "active"
        or (integration.visibility != "public" and integration.account_id != account_id)
    ):
        raise ServiceError("not_found", resource="integration")
    return integration
