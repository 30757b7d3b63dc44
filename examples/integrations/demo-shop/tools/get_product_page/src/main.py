"""Read a product page as a person sees it, in a real browser."""

from typing import Any

from sitetools.sdk import Context, InputRejected


async def run(ctx: Context, input: dict[str, Any]) -> dict[str, Any]:
    async with ctx.page() as page:
        response = await page.goto(f"/products/{input['product_id']}")
        if response is not None and response.status == 404:
            raise InputRejected("The shop has no product with this id.", field="product_id")
        return {
            "name": (await page.locator("main h1").inner_text()).strip(),
            "description": (await page.locator(".description").inner_text()).strip(),
            "price": (await page.locator(".price").inner_text()).strip(),
            "stock": int((await page.locator(".stock").inner_text()).strip()),
        }
