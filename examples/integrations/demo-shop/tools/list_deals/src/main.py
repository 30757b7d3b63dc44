"""The deals page fills its list with JavaScript after loading: wait for it in a browser."""

from typing import Any

from sitetools.sdk import Context


async def run(ctx: Context, input: dict[str, Any]) -> dict[str, Any]:
    async with ctx.page() as page:
        await page.goto("/deals")
        await page.wait_for_selector("#deals li.product")
        items = page.locator("#deals li.product")
        deals = []
        for index in range(await items.count()):
            item = items.nth(index)
            deals.append(
                {
                    "id": int(await item.get_attribute("data-id") or 0),
                    "text": (await item.inner_text()).strip(),
                }
            )
        return {"deals": deals}
