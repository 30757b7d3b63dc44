"""The integration reference: one Markdown document an agent or a person reads to use it."""

from __future__ import annotations

import json

from sitetools.auth.caller import Caller
from sitetools.core.context import Ctx
from sitetools.tools.schemas import ReferenceOut
from sitetools.tools.service import schema_sample, visible_integration

__all__ = ["integration_reference"]


def _login_text(fields: list[str] | None, methods: list[str] | None) -> str:
    if fields is None:
        return "none"
    text = ", ".join(fields)
    if methods:
        text += f"; two-factor: {', '.join(methods)}"
    return text + " (asked on a protected page, never sent by the agent)"


async def integration_reference(ctx: Ctx, caller: Caller, integration_id: str) -> ReferenceOut:
    integration, tools = await visible_integration(ctx, caller, integration_id)
    base = ctx.settings.base_url
    mcp_url = f"{base}/mcp/integrations/{integration.id}"
    keyless_url = f"{base}/v1/tools?integration_id={integration.id}"
    lines = [
        f"# {integration.name}",
        "",
        integration.description or "",
        "",
        f"- Site: {integration.site_name or integration.name} — {integration.site_url}",
        f"- MCP endpoint: `{mcp_url}`",
        f"- Keyless catalog (public read-only tools, no sign-in): `{keyless_url}`",
        f"- OpenAPI document: {base}/v1/openapi.json",
        "",
        "## Connecting an MCP client",
        "",
        f"Add `{mcp_url}` as a Streamable HTTP MCP server. The client discovers the "
        f"authorization server from `{base}/.well-known/oauth-protected-resource/mcp/integrations/"
        f"{integration.id}`, signs you in with OAuth (or send an integration API key as "
        "`Authorization: Bearer svc_…`). Every tool call starts a job; passwords and codes are "
        "typed on a protected page, never given to the agent.",
        "",
        "## Tools",
    ]
    for tool in tools:
        sample = schema_sample(tool.input_schema)
        properties = tool.input_schema.get("properties", {})
        required = set(tool.input_schema.get("required", []))
        lines += [
            "",
            f"### `{tool.mcp_name}` — {tool.name}",
            "",
            tool.description,
            "",
            f"- Effect: {tool.effect}"
            + (" (changes something on the site)" if tool.effect == "write" else ""),
            f"- Login: {_login_text(tool.login_fields, tool.two_factor_methods)}",
            "- Input fields:",
        ]
        for name, prop in properties.items():
            kind = prop.get("type", "any") if isinstance(prop, dict) else "any"
            note = prop.get("description", "") if isinstance(prop, dict) else ""
            flag = "required" if name in required else "optional"
            lines.append(f"  - `{name}` ({kind}, {flag}){': ' + note if note else ''}")
        if not properties:
            lines.append("  - none")
        lines += [
            "",
            "Sample call (MCP `tools/call`):",
            "",
            "```json",
            json.dumps({"name": tool.mcp_name, "arguments": sample}, indent=2),
            "```",
            "",
            "REST:",
            "",
            "```sh",
            f"curl -s {base}/v1/runs -H 'Authorization: Bearer $KEY' "
            f"-H 'Content-Type: application/json' "
            f"-d '{json.dumps({'tool_id': tool.id, 'input': sample, 'wait_seconds': 30})}'",
            "```",
        ]
    return ReferenceOut(format="markdown", content="\n".join(lines) + "\n")
