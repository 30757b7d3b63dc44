"""Build a tool package in memory (for test tools)."""

from __future__ import annotations

from typing import Any

from sitetools.tools.package import ToolPackage


def tool(
    mcp_name: str,
    code: str,
    *,
    effect: str = "read",
    output_schema: dict[str, Any] | None = None,
    input_schema: dict[str, Any] | None = None,
    budget: int = 30,
) -> ToolPackage:
    return ToolPackage(
        folder=mcp_name,
        name=mcp_name.replace("_", " ").capitalize(),
        description=f"Test tool {mcp_name}",
        mcp_name=mcp_name,
        effect=effect,
        entrypoint="src/main.py:run",
        site_url=None,
        login_fields=None,
        two_factor_methods=None,
        budget_seconds=budget,
        input_schema=input_schema or {"type": "object"},
        output_schema=output_schema or {"type": "object"},
        files={"src/main.py": code},
    )
