"""Which addresses a tool may reach (Smokescreen's rule): its own site, on public addresses.

Checked on the resolved address the proxy then connects to (no DNS rebinding). Loopback or
private test sites are admitted only by name in ``SITETOOLS_EGRESS_ALLOW`` (host:port or CIDR).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sitetools.core.addresses import (
    AddressRefusedError,
    AllowList,
    public_address,
    resolve_admitted,
)

__all__ = ["AllowList", "EgressPolicy", "EgressRefusedError", "public_address"]

# A refusal of the tool's destination; the reason is safe to show the tool.
EgressRefusedError = AddressRefusedError


@dataclass
class EgressPolicy:
    """One run's rule: hosts of the tool's site, on addresses that pass the check."""

    site_domain: str
    allow: AllowList = field(default_factory=AllowList)

    def host_admitted(self, host: str) -> bool:
        host = host.lower().rstrip(".").strip("[]")
        return host == self.site_domain or host.endswith("." + self.site_domain)

    async def resolve(self, host: str, port: int) -> str:
        """The address to connect to, checked; ``EgressRefused`` otherwise."""
        if not self.host_admitted(host):
            raise EgressRefusedError(f"{host} is not this tool's site")
        return await resolve_admitted(host, port, self.allow)
