"""From whatever a person pastes (a bare domain, any URL) to the registrable domain of a site.

Uses the Public Suffix List snapshot bundled with ``tldextract``: no network at run time.
A name under a suffix the list does not know (``shop.example``, ``localhost``) takes its last
label as the suffix; an IP address is its own site.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

import tldextract

from sitetools.core.errors import ServiceError

__all__ = ["Site", "parse_site"]

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_EXTRACT = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


@dataclass(frozen=True, slots=True)
class Site:
    host: str
    domain: str  # the registrable domain, or the IP address


def _invalid(where: str) -> ServiceError:
    return ServiceError(
        "invalid_request",
        issues=[{"path": where, "message": "Not a website address or domain name."}],
    )


@lru_cache(maxsize=4096)
def _parse(value: str) -> Site | None:
    text = value.strip()
    if not text or len(text) > 2000 or any(ch.isspace() for ch in text):
        return None
    try:
        parts = urlsplit(text if "://" in text else f"http://{text}")
        if parts.scheme not in ("http", "https"):
            return None
        host = parts.hostname
        _ = parts.port  # a malformed port raises here
    except ValueError:
        return None
    if not host:
        return None
    host = host.rstrip(".").lower()
    try:
        return Site(host=host, domain=str(ipaddress.ip_address(host)))
    except ValueError:
        pass
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    labels = host.split(".")
    if not all(_LABEL.match(label) for label in labels):
        return None
    extracted = _EXTRACT(host)
    if extracted.suffix and extracted.domain:
        return Site(host=host, domain=f"{extracted.domain}.{extracted.suffix}")
    if extracted.suffix:  # the host is itself a public suffix, like "co.uk"
        return None
    return Site(host=host, domain=".".join(labels[-2:]))


def parse_site(value: str, where: str = "/query/site_url") -> Site:
    """The site of ``value``; 400 ``invalid_request`` (at ``where``) for anything else."""
    site = _parse(value)
    if site is None:
        raise _invalid(where)
    return site
