"""Prefixed opaque identifiers: prefix + 32 lowercase hex digits (decisions: "IDs")."""

from __future__ import annotations

import re
import uuid

__all__ = ["is_id", "new_id"]


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def is_id(value: str, prefix: str) -> bool:
    return re.fullmatch(rf"{prefix}_[0-9a-f]{{32}}", value) is not None
