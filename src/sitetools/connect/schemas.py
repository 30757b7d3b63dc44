"""Device sign-in payloads (decisions: "MCP" - device sign-in)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sitetools.keys.schemas import ApiKeyWithSecret

__all__ = ["SignInIn", "SignInOut", "SignInPath", "SignInPoll"]


class SignInIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    client_name: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="Shown to the person who approves, and the new key's name.",
    )


class SignInOut(BaseModel):
    id: str = Field(description="Poll with this; keep it private (it fetches the key).")
    user_code: str = Field(description="The person checks it matches the Dashboard's.")
    verification_url: str
    expires_at: datetime
    interval: int = Field(description="Seconds to wait between polls.")


class SignInPath(BaseModel):
    id: str


class SignInPoll(BaseModel):
    status: Literal["pending", "approved"]
    api_key: ApiKeyWithSecret | None = Field(
        default=None, description="Once, on the first poll after approval."
    )
