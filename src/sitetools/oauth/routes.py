"""The authorization server's HTTP routes (RFC 8414, 7591, 7009, 6749 + PKCE, 8707) and the
protected-resource metadata of every MCP endpoint (RFC 9728)."""

from __future__ import annotations

from typing import Any

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthMetadata
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sitetools.auth.resources import account_mcp_url, integration_mcp_url
from sitetools.core.context import AppServices, unit
from sitetools.core.errors import ServiceError
from sitetools.oauth.provider import Provider
from sitetools.oauth.service import SCOPES, known_resource

__all__ = ["oauth_routes"]

AUTHORIZE_PATH = "/oauth/authorize"
TOKEN_PATH = "/oauth/token"
REGISTER_PATH = "/oauth/register"
REVOKE_PATH = "/oauth/revoke"
_NO_STORE = {"Cache-Control": "no-store"}


def _metadata(base_url: str) -> OAuthMetadata:
    return OAuthMetadata.model_validate(
        {
            "issuer": base_url,
            "authorization_endpoint": f"{base_url}{AUTHORIZE_PATH}",
            "token_endpoint": f"{base_url}{TOKEN_PATH}",
            "registration_endpoint": f"{base_url}{REGISTER_PATH}",
            "revocation_endpoint": f"{base_url}{REVOKE_PATH}",
            "scopes_supported": list(SCOPES),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_post",
                "client_secret_basic",
            ],
            "revocation_endpoint_auth_methods_supported": [
                "none",
                "client_secret_post",
                "client_secret_basic",
            ],
            "code_challenge_methods_supported": ["S256"],
            "service_documentation": f"{base_url}/v1/openapi.json",
        }
    )


def _resource_document(base_url: str, resource: str) -> dict[str, Any]:
    return {
        "resource": resource,
        "authorization_servers": [base_url],
        "bearer_methods_supported": ["header"],
        "scopes_supported": list(SCOPES),
        "resource_name": "sitetools MCP",
        "resource_documentation": f"{base_url}/v1/openapi.json",
    }


def oauth_routes(services: AppServices, sessions: async_sessionmaker[AsyncSession]) -> list[Route]:
    """The routes, SDK handlers over our provider (issuer = the base URL, no path)."""
    base_url = services.settings.base_url
    provider = Provider(services, sessions)
    authenticator = ClientAuthenticator(provider)
    registration = RegistrationHandler(
        provider,
        ClientRegistrationOptions(
            enabled=True, valid_scopes=list(SCOPES), default_scopes=list(SCOPES)
        ),
    )
    metadata = MetadataHandler(_metadata(base_url))

    async def revoke(request: Request) -> Response:
        """RFC 7009 (the SDK's handler insists on a ``client_secret`` public clients lack)."""
        try:
            client = await authenticator.authenticate_request(request)
        except AuthenticationError as error:
            return JSONResponse(
                {"error": "unauthorized_client", "error_description": error.message}, 401
            )
        form = await request.form()
        token = form.get("token")
        if not isinstance(token, str) or not token:
            return JSONResponse(
                {"error": "invalid_request", "error_description": "token is required"}, 400
            )
        found = await provider.load_access_token(token) or await provider.load_refresh_token(
            client, token
        )
        if found is not None and found.client_id == client.client_id:
            await provider.revoke_token(found)
        # Unknown or foreign tokens answer 200 too (RFC 7009 2.2).
        return Response(status_code=200, headers=_NO_STORE)

    async def account_resource(_request: Request) -> Response:
        return JSONResponse(_resource_document(base_url, account_mcp_url(base_url)), 200)

    async def integration_resource(request: Request) -> Response:
        resource = integration_mcp_url(base_url, request.path_params["integration_id"])
        async with unit(services, sessions) as ctx:
            known = await known_resource(ctx, resource)
        if not known:
            raise ServiceError("not_found", resource="integration")
        return JSONResponse(_resource_document(base_url, resource), 200)

    return [
        Route("/.well-known/oauth-authorization-server", metadata.handle, methods=["GET"]),
        # Some clients look for the server's metadata under the resource's path too.
        Route("/.well-known/oauth-authorization-server/mcp", metadata.handle, methods=["GET"]),
        Route("/.well-known/oauth-protected-resource/mcp", account_resource, methods=["GET"]),
        Route(
            "/.well-known/oauth-protected-resource/mcp/integrations/{integration_id}",
            integration_resource,
            methods=["GET"],
        ),
        Route(
            AUTHORIZE_PATH,
            AuthorizationHandler(provider).handle,
            methods=["GET", "POST"],
        ),
        Route(
            TOKEN_PATH,
            TokenHandler(provider, authenticator).handle,
            methods=["POST"],
        ),
        Route(REGISTER_PATH, registration.handle, methods=["POST"]),
        Route(REVOKE_PATH, revoke, methods=["POST"]),
    ]
