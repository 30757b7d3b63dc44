"""The rules of the authorization server: clients, consent, codes, token families, revocation.

decisions: "Limits the specification leaves open" - access tokens live one hour, refresh tokens
30 days and rotate on every use; the advertised scopes are the permission values. A token's
resource (audience) is one exact MCP endpoint URL, fixed when the person consents.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update

from sitetools.auth.caller import Caller
from sitetools.auth.permissions import INTEGRATION_KEY_PERMISSIONS, Permission
from sitetools.auth.resources import account_mcp_url, integration_of_resource
from sitetools.core.context import Ctx
from sitetools.core.crypto import new_secret
from sitetools.core.errors import ServiceError
from sitetools.core.ids import new_id
from sitetools.oauth.models import OAuthClient, OAuthCode, OAuthGrant, OAuthToken
from sitetools.oauth.schemas import ConnectedApp
from sitetools.tools.models import Integration
from sitetools.tools.service import visible_integration

__all__ = [
    "ACCESS_PREFIX",
    "REFRESH_PREFIX",
    "SCOPES",
    "ConsentRequest",
    "IssuedTokens",
    "connected_apps",
    "decide",
    "disconnect",
    "exchange_code",
    "granted_permissions",
    "read_consent",
    "refresh",
    "resource_permissions",
    "revoke_token",
    "seal_consent",
]

ACCESS_PREFIX = "soa_"
REFRESH_PREFIX = "sor_"
CODE_PREFIX = "soc_"
_CONSENT = "oauth-consent"
_CLIENT_SECRET = "oauth-client-secret"
# decisions: "Advertised OAuth scopes are the permission values."
SCOPES = tuple(p.value for p in Permission)


@dataclass(frozen=True, slots=True)
class ConsentRequest:
    """An authorization request the server accepted, waiting for the person's decision."""

    client_id: str
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    state: str | None
    scopes: list[str] | None
    resource: str

    def payload(self) -> dict[str, Any]:
        return {
            "c": self.client_id,
            "r": self.redirect_uri,
            "x": self.redirect_uri_explicit,
            "p": self.code_challenge,
            "s": self.state,
            "o": self.scopes,
            "a": self.resource,
        }


@dataclass(frozen=True, slots=True)
class IssuedTokens:
    access_token: str
    refresh_token: str
    expires_in: int
    scopes: list[str]
    resource: str


def seal_consent(ctx: Ctx, request: ConsentRequest) -> str:
    """The request as a signed token the consent page carries (nothing stored before consent)."""
    expires = ctx.now() + timedelta(seconds=ctx.settings.oauth_code_seconds)
    return ctx.keyring.sign(_CONSENT, request.payload(), expires)


def read_consent(ctx: Ctx, token: str) -> ConsentRequest | None:
    data = ctx.keyring.verify(_CONSENT, token, ctx.now())
    if data is None:
        return None
    return ConsentRequest(
        client_id=data["c"],
        redirect_uri=data["r"],
        redirect_uri_explicit=bool(data["x"]),
        code_challenge=data["p"],
        state=data["s"],
        scopes=data["o"],
        resource=data["a"],
    )


def encrypt_client_secret(ctx: Ctx, client_id: str, secret: str) -> bytes:
    return ctx.keyring.encrypt(_CLIENT_SECRET, secret.encode(), client_id.encode())


def decrypt_client_secret(ctx: Ctx, client: OAuthClient) -> str | None:
    if client.secret_enc is None:
        return None
    return ctx.keyring.decrypt(_CLIENT_SECRET, client.secret_enc, client.id.encode()).decode()


async def known_resource(ctx: Ctx, resource: str) -> bool:
    """Only our own MCP endpoints, spelled exactly (spec: "Authentication" 3): the account
    endpoint or an active integration's."""
    base = ctx.settings.base_url
    if resource == account_mcp_url(base):
        return True
    integration_id = integration_of_resource(base, resource)
    if integration_id is None:
        return False
    status = await ctx.db.scalar(select(Integration.status).where(Integration.id == integration_id))
    return status == "active"


def resource_permissions(resource: str, base_url: str) -> frozenset[Permission]:
    """What a token for ``resource`` can ever carry: an integration endpoint's token no more than
    an integration key (spec: "Authentication" 6)."""
    if integration_of_resource(base_url, resource) is not None:
        return INTEGRATION_KEY_PERMISSIONS
    return frozenset(Permission)


def granted_permissions(
    caller: Caller, request: ConsentRequest, base_url: str
) -> frozenset[Permission]:
    """What a consent gives: the scopes asked (all the member holds when none) ∩ the member's
    permissions ∩ what a token for the resource can carry. The consent page shows this."""
    wanted = (
        frozenset(Permission(s) for s in request.scopes if s in SCOPES)
        if request.scopes
        else caller.permissions
    )
    return wanted & caller.permissions & resource_permissions(request.resource, base_url)


