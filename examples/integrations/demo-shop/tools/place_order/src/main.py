"""Order a product: read it, confirm the total with the person, sign in, submit the form."""

import re
from typing import Any

from signin import sign_in

from sitetools.sdk import Context, InputRejected, ToolError

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
_PLACED = re.compile(r"placed=(\d+)")
_REFUSAL = re.compile(r'id="refusal">([^<]+)<')


async def run(ctx: Context, input: dict[str, Any]) -> dict[str, Any]:
    product_id, quantity = input["product_id"], input["quantity"]
    product = await ctx.http.get(f"/api/products/{product_id}")
    if product.status_code == 404:
        raise InputRejected("The shop has no product with this id.", field="product_id")
    item = product.json()
    total = item["price_cents"] * quantity
    confirmed = await ctx.confirm(
        f"Order {quantity} × {item['name']} for ${total / 100:.2f} from the Demo Shop?"
    )
    if not confirmed:
        raise ToolError("Nothing was ordered: the order was not confirmed.")
    await sign_in(ctx)
    page = await ctx.http.get(f"/products/{product_id}")
    token = _CSRF.search(page.text)
    if token is None:
        raise ToolError("The shop's order form was not found.")
    response = await ctx.http.post(
        "/orders",
        data={"csrf_token": token.group(1), "product_id": str(product_id), "quantity": str(quantity)},
    )
    if response.status_code == 409:
        refusal = _REFUSAL.search(response.text)
        reason = refusal.group(1) if refusal else "Not enough in stock."
        raise InputRejected(reason, field="quantity", possible_commit=False)
    placed = _PLACED.search(str(response.url))
    if response.status_code != 200 or placed is None:
        raise ToolError("The shop did not confirm the order; check your orders before retrying.")
    return {"order_id": int(placed.group(1)), "total_cents": total}
