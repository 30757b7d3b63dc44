"""Which network addresses the service itself may connect to on someone's behalf.

One rule for tool egress and webhook deliveries: globally routable unicast addresses only,
checked on the address actually connected to (a name is resolved once, then the checked address
is used, so DNS rebinding cannot slip a private address in). Loopback or private targets are
admitted only by name in an allow list (``host:port`` or a CIDR network).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass

__all__ = ["AddressRefusedError", "AllowList", "public_address", "resolve_admitted"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class AddressRefusedError(Exception):
    """A destination that may not be reached; ``reason`` is safe to show."""

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
    """Entries ``host:port`` or a CIDR network, comma-separated."""

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
                raise ValueError(f"allow entry {entry!r}: use host:port or a CIDR")
            endpoints.add((host.strip("[]").lower(), int(port)))
        return cls(frozenset(endpoints), tuple(networks))

    def admits(self, host: str, address: IPAddress, port: int) -> bool:
        if (host.lower(), port) in self.endpoints or (str(address), port) in self.endpoints:
            return True
        return any(address in network for network in self.networks)


async def resolve_admitted(
    host: str, port: int, allow: AllowList, *, every: bool = False, lookup_seconds: float = 10.0
) -> str:
    """The first resolved address of ``host`` that is public or allowed.

    ``every`` demands that all resolved addresses pass (a stored URL must not name a host that
    also resolves somewhere private). Raises ``AddressRefusedError`` otherwise.
    """
    bare = host.strip("[]").rstrip(".")
    try:
        async with asyncio.timeout(lookup_seconds):
            infos = await asyncio.get_running_loop().getaddrinfo(
                bare, port, type=socket.SOCK_STREAM
            )
    except (OSError, TimeoutError, UnicodeError):
        raise AddressRefusedError(f"{host} does not resolve") from None
    admitted: list[str] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if public_address(address) or allow.admits(bare, address, port):
            admitted.append(str(address))
        elif every:
            admitted = []
            break
    if not admitted:
        raise AddressRefusedError(f"{host} resolves to an address the service may not reach")
    return admitted[0]
