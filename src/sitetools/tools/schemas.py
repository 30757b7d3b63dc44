"""Wire models of the catalog (spec: "Tool", "Tools and integrations")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

__all__ = [
    "IntegrationPath",
    "ListToolsQuery",
    "LoginOut",
    "Notice",
    "ReferenceOut",
    "SiteOut",
    "ToolOut",
    "ToolPage",
    "ToolPath",
]


class SiteOut(BaseModel):
    url: str
    name: str


class LoginOut(BaseModel):
    fields: list[str]
    two_factor_methods: list[str]


class ToolOut(BaseModel):
    id: str
    name: str
    description: str
    integration_id: str
    site: SiteOut
    effect: Literal["read", "write"]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    login: LoginOut | None
    mcp_name: str


class Notice(BaseModel):
    code: Literal["sign_in_to_see_all_tools"]
    message: str
    docs_url: str


class ToolPage(BaseModel):
    data: list[ToolOut]
    next_cursor: str | None
    possible_matches: list[ToolOut] | None = Field(
        default=None, description="First page only, when both query and site_url are given."
    )
    notice: Notice | None = Field(default=None, description="Only without credentials.")


class ListToolsQuery(BaseModel):
    cursor: str | None = Field(default=None, description="The `next_cursor` of the previous page.")
    limit: int = Field(default=20, ge=1, le=100)
    query: str | None = Field(
        default=None, max_length=500, description="Words of names and descriptions."
    )
    site_url: str | None = Field(
        default=None, max_length=2000, description="A domain or any pasted URL."
    )
    integration_id: str | None = None

    @field_validator("cursor", "query", "site_url", "integration_id")
    @classmethod
    def _blank_is_absent(cls, value: str | None) -> str | None:
        return value if value and value.strip() else None


class ToolPath(BaseModel):
    id: str


class IntegrationPath(BaseModel):
    id: str


class ReferenceOut(BaseModel):
    format: Literal["markdown"]
    content: str
