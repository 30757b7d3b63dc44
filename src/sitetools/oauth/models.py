"""OAuth clients (connected apps), grants, authorization codes and tokens.

A grant is one consent: a member let a client reach one resource with some permissions. Every
code and token belongs to a grant, so revoking a connected app, or a refresh token used twice,
revokes the whole family at once. Codes and tokens are stored as keyed digests only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from sitetools.core.db import Base, JSONList, UTCDateTime

__all__ = ["OAuthClient", "OAuthCode", "OAuthGrant", "OAuthToken"]


class OAuthClient(Base):
    """A client registered dynamically (RFC 7591); its ID is the connected app's ``app_…``."""

    __tablename__ = "oauth_clients"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    client_uri: Mapped[str | None] = mapped_column(String(2000))
    # The registration as answered (RFC 7591 client information), secret excluded.
    registration: Mapped[dict[str, Any]] = mapped_column(JSON)
    # A confidential client's secret, encrypted (the SDK's client check compares it).
    secret_enc: Mapped[bytes | None] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class OAuthGrant(Base):
    __tablename__ = "oauth_grants"
    __table_args__ = (Index("ix_oauth_grants_membership_client", "membership_id", "client_id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("oauth_clients.id", ondelete="CASCADE"))
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    membership_id: Mapped[str] = mapped_column(String(40))
    user_id: Mapped[str] = mapped_column(String(40))
    resource: Mapped[str] = mapped_column(String(2000))
    permissions: Mapped[list[str]] = mapped_column(JSONList())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class OAuthCode(Base):
    __tablename__ = "oauth_codes"

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    grant_id: Mapped[str] = mapped_column(ForeignKey("oauth_grants.id", ondelete="CASCADE"))
    code_challenge: Mapped[str] = mapped_column(String(200))
    redirect_uri: Mapped[str] = mapped_column(Text)
    redirect_uri_explicit: Mapped[bool] = mapped_column()
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class OAuthToken(Base):
    __tablename__ = "oauth_tokens"

    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(8))  # access | refresh
    grant_id: Mapped[str] = mapped_column(
        ForeignKey("oauth_grants.id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # A refresh token is used once (rotation); using it again revokes the grant.
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
