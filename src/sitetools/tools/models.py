"""Integrations (one website each), their tools, and immutable tool versions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from sitetools.core.db import Base, JSONList, UTCDateTime

__all__ = ["Integration", "Tool", "ToolVersion"]


class Integration(Base):
    __tablename__ = "integrations"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # None for a public integration owned by the service; else the account it is private to.
    account_id: Mapped[str | None] = mapped_column(
        ForeignKey("accounts.id", ondelete="CASCADE"), index=True
    )
    visibility: Mapped[str] = mapped_column(String(16))  # public | private
    name: Mapped[str] = mapped_column(String(200))
    site_url: Mapped[str] = mapped_column(String(2000))
    domain: Mapped[str] = mapped_column(String(255), index=True)
    status: Mapped[str] = mapped_column(String(16), default="active")  # active | disabled
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # The catalog's additions (migration 0002).
    key: Mapped[str | None] = mapped_column(String(100))
    description: Mapped[str] = mapped_column(Text, default="")
    site_name: Mapped[str] = mapped_column(String(200), default="")
    mcp_hosted: Mapped[bool] = mapped_column(Boolean, default=True)
    updated_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class Tool(Base):
    __tablename__ = "tools"
    __table_args__ = (
        UniqueConstraint("integration_id", "mcp_name"),
        Index("ix_tools_domain_enabled", "domain", "enabled"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    integration_id: Mapped[str] = mapped_column(
        ForeignKey("integrations.id", ondelete="CASCADE"), index=True
    )
    # Copied from the integration so the catalog filters without a join.
    account_id: Mapped[str | None] = mapped_column(String(40), index=True)
    visibility: Mapped[str] = mapped_column(String(16))
    domain: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text)
    mcp_name: Mapped[str] = mapped_column(String(64))
    effect: Mapped[str] = mapped_column(String(8))  # read | write
    login_fields: Mapped[list[str] | None] = mapped_column(JSONList())
    two_factor_methods: Mapped[list[str] | None] = mapped_column(JSONList())
    input_schema: Mapped[dict[str, Any]] = mapped_column(JSON)
    output_schema: Mapped[dict[str, Any]] = mapped_column(JSON)
    # Lowercased, stemmed words, space-delimited: of the name, and of the MCP name and
    # description. Search ranks name words above the others.
    search_name: Mapped[str] = mapped_column(Text, default="")
    search_text: Mapped[str] = mapped_column(Text)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    version_id: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ToolVersion(Base):
    """An immutable file tree of a tool; the tool points at its published version."""

    __tablename__ = "tool_versions"
    __table_args__ = (UniqueConstraint("tool_id", "number"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tool_id: Mapped[str] = mapped_column(ForeignKey("tools.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column()
    digest: Mapped[str] = mapped_column(String(64))
    files: Mapped[dict[str, str]] = mapped_column(JSON)  # path → text
    manifest: Mapped[dict[str, Any]] = mapped_column(JSON)  # tool.toml as loaded
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
