"""Every table, imported in one place so migrations and tests see the whole schema."""

from sitetools.accounts.models import (
    Account,
    ConnectionPreference,
    DashboardSession,
    Membership,
    SignInAttempt,
    User,
)
from sitetools.connect.models import DeviceSignIn
from sitetools.core.db import Base
from sitetools.core.nonces import SpentNonce
from sitetools.jobs.models import InputRequest, Job, KeylessRunCount
from sitetools.keys.models import ApiKey
from sitetools.oauth.models import OAuthClient, OAuthCode, OAuthGrant, OAuthToken
from sitetools.quota.models import QuotaCounter, QuotaReservation
from sitetools.tools.models import Integration, Tool, ToolVersion
from sitetools.webhooks.models import Webhook, WebhookAttempt, WebhookDelivery, WebhookEvent

__all__ = [
    "Account",
    "ApiKey",
    "Base",
    "ConnectionPreference",
    "DashboardSession",
    "DeviceSignIn",
    "InputRequest",
    "Integration",
    "Job",
    "KeylessRunCount",
    "Membership",
    "OAuthClient",
    "OAuthCode",
    "OAuthGrant",
    "OAuthToken",
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
