"""The catalogue holds every code of the spec's Errors table with its status and retry class."""

from __future__ import annotations

import pytest

from sitetools.core.errors import CATALOGUE, ServiceError, envelope

# spec: "Errors" table - (code, HTTP status, retry class); business_account_required's status is
# not in the table (decisions: 403).
SPEC_TABLE = """
invalid_request 400 A|invalid_answer 400 A|invalid_input 400 A|input_rejected 409 A
unsupported_login_field 400 A|effect_required 400 A|invalid_email 400 A|request_too_large 413 A
method_not_allowed 405 N|not_found 404 N|unauthorized 401 S|session_refresh_required 401 S
reauthentication_required 401 S|forbidden 403 N|stale_grant 409 A|save_forbidden 403 A
account_unsupported 403 N|organization_access_removed 403 N|account_deletion_pending 403 N
sign_in_required 401 S|try_limit_reached 429 Y|try_tier_unavailable 503 N
sign_in_limit_reached 429 Y|sign_in_unavailable 503 N|access_denied 410 N|expired_token 410 N
account_selection_required 409 A|saved_login_conflict 409 A|login_identity_conflict 409 A
site_login_exists 409 A|legacy_duplicate_saved_logins 409 A|saved_login_unsettled 409 Y
login_in_use 409 Y|login_save_in_progress 409 Y|invalid_credential 422 A
authenticator_not_configured 404 N|credentials_rejected 409 A|pin_required 403 N
pin_not_set 403 N|pin_already_set 409 N|invalid_pin 400 A|pin_mismatch 400 A|wrong_pin 403 A
pin_throttled 429 N|sms_number_not_allowed 403 N|sms_number_not_linked 404 N
sms_number_cap_reached 503 Y|sms_number_purchase_failed 503 Y|site_not_supported 403 N
quota_exceeded 429 F|quota_expired 409 F|website_pending 409 F|retry_conflict 409 F
execution_budget_exhausted 409 N|input_expired 410 N|input_not_pending 409 A
input_declined 409 N|input_cancelled 409 N|result_expired 410 N|result_unavailable 503 N
no_response 409 F|worker_lost 503 Y|outcome_unknown 409 N|invalid_output 409 N
execution_failed 409 N|mcp_not_hosted 409 N|permission_not_held 403 N
api_key_limit_reached 409 N|api_key_create_throttled 429 N|FreshAuthenticationRequired 403 S
business_account_required 403 N|team_unavailable 403 N|role_not_allowed 403 N
already_member 409 N|already_invited 409 N|in_another_team 409 N|idempotency_conflict 409 N
acceptance_unknown 503 N|webhooks_unavailable 403 N|webhook_limit_reached 409 N
webhook_secret_unreadable 409 N|account_unavailable 503 Y|internal_error 500 N
temporarily_unavailable 503 Y
"""
ROWS = [
    tuple(entry.split()) for line in SPEC_TABLE.strip().splitlines() for entry in line.split("|")
]


@pytest.mark.parametrize(("code", "status", "retry"), ROWS)
def test_catalogue_matches_spec_table(code: str, status: str, retry: str) -> None:
    spec = CATALOGUE[code]
    assert spec.status == int(status)
    assert spec.retry == retry
    assert spec.retryable is (retry == "Y")


def test_decided_statuses_of_codes_the_spec_leaves_open() -> None:
    assert CATALOGUE["login_access_required"].status == 403
    assert CATALOGUE["access_fixed"].status == 409
    assert CATALOGUE["grantee_not_member"].status == 404
    assert CATALOGUE["team_level_not_allowed"].status == 400


def test_unknown_code_cannot_be_raised() -> None:
    with pytest.raises(KeyError):
        ServiceError("no_such_code")


def test_envelope_shape_and_docs_url() -> None:
    error = ServiceError("quota_exceeded", reset_at="2026-01-02T00:00:00Z")
    body = envelope(error, "https://svc.example")
    assert body == {
        "error": {
            "code": "quota_exceeded",
            "message": CATALOGUE["quota_exceeded"].message,
            "retryable": False,
            "docs_url": "https://svc.example/docs/errors#quota_exceeded",
            "details": {"reset_at": "2026-01-02T00:00:00Z"},
        }
    }
