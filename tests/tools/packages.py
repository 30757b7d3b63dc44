"""Write small integration packages for tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

INPUT = {
    "type": "object",
    "properties": {"query": {"type": "string", "minLength": 1, "description": "Words"}},
    "required": ["query"],
    "additionalProperties": False,
}
OUTPUT = {"type": "object", "properties": {"items": {"type": "array"}}}


def tool_toml(
    name: str,
    mcp_name: str,
    *,
    description: str = "Does a thing on the site.",
    effect: str = "read",
    login: dict[str, list[str]] | None = None,
    extra: str = "",
    input_schema: dict[str, Any] | None = None,
) -> str:
    lines = [
        f"name = {json.dumps(name)}",
        f"description = {json.dumps(description)}",
        f'mcp_name = "{mcp_name}"',
        f'effect = "{effect}"',
        'entrypoint = "src/main.py:run"',
        f"input_schema = {_inline(input_schema or INPUT)}",
        f"output_schema = {_inline(OUTPUT)}",
        extra,
    ]
    if login is not None:
        lines += [
            "[login]",
            f"fields = {json.dumps(login['fields'])}",
            f"two_factor_methods = {json.dumps(login.get('two_factor_methods', []))}",
        ]
    return "\n".join(lines) + "\n"


def _inline(value: Any) -> str:
    """JSON as a TOML inline value (TOML inline tables and arrays read the same)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_inline(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    return json.dumps(value)


def write_package(
    root: Path, *, key: str, site_url: str, tools: dict[str, str], name: str = "Shop"
) -> Path:
    """An integration folder with ``tools`` (folder name → tool.toml text)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "integration.toml").write_text(
        f'key = "{key}"\nname = "{name}"\ndescription = "A shop."\n\n'
        f'[site]\nurl = "{site_url}"\nname = "{name}"\n'
    )
    for folder, text in tools.items():
        tool_dir = root / "tools" / folder
        (tool_dir / "src").mkdir(parents=True, exist_ok=True)
        (tool_dir / "tool.toml").write_text(text)
        (tool_dir / "src" / "main.py").write_text("async def run(ctx, input):\n    return {}\n")
    return root
