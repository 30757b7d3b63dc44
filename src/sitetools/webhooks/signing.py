"""Standard Webhooks signatures (spec: "Delivery" 1): ``v1,`` + base64 HMAC-SHA256 over
``{id}.{timestamp}.{body}``, keyed with the secret's decoded bytes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from datetime import datetime

from sitetools.core.crypto import Keyring

__all__ = [
    "SECRET_PREFIX",
    "SecretUnreadableError",
    "new_signing_secret",
    "open_secret",
    "seal_secret",
    "signature_header",
    "signing_secrets",
    "standard_headers",
]

SECRET_PREFIX = "whsec_"


def new_signing_secret() -> str:
    """``whsec_`` + standard base64 of 32 random bytes (what Standard Webhooks libraries read)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def standard_headers(
    secrets_in_use: list[str], message_id: str, at: datetime, body: bytes
) -> list[tuple[str, str]]:
    """The Standard Webhooks headers of one attempt (its timestamp is the attempt's)."""
    stamp = int(at.timestamp())
    return [
        ("webhook-id", message_id),
        ("webhook-timestamp", str(stamp)),
        ("webhook-signature", signature_header(secrets_in_use, message_id, stamp, body)),
    ]


def signature_header(
    secrets_in_use: list[str], message_id: str, timestamp: int, body: bytes
) -> str:
    """One ``v1,`` signature per secret, space-separated (both during a rotation's overlap)."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    return " ".join(
        "v1," + base64.b64encode(hmac.digest(_key(secret), signed, hashlib.sha256)).decode()
        for secret in secrets_in_use
    )


SECRET_PURPOSE = "webhook-secret"


class SecretUnreadableError(Exception):
    """A stored signing secret cannot be decrypted (another master key): rotate it."""


def seal_secret(keyring: Keyring, webhook_id: str, secret: str) -> bytes:
    return keyring.encrypt(SECRET_PURPOSE, secret.encode(), webhook_id.encode())


def signing_secrets(
    keyring: Keyring,
    webhook_id: str,
    secret_enc: bytes,
    previous_enc: bytes | None,
    previous_until: datetime | None,
    now: datetime,
) -> list[str]:
    """The secrets that sign a delivery now: the current one, and the previous one during the
    24 hours after a rotation (spec: "Delivery" 1)."""
    sealed = [secret_enc]
    if previous_enc is not None and previous_until is not None and now < previous_until:
        sealed.append(previous_enc)
    return [open_secret(keyring, webhook_id, blob) for blob in sealed]


def open_secret(keyring: Keyring, webhook_id: str, sealed: bytes) -> str:
    try:
        return keyring.decrypt(SECRET_PURPOSE, sealed, webhook_id.encode()).decode()
    except Exception:  # InvalidTag, a truncated blob: either way the secret is gone
        raise SecretUnreadableError(webhook_id) from None
