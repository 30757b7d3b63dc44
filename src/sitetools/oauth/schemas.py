"""Connected apps (decisions: "MCP")."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

__all__ = ["ConnectedApp", "ConnectedAppPage", "ConnectedAppPath"]


class ConnectedApp(BaseModel):
    id: str = Field(description="The OAuth client's ID (`app_…`).")
    name: str
    client_uri: str | None
    resources: list[str] = Field(description="The MCP endpoint URLs its tokens are bound to.")
    permissions: list[str]
    created_at: datetime
    last_used_at: datetime | None


class ConnectedAppPage(BaseModel):
    data: list[ConnectedApp]


class ConnectedAppPath(BaseModel):
    id: str
