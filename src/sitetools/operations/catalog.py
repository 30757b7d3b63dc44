"""Every operation of the service, gathered from the areas' ``operations`` modules."""

from __future__ import annotations

from sitetools.accounts.operations import OPERATIONS as ACCOUNT
from sitetools.connect.operations import OPERATIONS as CONNECT
from sitetools.jobs.operations import OPERATIONS as JOBS
from sitetools.keys.operations import OPERATIONS as API_KEYS
from sitetools.oauth.operations import OPERATIONS as CONNECTED_APPS
from sitetools.operations.registry import Operation
from sitetools.quota.operations import OPERATIONS as QUOTA
from sitetools.tools.operations import OPERATIONS as TOOLS
from sitetools.webhooks.operations import OPERATIONS as WEBHOOKS

__all__ = ["all_operations"]


def all_operations() -> list[Operation]:
    operations = [
        *ACCOUNT,
        *API_KEYS,
        *CONNECTED_APPS,
        *CONNECT,
        *QUOTA,
        *TOOLS,
        *WEBHOOKS,
        *JOBS,
    ]
    ids = [op.operation_id for op in operations]
    if len(ids) != len(set(ids)):
        raise ValueError("operationId declared twice")
    return operations
