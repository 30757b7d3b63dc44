"""CSRF protection for Dashboard forms.

Before sign-in: a double-submit token (a random cookie repeated in the form). After sign-in: a
token bound to the session (a keyed digest of its ID), so it cannot be set by another site.
"""

from __future__ import annotations

import hmac
import secrets

from starlette.requests import Request

from sitetools.core.crypto import Keyring

__all__ = ["PRE_SESSION_COOKIE", "new_pre_session_token", "pre_session_ok", "session_token"]

PRE_SESSION_COOKIE = "sitetools_csrf"


def new_pre_session_token() -> str:
    return secrets.token_urlsafe(24)


def pre_session_ok(request: Request, submitted: str | None) -> bool:
    cookie = request.cookies.get(PRE_SESSION_COOKIE)
    return bool(cookie and submitted and hmac.compare_digest(cookie, submitted))


def session_token(keyring: Keyring, session_id: str) -> str:
    return keyring.mac("csrf", session_id)


def session_token_ok(keyring: Keyring, session_id: str, submitted: str | None) -> bool:
    return bool(submitted) and hmac.compare_digest(
        session_token(keyring, session_id), submitted or ""
    )
