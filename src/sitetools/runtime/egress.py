"""Which addresses a tool may reach (Smokescreen's rule): its own site, on public addresses.

Checked on the resolved address the proxy then connects to (no DNS rebinding). Loopback or
private test sites are admitted only by name in ``SITETOOLS_EGRESS_ALLOW`` (host:port or CIDR).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass, field

__all__ = ["AllowList", "EgressPolicy", "EgressRefusedError", "public_address"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class EgressRefusedError(Exception):
    """A destination the tool may not reach; ``reason`` is safe to show the tool."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def _embedded_v4(address: IPAddress) -> IPAddress:
    """The IPv4 address inside an IPv4-mapped, NAT64 or 6to4 IPv6 address, if any."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if address.sixtofour is not None:
            return address.sixtofour
    return address


def public_address(address: IPAddress) -> bool:
    """Globally routable unicast: not private, loopback, link-local (metadata), reserved."""
    inner = _embedded_v4(address)
    return inner.is_global and not inner.is_multicast


@dataclass(frozen=True)
class AllowList:
    """``SITETOOLS_EGRESS_ALLOW``: entries ``host:port`` or a CIDR network."""

    endpoints: frozenset[tuple[str, int]] = frozenset()
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    @classmethod
    def parse(cls, text: str) -> AllowList:
        endpoints, networks = set(), []
        for entry in (part.strip() for part in text.split(",")):
            if not entry:
                continue
            if "/" in entry:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            host, _, port = entry.rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"egress allow entry {entry!r}: use host:port or a CIDR")
            endpoints.add((host.strip("[]").lower(), int(port)))
        return cls(frozenset(endpoints), tuple(networks))

    def admits(self, host: str, address: IPAddress, port: int) -> bool:
        if (host.lower(), port) in self.endpoints or (str(address), port) in self.endpoints:
            return True
        return any(address in network for network in self.networks)


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
        bare = host.strip("[]")
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                bare, port, type=socket.SOCK_STREAM
            )
        except OSError:
            raise EgressRefusedError(f"{host} does not resolve") from None
        for info in infos:
            address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            if public_address(address) or self.allow.admits(bare, address, port):
                return str(address)
        raise EgressRefusedError(f"{host} resolves to an address tools may not reach")
