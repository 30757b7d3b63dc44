"""Secrets at rest: the master key, token digests, signed intents and authenticated encryption.

API keys and session tokens are kept only as HMAC-SHA-256 digests under a key derived from the
master key, so a copy of the database alone cannot be used to find or forge a credential.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = [
    "Keyring",
    "PasswordHashing",
    "load_or_create_master_key",
    "new_secret",
]

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def new_secret(prefix: str, nbytes: int = 32) -> str:
    """``prefix`` + base62 of ``nbytes`` random bytes (no padding, URL- and shell-safe)."""
    number = int.from_bytes(secrets.token_bytes(nbytes), "big")
    digits = []
    # 32 bytes need at most 43 base62 digits; keep the length fixed so hints line up.
    length = -(-nbytes * 8 * 1000 // 5954)  # ceil(bits / log2(62))
    for _ in range(length):
        number, rest = divmod(number, 62)
        digits.append(_BASE62[rest])
    return prefix + "".join(digits)


def load_or_create_master_key(path: Path) -> bytes:
    """Read the 32-byte master key, creating it (mode 0600) on first start."""
    if path.exists():
        raw = path.read_bytes().strip()
        key = base64.urlsafe_b64decode(raw)
        if len(key) != 32:
            raise ValueError(f"{path}: the master key must be 32 bytes, base64url encoded")
        return key
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(base64.urlsafe_b64encode(key) + b"\n")
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Keyring:
    """Purpose-bound keys derived from the master key (HKDF-SHA256)."""

    master_key: bytes

    def _derive(self, purpose: str) -> bytes:
        return HKDF(algorithm=SHA256(), length=32, salt=None, info=purpose.encode()).derive(
            self.master_key
        )

    @property
    def _digest_key(self) -> bytes:
        return self._cached("token-digest-v1")

    def _cached(self, purpose: str) -> bytes:
        cache: dict[str, bytes] = self.__dict__.setdefault("_cache", {})
        if purpose not in cache:
            cache[purpose] = self._derive(purpose)
        return cache[purpose]

    def token_digest(self, token: str) -> str:
        """The stored form of a bearer secret (API key, session token)."""
        return hmac.digest(self._digest_key, token.encode(), "sha256").hex()

    def sign(self, purpose: str, payload: dict[str, Any], expires_at: datetime) -> str:
        """A compact signed, expiring token carrying ``payload`` (not secret, not encrypted)."""
        body = dict(payload, exp=int(expires_at.timestamp()))
        data = _b64(json.dumps(body, separators=(",", ":"), sort_keys=True).encode())
        mac = hmac.new(self._cached(f"sign:{purpose}"), data.encode(), hashlib.sha256).digest()
        return f"{data}.{_b64(mac)}"

    def verify(self, purpose: str, token: str, now: datetime) -> dict[str, Any] | None:
        """The payload of a token made by :meth:`sign`, or None if forged, mangled or expired."""
        data, _, mac = token.partition(".")
        try:
            expected = hmac.new(
                self._cached(f"sign:{purpose}"), data.encode(), hashlib.sha256
            ).digest()
            if not hmac.compare_digest(expected, _unb64(mac)):
                return None
            body = json.loads(_unb64(data))
        except (ValueError, TypeError):
            return None
        if not isinstance(body, dict) or not isinstance(body.get("exp"), int):
            return None
        if body["exp"] <= now.timestamp():
            return None
        return body

    def mac(self, purpose: str, value: str) -> str:
        """A keyed digest of ``value`` (CSRF tokens bound to a session)."""
        return _b64(
            hmac.new(self._cached(f"mac:{purpose}"), value.encode(), hashlib.sha256).digest()
        )

    def encrypt(self, purpose: str, plaintext: bytes, associated: bytes = b"") -> bytes:
        """AES-256-GCM under a purpose key: nonce || ciphertext+tag."""
        nonce = secrets.token_bytes(12)
        return nonce + AESGCM(self._cached(f"enc:{purpose}")).encrypt(nonce, plaintext, associated)

    def decrypt(self, purpose: str, blob: bytes, associated: bytes = b"") -> bytes:
        return AESGCM(self._cached(f"enc:{purpose}")).decrypt(blob[:12], blob[12:], associated)


class PasswordHashing:
    """argon2id password hashes."""

    def __init__(self, time_cost: int, memory_kib: int) -> None:
        self._hasher = PasswordHasher(
            time_cost=time_cost, memory_cost=memory_kib, parallelism=1, type=Type.ID
        )
        # Verifying against this keeps a wrong email as slow as a wrong password.
        self._dummy = self._hasher.hash(secrets.token_urlsafe(16))

    def hash(self, password: str) -> str:
        return str(self._hasher.hash(password))

    def verify(self, stored: str | None, password: str) -> bool:
        try:
            return bool(self._hasher.verify(stored or self._dummy, password)) and stored is not None
        except (VerificationError, InvalidHashError):
            return False
