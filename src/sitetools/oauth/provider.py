"""The ``mcp`` SDK's authorization-server protocol over our OAuth service.

The SDK's handlers parse and check the OAuth requests (client authentication, redirect URIs,
PKCE S256, grant types, RFC 6749 error shapes); every decision and every row is ours. Each
method is one unit of work.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sitetools.auth.resources import account_mcp_url
from sitetools.core.context import AppServices, Ctx, unit
from sitetools.core.errors import ServiceError
from sitetools.core.ids import new_id
from sitetools.oauth import service
from sitetools.oauth.service import ACCESS_PREFIX, REFRESH_PREFIX

__all__ = ["CONSENT_PATH", "Provider"]

CONSENT_PATH = "/dashboard/oauth/consent"


class Code(AuthorizationCode):
    digest: str


class Refresh(RefreshToken):
    digest: str


class Access(AccessToken):
    digest: str


def _epoch(ctx: Ctx, moment: datetime) -> float:
    """Our clock's moment on the wall clock the SDK compares with (tests move ours)."""
    return time.time() + (moment - ctx.now()).total_seconds()


def _issued(tokens: service.IssuedTokens) -> OAuthToken:
    return OAuthToken(
        access_token=tokens.access_token,
        token_type="Bearer",
        expires_in=tokens.expires_in,
        scope=" ".join(tokens.scopes),
        refresh_token=tokens.refresh_token,
    )


class Provider:
    """``OAuthAuthorizationServerProvider`` for the SDK's routes."""

    def __init__(self, app: AppServices, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.app = app
        self.sessions = sessions

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        async with unit(self.app, self.sessions) as ctx:
            row = await service.client(ctx, client_id)
            if row is None:
                return None
            data = dict(row.registration, client_id=row.id)
            secret = service.decrypt_client_secret(ctx, row)
            if secret is not None:
                data["client_secret"] = secret
            return OAuthClientInformationFull.model_validate(data)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        # Our own ID shape for the connected app (the SDK answers the object we change here).
        client_info.client_id = new_id("app")
        if not client_info.client_name:
            client_info.client_name = "Unnamed app"
        async with unit(self.app, self.sessions) as ctx:
            await service.add_client(
                ctx,
                client_info.model_dump(mode="json", exclude_none=True),
                client_info.client_secret,
            )

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        base = self.app.settings.base_url
        # RFC 8707: a client that names no resource gets the account endpoint.
        resource = params.resource or account_mcp_url(base)
        async with unit(self.app, self.sessions) as ctx:
            if not await service.known_resource(ctx, resource):
                raise AuthorizeError(
                    "invalid_request",
                    "resource must be this server's MCP endpoint URL, exactly "
                    "(no trailing slash, no query)",
                )
            assert client.client_id is not None
            sealed = service.seal_consent(
                ctx,
                service.ConsentRequest(
                    client_id=client.client_id,
                    redirect_uri=str(params.redirect_uri),
                    redirect_uri_explicit=params.redirect_uri_provided_explicitly,
                    code_challenge=params.code_challenge,
                    state=params.state,
                    scopes=params.scopes,
                    resource=resource,
                ),
            )
        return f"{base}{CONSENT_PATH}?request={sealed}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> Code | None:
        async with unit(self.app, self.sessions) as ctx:
            assert client.client_id is not None
            loaded = await service.load_code(ctx, client.client_id, authorization_code)
            if loaded is None:
                return None
            return Code(
                code=authorization_code,
                digest=loaded.code.digest,
                scopes=list(loaded.grant.permissions),
                expires_at=_epoch(ctx, loaded.code.expires_at),
                client_id=loaded.grant.client_id,
                code_challenge=loaded.code.code_challenge,
                redirect_uri=loaded.code.redirect_uri,
                redirect_uri_provided_explicitly=loaded.code.redirect_uri_explicit,
                resource=loaded.grant.resource,
                subject=loaded.grant.user_id,
            )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: Code
    ) -> OAuthToken:
        issued = None
        try:
            async with unit(self.app, self.sessions) as ctx:
                assert client.client_id is not None
                loaded = await service.load_code(ctx, client.client_id, authorization_code.code)
                if loaded is not None:
                    issued = _issued(await service.exchange_code(ctx, loaded))
        except ServiceError:
            issued = None
        if issued is None:
            # Outside the unit: a code presented twice has revoked its grant, kept committed.
            raise TokenError("invalid_grant", "authorization code is not valid")
        return issued

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> Refresh | None:
        if not refresh_token.startswith(REFRESH_PREFIX):
            return None
        async with unit(self.app, self.sessions) as ctx:
            loaded = await service.load_token(ctx, refresh_token, "refresh")
            if loaded is None or loaded.grant.client_id != client.client_id:
                return None
            return Refresh(
                token=refresh_token,
                digest=loaded.token.digest,
                client_id=loaded.grant.client_id,
                scopes=list(loaded.grant.permissions),
                expires_at=int(_epoch(ctx, loaded.token.expires_at)),
                resource=loaded.grant.resource,
                subject=loaded.grant.user_id,
            )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: Refresh, scopes: list[str]
    ) -> OAuthToken:
        issued = None
        try:
            async with unit(self.app, self.sessions) as ctx:
                loaded = await service.load_token(ctx, refresh_token.token, "refresh")
                if loaded is not None:
                    issued = _issued(await service.refresh(ctx, loaded, scopes))
        except ServiceError:
            issued = None
        if issued is None:
            raise TokenError("invalid_grant", "refresh token is not valid")
        return issued

    async def load_access_token(self, token: str) -> Access | None:
        if not token.startswith(ACCESS_PREFIX):
            return None
        async with unit(self.app, self.sessions) as ctx:
            loaded = await service.load_token(ctx, token, "access")
            if loaded is None:
                return None
            return Access(
                token=token,
                digest=loaded.token.digest,
                client_id=loaded.grant.client_id,
                scopes=list(loaded.grant.permissions),
                expires_at=int(_epoch(ctx, loaded.token.expires_at)),
                resource=loaded.grant.resource,
                subject=loaded.grant.user_id,
            )

    async def revoke_token(self, token: Any) -> None:
        kind = "refresh" if isinstance(token, Refresh) else "access"
        async with unit(self.app, self.sessions) as ctx:
            loaded = await service.load_token(ctx, token.token, kind)
            if loaded is not None:
                await service.revoke_token(ctx, loaded)
