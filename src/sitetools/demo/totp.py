"""TOTP (RFC 6238: HMAC-SHA1, 30-second steps, 6 digits), as authenticator apps compute it."""

from __future__ import annotations

import base64
import hmac
import secrets
import struct
import time

__all__ = ["new_totp_secret", "totp", "verify_totp"]


def new_totp_secret() -> str:
    return base64.b32encode(secrets.token_bytes(20)).decode().rstrip("=")


def totp(secret: str, at: float | None = None, step: int = 30) -> str:
    key = base64.b32decode(secret + "=" * (-len(secret) % 8), casefold=True)
    counter = int((time.time() if at is None else at) // step)
    digest = hmac.digest(key, struct.pack(">Q", counter), "sha1")
    offset = digest[-1] & 0x0F
    number = struct.unpack(">I", digest[offset : offset + 4])[0] & 0x7FFFFFFF
    return f"{number % 1_000_000:06d}"


def verify_totp(secret: str, code: str, at: float | None = None) -> bool:
    """The current code, or the one before or after (clock drift of one step)."""
    now = time.time() if at is None else at
    return any(hmac.compare_digest(totp(secret, now + drift), code) for drift in (-30, 0, 30))
