"""Demo Shop over real HTTP: catalog, JSON API, sign-in with TOTP, orders, stock, CSRF."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from sitetools.demo.store import SeedUser
from sitetools.demo.totp import totp, verify_totp
from tests.shop import Shop, running_shop
from tests.support import chromium


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shop]:
    with running_shop(tmp_path_factory.mktemp("shop")) as site:
        yield site


@contextmanager
def sign_in(shop: Shop, user: SeedUser) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=shop.url, follow_redirects=False) as http:
        first = http.post("/login", data={"username": user.username, "password": user.password})
        assert first.status_code == 303
        assert first.headers["location"] == "/login/verify"
        second = http.post("/login/verify", data={"code": totp(user.totp_secret)})
        assert second.status_code == 303
        yield http


def test_totp_matches_rfc_6238_vectors() -> None:
    secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"  # "12345678901234567890" in base32
    assert totp(secret, at=59) == "287082"
    assert totp(secret, at=1111111109) == "081804"
    assert verify_totp(secret, "081804", at=1111111109 + 20)
    assert not verify_totp(secret, "000000", at=1111111109)


def test_public_catalog_search_and_product_pages(shop: Shop) -> None:
    with httpx.Client(base_url=shop.url) as http:
        found = http.get("/api/products", params={"q": "mugs"}).json()["products"]
        assert {p["name"] for p in found} == {"Blue ceramic mug", "Red ceramic mug"}
        page = http.get("/search", params={"q": "mug"})
        assert "Blue ceramic mug" in page.text
        assert "French press" not in page.text
        one = http.get(f"/api/products/{found[0]['id']}").json()
        assert set(one) == {"id", "name", "description", "price_cents", "stock", "url"}
        html = http.get(one["url"]).text
        assert one["name"] in html
        assert "Sign in</a> to order" in html
        assert http.get("/api/products/999").status_code == 404
        assert http.get("/products/abc").status_code == 404


def test_deals_are_rendered_only_by_javascript(shop: Shop) -> None:
    html = httpx.get(f"{shop.url}/deals").text
    assert "Loading deals" in html
    assert "Coffee beans" not in html  # the list is not in the server's HTML


async def test_deals_page_in_a_real_browser(shop: Shop) -> None:
    async with chromium() as browser:
        page = await browser.new_page()
        await page.goto(f"{shop.url}/deals")
        await page.wait_for_selector("#products li.product")
        names = await page.locator("#products li.product").all_text_contents()
    assert any("Coffee beans" in name for name in names)
    assert not any("Blue ceramic mug" in name for name in names)  # not a deal


def test_sign_in_needs_password_then_totp_code(shop: Shop) -> None:
    alice = shop.users["alice"]
    with httpx.Client(base_url=shop.url) as http:
        wrong = http.post("/login", data={"username": "alice", "password": "nope"})
        assert wrong.status_code == 401
        http.post("/login", data={"username": "alice", "password": alice.password})
        assert http.get("/api/orders").status_code == 401  # password alone is not enough
        bad_code = http.post("/login/verify", data={"code": "000000"})
        assert bad_code.status_code == 401
    with sign_in(shop, alice) as http:
        assert http.get("/api/orders").json() == {"orders": []}


def test_order_takes_stock_and_refuses_what_is_not_there(shop: Shop) -> None:
    with sign_in(shop, shop.users["bob"]) as http:
        red = next(
            p
            for p in http.get("/api/products").json()["products"]
            if p["name"] == "Red ceramic mug"
        )
        page = http.get(red["url"]).text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
        assert csrf
        forged = http.post(
            "/orders", data={"product_id": red["id"], "quantity": 1, "csrf_token": "forged"}
        )
        assert forged.status_code == 403
        too_many = http.post(
            "/orders", data={"product_id": red["id"], "quantity": 5, "csrf_token": csrf.group(1)}
        )
        assert too_many.status_code == 409
        assert "Only 1 left in stock." in too_many.text
        placed = http.post(
            "/orders", data={"product_id": red["id"], "quantity": 1, "csrf_token": csrf.group(1)}
        )
        assert placed.status_code == 303
        orders = http.get("/api/orders").json()["orders"]
        assert [(o["product_name"], o["quantity"]) for o in orders] == [("Red ceramic mug", 1)]
        assert http.get(f"/api/products/{red['id']}").json()["stock"] == 0
        again = http.post(
            "/orders", data={"product_id": red["id"], "quantity": 1, "csrf_token": csrf.group(1)}
        )
        assert again.status_code == 409
        assert "Only 0 left" in again.text


def test_state_persists_in_its_own_file(shop: Shop, tmp_path: Path) -> None:
    from sitetools.demo.store import Store

    store = Store(tmp_path / "s.db")
    first = store.seed()
    store.place_order("alice", 1, 2)
    again = Store(tmp_path / "s.db")
    assert [u.totp_secret for u in again.seed()] == [u.totp_secret for u in first]
    assert again.orders("alice")[0]["quantity"] == 2
    assert again.product(1)["stock"] == 23  # type: ignore[index]
