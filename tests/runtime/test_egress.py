"""The egress rule and the per-run proxy: only the tool's site, only on addresses that pass,
checked on the address actually connected to."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, RedirectResponse
from starlette.routing import Route

from sitetools.runtime.egress import AllowList, EgressPolicy, EgressRefusedError, public_address
from sitetools.runtime.proxy import EgressProxy
from tests.shop import Shop, running_shop
from tests.support import free_port, served


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "127.0.0.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",  # shared address space
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "fe80::1",
        "fc00::1",
        "::ffff:127.0.0.1",  # IPv6-mapped IPv4
        "::ffff:10.0.0.1",
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
    ],
)
def test_private_loopback_link_local_and_metadata_addresses_are_refused(address: str) -> None:
    assert not public_address(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_pass(address: str) -> None:
    assert public_address(ipaddress.ip_address(address))


def test_the_allow_list_names_host_port_or_networks() -> None:
    allow = AllowList.parse("127.0.0.1:8766, localhost:9000, 10.1.0.0/16")
    loopback = ipaddress.ip_address("127.0.0.1")
    assert allow.admits("127.0.0.1", loopback, 8766)
    assert not allow.admits("127.0.0.1", loopback, 8767)
    assert allow.admits("localhost", loopback, 9000)
    assert allow.admits("x", ipaddress.ip_address("10.1.2.3"), 80)
    with pytest.raises(ValueError, match="host:port"):
        AllowList.parse("nonsense")


async def test_only_the_tools_site_is_admitted() -> None:
    policy = EgressPolicy("shop.example")
    assert policy.host_admitted("shop.example")
    assert policy.host_admitted("www.shop.example")
    assert not policy.host_admitted("evilshop.example")
    assert not policy.host_admitted("shop.example.evil.test")
    with pytest.raises(EgressRefusedError, match="not this tool's site"):
        await policy.resolve("other.example", 443)


async def test_a_hostname_resolving_to_loopback_is_refused_without_the_allow_setting() -> None:
    with pytest.raises(EgressRefusedError, match="may not reach"):
        await EgressPolicy("localhost").resolve("localhost", 80)
    allowed = EgressPolicy("localhost", AllowList.parse("localhost:80"))
    assert await allowed.resolve("localhost", 80) in ("127.0.0.1", "::1")


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shop]:
    with running_shop(tmp_path_factory.mktemp("egress-shop")) as site:
        yield site


async def _through(proxy: EgressProxy, url: str) -> httpx.Response:
    async with httpx.AsyncClient(proxy=proxy.url, follow_redirects=True, timeout=10) as http:
        return await http.get(url)


async def test_the_proxy_forwards_to_an_admitted_site_and_records_the_connection(
    shop: Shop,
) -> None:
    connections: list[bool] = []

    async def record() -> None:
        connections.append(True)

    proxy = EgressProxy(EgressPolicy("127.0.0.1", AllowList.parse(shop.allow)), record)
    await proxy.start()
    try:
        response = await _through(proxy, f"{shop.url}/api/products?q=mug")
        assert response.status_code == 200
        assert response.json()["products"]
        assert connections
    finally:
        await proxy.close()


async def test_the_proxy_refuses_loopback_without_the_allow_setting(shop: Shop) -> None:
    proxy = EgressProxy(EgressPolicy("127.0.0.1"))
    await proxy.start()
    try:
        response = await _through(proxy, f"{shop.url}/api/products")
        assert response.status_code == 403
        assert response.headers["x-sitetools-egress"] == "refused"
        assert proxy.refusals
        with pytest.raises(httpx.ProxyError):
            await _through(proxy, f"https://127.0.0.1:{shop.port}/")
    finally:
        await proxy.close()


SEEN: list[str] = []


@pytest.fixture(scope="module")
def bounce_port() -> Iterator[int]:
    """A site that redirects to a private address."""

    async def bounce(_request: object) -> RedirectResponse:
        return RedirectResponse("http://10.0.0.1/internal", 302)

    async def ok(_request: object) -> PlainTextResponse:
        SEEN.append("/ok")
        return PlainTextResponse("ok")

    port = free_port()
    app = Starlette(routes=[Route("/bounce", bounce), Route("/ok", ok)])
    with served(app, port):
        yield port


async def test_a_redirect_to_a_private_address_is_refused(bounce_port: int) -> None:
    port = bounce_port
    proxy = EgressProxy(EgressPolicy("127.0.0.1", AllowList.parse(f"127.0.0.1:{port}")))
    await proxy.start()
    try:
        assert (await _through(proxy, f"http://127.0.0.1:{port}/ok")).text == "ok"
        bounced = await _through(proxy, f"http://127.0.0.1:{port}/bounce")
        assert bounced.status_code == 403
        assert bounced.headers["x-sitetools-egress"] == "refused"
        assert str(bounced.url) == "http://10.0.0.1/internal"
    finally:
        await proxy.close()


async def test_nothing_reaches_the_site_when_the_connection_cannot_be_recorded(
    bounce_port: int,
) -> None:
    # A write job must be marked as having reached its site before the site sees a byte.
    async def unrecorded() -> None:
        raise RuntimeError("database down")

    proxy = EgressProxy(
        EgressPolicy("127.0.0.1", AllowList.parse(f"127.0.0.1:{bounce_port}")), unrecorded
    )
    await proxy.start()
    SEEN.clear()
    try:
        refused = await _through(proxy, f"http://127.0.0.1:{bounce_port}/ok")
        assert refused.status_code == 503
        assert refused.headers["x-sitetools-egress"] == "refused"
        assert SEEN == []
    finally:
        await proxy.close()
