"""Demo Shop's web app: HTML pages, a JSON API, sign-in with a TOTP code, CSRF-protected orders.

One page (``/deals``) builds its product list with JavaScript, so only a browser can read it.
"""

from __future__ import annotations

import hmac
from html import escape
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from sitetools.demo.store import OutOfStockError, Store
from sitetools.demo.totp import verify_totp

__all__ = ["create_demo_site"]

COOKIE = "demo_shop_session"


def _money(cents: int) -> str:
    return f"${cents / 100:.2f}"


def _page(title: str, body: str, status: int = 200, user: str | None = None) -> HTMLResponse:
    who = (
        f'<span id="user">{escape(user)}</span> · <a href="/account/orders">Orders</a> · '
        '<form method="post" action="/logout" style="display:inline">'
        '<button type="submit">Sign out</button></form>'
        if user
        else '<a href="/login">Sign in</a>'
    )
    return HTMLResponse(
        f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>{escape(title)} · Demo Shop</title></head><body>
<header><a href="/">Demo Shop</a> · <a href="/deals">Deals</a> · {who}
<form action="/search" method="get" style="display:inline">
<input name="q" aria-label="Search"><button type="submit">Search</button></form></header>
<main><h1>{escape(title)}</h1>{body}</main></body></html>""",
        status_code=status,
    )


def _product_list(products: list[dict[str, Any]]) -> str:
    if not products:
        return '<p class="empty">No products found.</p>'
    items = "".join(
        f'<li class="product" data-id="{p["id"]}"><a href="/products/{p["id"]}">'
        f'{escape(p["name"])}</a> — <span class="price">{_money(p["price_cents"])}</span> — '
        f'<span class="stock">{p["stock"]} in stock</span></li>'
        for p in products
    )
    return f'<ul id="products">{items}</ul>'


def _name(session: dict[str, Any] | None) -> str | None:
    return str(session["username"]) if session else None


def _public(product: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": product["id"],
        "name": product["name"],
        "description": product["description"],
        "price_cents": product["price_cents"],
        "stock": product["stock"],
        "url": f"/products/{product['id']}",
    }


def create_demo_site(data_file: Path) -> tuple[Starlette, Store]:
    store = Store(data_file)
    store.seed()

    def signed_in(request: Request) -> dict[str, Any] | None:
        session = store.session(request.cookies.get(COOKIE))
        return session if session and session["verified"] else None

    async def home(request: Request) -> Response:
        session = signed_in(request)
        return _page(
            "Welcome",
            "<p>Mugs, coffee and tea things.</p>" + _product_list(store.products()),
            user=_name(session),
        )

    async def search(request: Request) -> Response:
        query = request.query_params.get("q", "")
        session = signed_in(request)
        return _page(
            f"Results for {query!r}",
            _product_list(store.products(query)),
            user=_name(session),
        )

    async def product_page(request: Request) -> Response:
        try:
            product = store.product(int(request.path_params["id"]))
        except ValueError:
            product = None
        session = signed_in(request)
        if product is None:
            return _page("Not found", "<p>No such product.</p>", 404)
        form = (
            f'<form method="post" action="/orders" id="order-form">'
            f'<input type="hidden" name="csrf_token" value="{session["csrf"]}">'
            f'<input type="hidden" name="product_id" value="{product["id"]}">'
            f'<label>Quantity <input name="quantity" type="number" value="1" min="1"></label>'
            f'<button type="submit">Order</button></form>'
            if session
            else '<p><a href="/login">Sign in</a> to order.</p>'
        )
        body = (
            f'<p class="description">{escape(product["description"])}</p>'
            f'<p>Price: <span class="price">{_money(product["price_cents"])}</span></p>'
            f'<p>Stock: <span class="stock">{product["stock"]}</span></p>{form}'
        )
        return _page(product["name"], body, user=_name(session))

    async def deals(request: Request) -> Response:
        script = """<script>
fetch('/api/products?deals=1').then(r => r.json()).then(data => {
  const list = document.createElement('ul'); list.id = 'products';
  for (const p of data.products) {
    const item = document.createElement('li'); item.className = 'product';
    item.dataset.id = p.id;
    item.textContent = p.name + ' — $' + (p.price_cents / 100).toFixed(2);
    list.appendChild(item);
  }
  document.getElementById('deals').replaceChildren(list);
});
</script>"""
        return _page("Deals", '<div id="deals"><p>Loading deals…</p></div>' + script)

    async def api_products(request: Request) -> Response:
        products = store.products(
            request.query_params.get("q", ""), request.query_params.get("deals") == "1"
        )
        return JSONResponse({"products": [_public(p) for p in products]})

    async def api_product(request: Request) -> Response:
        try:
            product = store.product(int(request.path_params["id"]))
        except ValueError:
            product = None
        if product is None:
            return JSONResponse({"error": "not_found"}, 404)
        return JSONResponse(_public(product))

    async def login_form(request: Request) -> Response:
        return _page(
            "Sign in",
            '<form method="post" action="/login">'
            '<label>Username <input name="username" autocomplete="username"></label>'
            '<label>Password <input name="password" type="password"></label>'
            '<button type="submit">Continue</button></form>',
        )

    async def login(request: Request) -> Response:
        form = await request.form()
        username, password = str(form.get("username", "")), str(form.get("password", ""))
        if not store.check_password(username, password):
            return _page("Sign in", '<p class="error">Wrong username or password.</p>', 401)
        response = RedirectResponse("/login/verify", 303)
        response.set_cookie(COOKIE, store.start_session(username), httponly=True, samesite="lax")
        return response

    async def verify_form(request: Request) -> Response:
        return _page(
            "Enter your code",
            '<form method="post" action="/login/verify">'
            "<label>Code from your authenticator app "
            '<input name="code" inputmode="numeric" autocomplete="one-time-code"></label>'
            '<button type="submit">Verify</button></form>',
        )

    async def verify(request: Request) -> Response:
        session = store.session(request.cookies.get(COOKIE))
        form = await request.form()
        secret = store.totp_secret(session["username"]) if session else None
        if session is None or secret is None:
            return RedirectResponse("/login", 303)
        if not verify_totp(secret, str(form.get("code", "")).strip()):
            return _page("Enter your code", '<p class="error">That code is not right.</p>', 401)
        store.verify_session(session["token"])
        return RedirectResponse("/account/orders", 303)

    async def logout(request: Request) -> Response:
        token = request.cookies.get(COOKIE)
        if token:
            store.end_session(token)
        response = RedirectResponse("/", 303)
        response.delete_cookie(COOKIE)
        return response

    async def orders_page(request: Request) -> Response:
        session = signed_in(request)
        if session is None:
            return RedirectResponse("/login", 303)
        rows = store.orders(session["username"])
        items = (
            "".join(
                f'<li class="order" data-id="{o["id"]}">Order #{o["id"]}: {o["quantity"]} × '
                f"{escape(o['product_name'])} — {_money(o['total_cents'])}</li>"
                for o in rows
            )
            or '<li class="empty">No orders yet.</li>'
        )
        return _page("Your orders", f'<ul id="orders">{items}</ul>', user=session["username"])

    async def api_orders(request: Request) -> Response:
        session = signed_in(request)
        if session is None:
            return JSONResponse({"error": "sign_in_required"}, 401)
        return JSONResponse({"orders": store.orders(session["username"])})

    async def place_order(request: Request) -> Response:
        session = signed_in(request)
        if session is None:
            return RedirectResponse("/login", 303)
        form = await request.form()
        if not hmac.compare_digest(str(form.get("csrf_token", "")), session["csrf"]):
            return _page(
                "Refused",
                '<p class="error">The form expired. Reload and try again.</p>',
                403,
                session["username"],
            )
        try:
            product_id, quantity = int(str(form.get("product_id"))), int(str(form.get("quantity")))
            if quantity < 1:
                raise ValueError
            order = store.place_order(session["username"], product_id, quantity)
        except (ValueError, KeyError):
            return _page(
                "Refused",
                '<p class="error">Choose a product and a quantity.</p>',
                400,
                session["username"],
            )
        except OutOfStockError as error:
            return _page(
                "Refused",
                f'<p class="error" id="refusal">Only {error.available} left in stock.</p>',
                409,
                session["username"],
            )
        return RedirectResponse(f"/account/orders?placed={order['id']}", 303)

    app = Starlette(
        routes=[
            Route("/", home),
            Route("/search", search),
            Route("/products/{id}", product_page),
            Route("/deals", deals),
            Route("/api/products", api_products),
            Route("/api/products/{id}", api_product),
            Route("/login", login_form, methods=["GET"]),
            Route("/login", login, methods=["POST"]),
            Route("/login/verify", verify_form, methods=["GET"]),
            Route("/login/verify", verify, methods=["POST"]),
            Route("/logout", logout, methods=["POST"]),
            Route("/account/orders", orders_page),
            Route("/api/orders", api_orders),
            Route("/orders", place_order, methods=["POST"]),
        ]
    )
    return app, store
