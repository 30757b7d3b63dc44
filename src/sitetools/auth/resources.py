"""The protected resources (MCP endpoints) and where their metadata lives (RFC 9728).

spec: "Authentication" 2-3 - a token's audience is the exact endpoint URL, no trailing slash and
no added query; the metadata of a resource is at ``/.well-known/oauth-protected-resource`` plus
the resource's path.
"""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = [
    "MCP_PATH",
    "account_mcp_url",
    "integration_mcp_url",
    "integration_of_resource",
    "resource_metadata_url",
]

MCP_PATH = "/mcp"
_INTEGRATION_PREFIX = "/mcp/integrations/"


def account_mcp_url(base_url: str) -> str:
    return f"{base_url}{MCP_PATH}"


def integration_mcp_url(base_url: str, integration_id: str) -> str:
    return f"{base_url}{_INTEGRATION_PREFIX}{integration_id}"


def resource_metadata_url(resource: str) -> str:
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"


def integration_of_resource(base_url: str, resource: str) -> str | None:
    """The integration ID of an integration endpoint URL; None for any other URL."""
    prefix = f"{base_url}{_INTEGRATION_PREFIX}"
    if not resource.startswith(prefix):
        return None
    rest = resource[len(prefix) :]
    if not rest or "/" in rest or "?" in rest or "#" in rest:
        return None
    return rest
