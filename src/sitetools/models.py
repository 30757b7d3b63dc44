"""Every table, imported in one place so migrations and tests see the whole schema."""

from sitetools.accounts.models import (
    Account,
    ConnectionPreference,
    DashboardSession,
    Membership,
    SignInAttempt,
    User,
)
from sitetools.core.db import Base
from sitetools.core.nonces import SpentNonce
from sitetools.jobs.models import InputRequest, Job, KeylessRunCount
from sitetools.keys.models import ApiKey
from sitetools.quota.models import QuotaCounter, QuotaReservation
from sitetools.tools.models import Integration, Tool, ToolVersion
from sitetools.webhooks.models import Webhook, WebhookAttempt, WebhookDelivery, WebhookEvent

__all__ = [
    "Account",
    "ApiKey",
    "Base",
    "ConnectionPreference",
    "DashboardSession",
    "InputRequest",
    "Integration",
    "Job",
    "KeylessRunCount",
    "Membership",
    "QuotaCounter",
    "QuotaReservation",
    "SignInAttempt",
    "SpentNonce",
    "Tool",
    "ToolVersion",
    "User",
    "Webhook",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookEvent",
]
