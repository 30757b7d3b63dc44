"""List the signed-in person's orders from the shop's JSON API."""

from typing import Any

from signin import sign_in

from sitetools.sdk import Context, ToolError


async def run(ctx: Context, input: dict[str, Any]) -> dict[str, Any]:
    await sign_in(ctx)
    response = await ctx.http.get("/api/orders")
    if response.status_code != 200:
        raise ToolError("The shop did not list the orders; try again later.")
    orders = [
        {
            "id": order["id"],
            "product_name": order["product_name"],
            "quantity": order["quantity"],
            "total_cents": order["total_cents"],
        }
        for order in response.json()["orders"]
    ]
    return {"orders": orders}
