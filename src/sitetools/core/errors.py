"""The one error type and the catalogue of every error code (spec: "Errors").

Services raise ``ServiceError(code, **details)``; surfaces render it: REST as the envelope
``{error: {code, message, retryable, docs_url, details}}``, MCP as a tool error, the Dashboard as
a message. Codes are stable; messages are not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CATALOGUE", "ErrorSpec", "ServiceError", "envelope"]


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    status: int
    retry: str  # spec's legend: A, N, S, Y, F
    message: str

    @property
    def retryable(self) -> bool:
        # spec: "retryable is true when the same request can succeed later" - legend Y only.
        return self.retry == "Y"

    @property
    def advice(self) -> str:
        return _RETRY_ADVICE[self.retry]


_RETRY_ADVICE = {
    "A": "Retry after changing the request.",
    "N": "Do not retry: repeating the request does not help.",
    "S": "Retry after signing in again.",
    "Y": "Retry the same request (with its retry key) after a short wait.",
    "F": "Retry only as a fresh request with a new retry key.",
}

_E = ErrorSpec
CATALOGUE: dict[str, ErrorSpec] = {
    "invalid_request": _E(400, "A", "The request does not match what this operation accepts."),
    "invalid_answer": _E(400, "A", "The answers do not fit the pending input request."),
    "invalid_input": _E(400, "A", "The input does not match the tool's input schema."),
    "input_rejected": _E(409, "A", "The tool or website refused a value after the run started."),
    "unsupported_login_field": _E(400, "A", "The tool's sign-in does not take a login field sent."),
    "effect_required": _E(400, "A", "A website build requires an effect: read, write or ask."),
    "invalid_email": _E(400, "A", "The email does not match the signed-in account's."),
    "request_too_large": _E(413, "A", "The request body is larger than this operation accepts."),
    "method_not_allowed": _E(405, "N", "This method is not accepted on this path."),
    "not_found": _E(404, "N", "Nothing with that ID exists, or the caller may not see it."),
    "unauthorized": _E(401, "S", "Credentials are missing, expired or rejected."),
    "session_refresh_required": _E(401, "S", "The Dashboard session needs refreshing."),
    "reauthentication_required": _E(401, "S", "This action needs a recent sign-in."),
    "forbidden": _E(403, "N", "The account, grant or permissions do not allow this."),
    "stale_grant": _E(
        409, "A", "The grant changed since it was read; resend its current revision."
    ),
    "save_forbidden": _E(403, "A", "This client may not save website logins."),
    "account_unsupported": _E(403, "N", "The account type does not offer this action."),
    "organization_access_removed": _E(403, "N", "Membership in the Business account ended."),
    "account_deletion_pending": _E(403, "N", "The account is being deleted."),
    "sign_in_required": _E(401, "S", "This needs a signed-in account."),
    "try_limit_reached": _E(429, "Y", "Keyless runs are used up for today."),
    "try_tier_unavailable": _E(503, "N", "Keyless use is unavailable."),
    "sign_in_limit_reached": _E(429, "Y", "Too many device sign-ins from this network today."),
    "sign_in_unavailable": _E(503, "N", "Device sign-in is unavailable."),
    "access_denied": _E(410, "N", "The person declined the device sign-in."),
    "expired_token": _E(410, "N", "The device sign-in expired or its key was already handed out."),
    "account_selection_required": _E(
        409, "A", "Several saved logins are available; resend with connected_account_id."
    ),
    "saved_login_conflict": _E(
        409, "A", "The site already has a saved login for a different username."
    ),
    "login_identity_conflict": _E(
        409, "A", "The account's login for the site is locked to a different username."
    ),
    "site_login_exists": _E(409, "A", "A login is already saved for this website."),
    "legacy_duplicate_saved_logins": _E(
        409, "A", "More than one saved login exists from before the one-login rule."
    ),
    "saved_login_unsettled": _E(409, "Y", "A change to the saved login is still being confirmed."),
    "login_in_use": _E(409, "Y", "The saved login is in use by a running job."),
    "login_save_in_progress": _E(409, "Y", "A save of the site's login is in progress."),
    "invalid_credential": _E(422, "A", "The login values are not valid for a saved login."),
    "authenticator_not_configured": _E(404, "N", "The saved login has no authenticator secret."),
    "credentials_rejected": _E(409, "A", "The website rejected the login."),
    "pin_required": _E(403, "N", "Saved logins are locked."),
    "pin_not_set": _E(403, "N", "No Logins PIN is set."),
    "pin_already_set": _E(409, "N", "A Logins PIN already exists."),
    "invalid_pin": _E(400, "A", "The PIN format is wrong."),
    "pin_mismatch": _E(400, "A", "The two PINs differ."),
    "wrong_pin": _E(403, "A", "The PIN is incorrect."),
    "pin_throttled": _E(429, "N", "Too many PIN attempts."),
    "sms_number_not_allowed": _E(
        403, "N", "Service phone numbers are not available to this account."
    ),
    "sms_number_not_linked": _E(404, "N", "The saved login has no service phone number."),
    "sms_number_cap_reached": _E(503, "Y", "No more phone numbers are available now."),
    "sms_number_purchase_failed": _E(503, "Y", "A phone number could not be obtained."),
    "site_not_supported": _E(403, "N", "Builds are refused for this site."),
    "quota_exceeded": _E(429, "F", "The quota is used up."),
    "quota_expired": _E(409, "F", "The quota reservation expired before acceptance."),
    "website_pending": _E(409, "F", "Another build for the site is pending."),
    "retry_conflict": _E(409, "F", "The retry key was already used for a different request."),
    "execution_budget_exhausted": _E(409, "N", "The job used its whole execution budget."),
    "input_expired": _E(410, "N", "The input request expired."),
    "input_not_pending": _E(
        409, "A", "No such pending input request; answer the current request_id and version."
    ),
    "input_declined": _E(409, "N", "The client declined the request; it stays pending."),
    "input_cancelled": _E(409, "N", "The client cancelled the request; it stays pending."),
    "result_expired": _E(
        410, "N", "The result is kept only until first read and at most 5 minutes after the job."
    ),
    "result_unavailable": _E(503, "N", "The job was accepted but its result could not be read."),
    "no_response": _E(409, "F", "The run's question went unanswered in time; the run stopped."),
    "worker_lost": _E(
        503, "Y", "The worker was lost; nothing reached the site or the run only reads."
    ),
    "outcome_unknown": _E(409, "N", "No validated result, and the site may have changed."),
    "invalid_output": _E(409, "N", "The result did not match the output schema."),
    "execution_failed": _E(409, "N", "The job produced no validated result."),
    "mcp_not_hosted": _E(409, "N", "The integration has no hosted MCP yet."),
    "permission_not_held": _E(403, "N", "The caller lacks a permission it asked to grant."),
    "api_key_limit_reached": _E(409, "N", "The API key limit is reached."),
    "api_key_create_throttled": _E(429, "N", "More than 20 connect keys were created this hour."),
    "FreshAuthenticationRequired": _E(
        403, "S", "This needs a sign-in within the last five minutes."
    ),
    "business_account_required": _E(403, "N", "This needs a Business account."),
    "login_access_required": _E(403, "N", "This needs access to the saved login."),
    "access_fixed": _E(409, "N", "This person's access to the login cannot be changed."),
    "grantee_not_member": _E(404, "N", "The grantee is not a member of the team."),
    "team_level_not_allowed": _E(400, "A", "That level cannot be given to the whole team."),
    "team_unavailable": _E(403, "N", "Team features are unavailable."),
    "role_not_allowed": _E(403, "N", "The role is not allowed for the inviter."),
    "already_member": _E(409, "N", "The address is already on the team."),
    "already_invited": _E(409, "N", "The address is already invited."),
    "in_another_team": _E(409, "N", "The address belongs to another team."),
    "idempotency_conflict": _E(409, "N", "The idempotency key was reused with another body."),
    "acceptance_unknown": _E(503, "N", "Acceptance of the request is unknown."),
    "webhooks_unavailable": _E(403, "N", "Webhooks are not available in this environment."),
    "webhook_limit_reached": _E(409, "N", "20 webhooks are already held."),
    "webhook_secret_unreadable": _E(409, "N", "The webhook secret cannot be read; rotate it."),
    "account_unavailable": _E(503, "Y", "Account access could not be verified."),
    "rate_limited": _E(429, "Y", "Too many requests; slow down."),
    "internal_error": _E(500, "N", "The server failed to handle the request."),
    "temporarily_unavailable": _E(503, "Y", "The service is temporarily unavailable; try again."),
}


class ServiceError(Exception):
    """A rule refused the request. ``code`` must be in the catalogue.

    ``commit_changes`` marks a refusal that records something (a declined question): the
    surface commits the unit of work before rendering the error instead of rolling it back.
    """

    commit_changes = False

    def __init__(self, code: str, message: str | None = None, **details: Any) -> None:
        if code not in CATALOGUE:
            raise KeyError(f"unknown error code {code!r}")
        self.code = code
        self.spec = CATALOGUE[code]
        self.message = message or self.spec.message
        self.details = details
        super().__init__(f"{code}: {self.message}")

    @property
    def status(self) -> int:
        return self.spec.status


def envelope(error: ServiceError, base_url: str) -> dict[str, Any]:
    """The spec's error object for ``error``."""
    return {
        "error": {
            "code": error.code,
            "message": error.message,
            "retryable": error.spec.retryable,
            "docs_url": f"{base_url}/docs/errors#{error.code}",
            "details": error.details,
        }
    }
