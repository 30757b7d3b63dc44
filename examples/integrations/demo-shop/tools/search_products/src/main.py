"""Search the Demo Shop's catalog through its JSON API (plain HTTP, no browser)."""

from typing import Any

from sitetools.sdk import Context, ToolError


async def run(ctx: Context, input: dict[str, Any]) -> dict[str, Any]:
    response = await ctx.http.get("/api/products", params={"q": input["query"]})
    if response.status_code != 200:
        raise ToolError("The shop's search did not answer; try again later.")
    products = [
        {
            "id": item["id"],
            "name": item["name"],
            "price_cents": item["price_cents"],
            "stock": item["stock"],
            "url": str(response.url.join(item["url"])),
        }
        for item in response.json()["products"]
    ]
    return {"products": products}
