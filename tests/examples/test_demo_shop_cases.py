"""Each demo tool's own cases (``test/cases.json``) against the real Demo Shop, in the real
sandboxed process behind the egress proxy (browser tools in real Chromium)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sitetools.runtime.cases import answerer, check_case, load_cases
from sitetools.runtime.local import run_locally
from sitetools.tools.package import ToolPackage, load_integration
from tests.shop import Shop, running_shop

DEMO = Path(__file__).resolve().parents[2] / "examples/integrations/demo-shop"
PACKAGE = load_integration(DEMO)
CHROMIUM = os.environ.get("SITETOOLS_CHROMIUM", "/usr/lib/chromium/chromium")
CASES = [
    pytest.param(tool, case, id=f"{tool.mcp_name}: {case['name']}")
    for tool in PACKAGE.tools
    for case in load_cases(tool)
]


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shop]:
    with running_shop(tmp_path_factory.mktemp("shop")) as site:
        yield site


def test_every_demo_tool_has_cases() -> None:
    names = {tool.mcp_name for tool in PACKAGE.tools}
    assert {"search_products", "get_product_page", "list_orders", "place_order"} <= names
    assert all(load_cases(tool) for tool in PACKAGE.tools)


@pytest.mark.parametrize(("tool", "case"), CASES)
async def test_case(tool: ToolPackage, case: dict[str, Any], shop: Shop) -> None:
    def resolve(token: str) -> str:
        kind, _, username = token[1:].partition(":")
        assert kind == "totp"
        return shop.code(username)

    run = await run_locally(
        dataclasses.replace(tool),
        case["input"],
        site_url=shop.url,
        answer=answerer(case, resolve),
        egress_allow=shop.allow,
        chromium=CHROMIUM,
    )
    problems = check_case(case, run)
    assert not problems, f"{problems}\n{run.log}"


async def test_without_the_allow_setting_the_loopback_shop_is_refused(shop: Shop) -> None:
    tool = next(t for t in PACKAGE.tools if t.mcp_name == "search_products")
    run = await run_locally(
        tool, {"query": "mug"}, site_url=shop.url, answer=lambda q: None, chromium=CHROMIUM
    )
    assert run.status == "failed"
    assert run.error == "execution_failed"