async def decide(
    ctx: Ctx, caller: Caller, request: ConsentRequest, *, approved: bool
) -> str | None:
    """The person approved (a new grant and a one-time code, returned) or denied (None)."""
    if not approved:
        return None
    integration_id = integration_of_resource(ctx.settings.base_url, request.resource)
    if integration_id is not None:
        # The person must be able to reach the integration the token will be bound to.
        await visible_integration(ctx, caller, integration_id)
    granted = granted_permissions(caller, request, ctx.settings.base_url)
    if not granted:
        raise ServiceError("permission_not_held")
    now = ctx.now()
    grant = OAuthGrant(
        id=new_id("grant"),
        client_id=request.client_id,
        account_id=caller.account_id,
        membership_id=caller.membership_id,
        user_id=caller.user_id,
        resource=request.resource,
        permissions=sorted(p.value for p in granted),
        created_at=now,
    )
    ctx.db.add(grant)
    await ctx.db.flush()  # the code's row refers to it
    code = new_secret(CODE_PREFIX)
    ctx.db.add(
        OAuthCode(
            digest=ctx.keyring.token_digest(code),
            grant_id=grant.id,
            code_challenge=request.code_challenge,
            redirect_uri=request.redirect_uri,
            redirect_uri_explicit=request.redirect_uri_explicit,
            expires_at=now + timedelta(seconds=ctx.settings.oauth_code_seconds),
        )
    )
    await ctx.db.flush()
    return code


@dataclass(frozen=True, slots=True)
class LoadedCode:
    grant: OAuthGrant
    code: OAuthCode


async def load_code(ctx: Ctx, client_id: str, code: str) -> LoadedCode | None:
    """An unused, unexpired code of ``client_id``; a code presented twice revokes its grant
    (RFC 6749 4.1.2: the tokens it gave may have been stolen)."""
    row = (
        await ctx.db.execute(
            select(OAuthCode, OAuthGrant)
            .join(OAuthGrant, OAuthGrant.id == OAuthCode.grant_id)
            .where(OAuthCode.digest == ctx.keyring.token_digest(code))
        )
    ).first()
    if row is None:
        return None
    found, grant = row
    if grant.client_id != client_id or grant.revoked_at is not None:
        return None
    if found.used_at is not None:
        await _revoke_grant(ctx, grant)
        return None
    if found.expires_at <= ctx.now():
        return None
    return LoadedCode(grant, found)


async def exchange_code(ctx: Ctx, loaded: LoadedCode) -> IssuedTokens:
    now = ctx.now()
    taken = await ctx.db.execute(
        update(OAuthCode)
        .where(OAuthCode.digest == loaded.code.digest, OAuthCode.used_at.is_(None))
        .values(used_at=now)
    )
    if taken.rowcount != 1:  # type: ignore[attr-defined]
        raise ServiceError("unauthorized", reason="code_used")
    return await _issue(ctx, loaded.grant)


async def _issue(ctx: Ctx, grant: OAuthGrant) -> IssuedTokens:
    now = ctx.now()
    settings = ctx.settings
    access = new_secret(ACCESS_PREFIX)
    refresh_token = new_secret(REFRESH_PREFIX)
    for kind, secret, seconds in (
        ("access", access, settings.oauth_access_token_seconds),
        ("refresh", refresh_token, settings.oauth_refresh_token_seconds),
    ):
        ctx.db.add(
            OAuthToken(
                digest=ctx.keyring.token_digest(secret),
                kind=kind,
                grant_id=grant.id,
                created_at=now,
                expires_at=now + timedelta(seconds=seconds),
            )
        )
    await ctx.db.flush()
    return IssuedTokens(
        access_token=access,
        refresh_token=refresh_token,
        expires_in=settings.oauth_access_token_seconds,
        scopes=list(grant.permissions),
        resource=grant.resource,
    )


@dataclass(frozen=True, slots=True)
class LoadedToken:
    grant: OAuthGrant
    token: OAuthToken


async def load_token(ctx: Ctx, secret: str, kind: str) -> LoadedToken | None:
    """A live token of ``kind``; a rotated refresh token presented again revokes its family."""
    row = (
        await ctx.db.execute(
            select(OAuthToken, OAuthGrant)
            .join(OAuthGrant, OAuthGrant.id == OAuthToken.grant_id)
            .where(OAuthToken.digest == ctx.keyring.token_digest(secret))
        )
    ).first()
    if row is None:
        return None
    token, grant = row
    if token.kind != kind or grant.revoked_at is not None or token.revoked_at is not None:
        return None
    if token.used_at is not None:
        # Reuse of a rotated refresh token: someone else holds the family (RFC 9700 4.14.2).
        await _revoke_grant(ctx, grant)
        return None
    if token.expires_at <= ctx.now():
        return None
    return LoadedToken(grant, token)


