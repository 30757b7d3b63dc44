"""The pipe protocol between the worker and a tool process: one JSON object per line.

Tool → worker: ``ask``, ``progress``, ``log``, ``result``, ``error``.
Worker → tool: ``start`` (first), ``answers``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

__all__ = ["MAX_MESSAGE", "ProtocolError", "encode", "read_message"]

MAX_MESSAGE = 8 * 1024 * 1024


class ProtocolError(Exception):
    """The other side sent something that is not a protocol message."""


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


async def read_message(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, or None at the end of the stream."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as end:
        if end.partial.strip():
            raise ProtocolError("truncated message") from None
        return None
    except asyncio.LimitOverrunError:
        raise ProtocolError("message too large") from None
    try:
        message = json.loads(line)
    except json.JSONDecodeError:
        raise ProtocolError("not JSON") from None
    if not isinstance(message, dict) or not isinstance(message.get("op"), str):
        raise ProtocolError("not a message")
    return message
