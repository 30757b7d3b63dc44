"""Wire models of quota (spec: "Quota")."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel

__all__ = ["QuotaCounterOut", "QuotaOut"]


class QuotaCounterOut(BaseModel):
    status: Literal["ready", "exhausted", "unlimited"]
    period: Literal["day", "month"]
    period_start: datetime
    resets_at: datetime
    limit: int | None
    used: int
    reserved: int
    remaining: int | None


class QuotaOut(BaseModel):
    as_of: datetime
    tool_calls: QuotaCounterOut
    integrations_created: QuotaCounterOut