async def refresh(ctx: Ctx, loaded: LoadedToken, scopes: list[str]) -> IssuedTokens:
    """Rotate: the old refresh token is spent, a new pair is issued (narrower scopes allowed)."""
    now = ctx.now()
    spent = await ctx.db.execute(
        update(OAuthToken)
        .where(OAuthToken.digest == loaded.token.digest, OAuthToken.used_at.is_(None))
        .values(used_at=now)
    )
    if spent.rowcount != 1:  # type: ignore[attr-defined]
        await _revoke_grant(ctx, loaded.grant)
        reused = ServiceError("unauthorized", reason="refresh_reused")
        reused.commit_changes = True  # the family stays revoked
        raise reused
    grant = loaded.grant
    narrower = sorted(set(scopes) & set(grant.permissions))
    if narrower and narrower != sorted(grant.permissions):
        grant.permissions = narrower
    return await _issue(ctx, grant)


async def _revoke_grant(ctx: Ctx, grant: OAuthGrant) -> None:
    now = ctx.now()
    grant.revoked_at = now
    await ctx.db.execute(
        update(OAuthToken)
        .where(OAuthToken.grant_id == grant.id, OAuthToken.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    await ctx.db.flush()


async def revoke_token(ctx: Ctx, loaded: LoadedToken) -> None:
    """RFC 7009: revoking a refresh token ends its grant; an access token only itself."""
    if loaded.token.kind == "refresh":
        await _revoke_grant(ctx, loaded.grant)
        return
    loaded.token.revoked_at = ctx.now()
    await ctx.db.flush()


async def client(ctx: Ctx, client_id: str) -> OAuthClient | None:
    return await ctx.db.get(OAuthClient, client_id)


async def add_client(ctx: Ctx, registration: dict[str, Any], secret: str | None) -> OAuthClient:
    now = ctx.now()
    client_id = registration["client_id"]
    row = OAuthClient(
        id=client_id,
        name=(registration.get("client_name") or "Unnamed app")[:200],
        client_uri=registration.get("client_uri"),
        registration={k: v for k, v in registration.items() if k != "client_secret"},
        secret_enc=encrypt_client_secret(ctx, client_id, secret) if secret else None,
        created_at=now,
    )
    ctx.db.add(row)
    await ctx.db.flush()
    return row


async def connected_apps(ctx: Ctx, caller: Caller) -> list[ConnectedApp]:
    """decisions: "MCP" - the clients the member approved that still hold a live grant."""
    rows = (
        await ctx.db.execute(
            select(OAuthGrant, OAuthClient)
            .join(OAuthClient, OAuthClient.id == OAuthGrant.client_id)
            .where(
                OAuthGrant.membership_id == caller.membership_id,
                OAuthGrant.revoked_at.is_(None),
            )
            .order_by(OAuthGrant.created_at.desc(), OAuthGrant.id)
        )
    ).all()
    apps: dict[str, ConnectedApp] = {}
    for grant, app in rows:
        entry = apps.get(app.id)
        if entry is None:
            entry = apps[app.id] = ConnectedApp(
                id=app.id,
                name=app.name,
                client_uri=app.client_uri,
                resources=[],
                permissions=[],
                created_at=grant.created_at,
                last_used_at=grant.last_used_at,
            )
        if grant.resource not in entry.resources:
            entry.resources.append(grant.resource)
        entry.permissions = sorted(set(entry.permissions) | set(grant.permissions))
        entry.created_at = min(entry.created_at, grant.created_at)
        if grant.last_used_at is not None and (
            entry.last_used_at is None or grant.last_used_at > entry.last_used_at
        ):
            entry.last_used_at = grant.last_used_at
    return list(apps.values())


async def disconnect(ctx: Ctx, caller: Caller, app_id: str) -> None:
    """Revoke every grant (and so every token) of ``app_id`` for the member."""
    grants = list(
        await ctx.db.scalars(
            select(OAuthGrant).where(
                OAuthGrant.membership_id == caller.membership_id,
                OAuthGrant.client_id == app_id,
                OAuthGrant.revoked_at.is_(None),
            )
        )
    )
    if not grants:
        raise ServiceError("not_found", resource="connected_app")
    for grant in grants:
        await _revoke_grant(ctx, grant)
