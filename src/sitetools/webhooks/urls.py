"""spec: "Webhooks" rule 1 - HTTPS, no username, password or fragment, a public address."""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

from sitetools.core.addresses import AddressRefusedError, AllowList, resolve_admitted
from sitetools.core.errors import ServiceError

__all__ = ["check_webhook_url"]


def _refuse(message: str) -> ServiceError:
    return ServiceError("invalid_request", issues=[{"path": "/body/url", "message": message}])


def _parse(url: str) -> SplitResult:
    if any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in url):
        raise _refuse("The URL has spaces or control characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise _refuse("Not a URL.") from None
    if parts.scheme.lower() != "https":
        raise _refuse("Use an https:// URL.")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise _refuse("The URL must not carry a username or password.")
    if parts.fragment or url.endswith("#"):
        raise _refuse("The URL must not have a fragment.")
    if not parts.hostname:
        raise _refuse("The URL has no host.")
    del port
    return parts


async def check_webhook_url(url: str, allow: AllowList) -> str:
    """The URL if it passes the rules; every address its host resolves to must be public
    (or named in ``SITETOOLS_WEBHOOK_ALLOW``). 400 ``invalid_request`` otherwise."""
    parts = _parse(url)
    assert parts.hostname is not None
    try:
        await resolve_admitted(
            parts.hostname, parts.port or 443, allow, every=True, lookup_seconds=5
        )
    except AddressRefusedError as refused:
        raise _refuse(f"The URL must resolve to a public address: {refused.reason}.") from None
    return url
