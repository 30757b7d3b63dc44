"""Rules of the catalog: importing packages, who sees which tool, search, the reference."""

from __future__ import annotations

import functools
import itertools
import json
import re
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    Integer,
    String,
    Text,
    bindparam,
    case,
    false,
    or_,
    select,
    text,
    type_coerce,
)

from sitetools.auth.caller import Caller
from sitetools.core.context import Ctx
from sitetools.core.errors import ServiceError
from sitetools.core.fastread import AnySelect
from sitetools.core.ids import new_id
from sitetools.core.pagination import decode_offset, encode_offset
from sitetools.tools.integrations import require_visible_integration
from sitetools.tools.models import Integration, Tool, ToolVersion
from sitetools.tools.package import IntegrationPackage, ToolPackage
from sitetools.tools.schemas import (
    ListToolsQuery,
    LoginOut,
    Notice,
    SiteOut,
    ToolOut,
    ToolPage,
)
from sitetools.tools.search import search_words, stems
from sitetools.tools.sites import parse_site

__all__ = [
    "POSSIBLE_MATCHES",
    "ImportResult",
    "RunnableTool",
    "ToolCode",
    "get_tool",
    "import_package",
    "integration_tree",
    "list_tools",
    "runnable_tool",
    "schema_sample",
    "tool_code",
    "tool_login_fields",
    "visible_integration",
]

POSSIBLE_MATCHES = 50  # spec: "Limits" - possible matches
_OP_ID = re.compile(r"^op_([0-9a-fA-F-]{36})$")


@dataclass
class ImportResult:
    integration_id: str
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


async def import_package(
    ctx: Ctx, package: IntegrationPackage, *, account_id: str | None
) -> ImportResult:
    """Create or update an integration from a package: a new version per changed tool.

    ``account_id`` None makes a public integration. Tools missing from the package are disabled.
    """
    now = ctx.now()
    site = parse_site(package.site_url, "integration.toml/site/url")
    owner = (
        Integration.account_id.is_(None)
        if account_id is None
        else (Integration.account_id == account_id)
    )
    integration = await ctx.db.scalar(
        select(Integration).where(Integration.key == package.key, owner)
    )
    if integration is None:
        integration = Integration(
            id=new_id("int"), account_id=account_id, key=package.key, created_at=now
        )
        ctx.db.add(integration)
    integration.visibility = "public" if account_id is None else "private"
    integration.name = package.name
    integration.description = package.description
    integration.site_url = package.site_url
    integration.site_name = package.site_name
    integration.domain = site.domain
    integration.status = "active"
    integration.mcp_hosted = package.mcp_hosted
    integration.updated_at = now
    await ctx.db.flush()
    result = ImportResult(integration.id)
    existing = {
        tool.mcp_name: tool
        for tool in await ctx.db.scalars(select(Tool).where(Tool.integration_id == integration.id))
    }
    for package_tool in package.tools:
        tool = existing.pop(package_tool.mcp_name, None)
        await _import_tool(ctx, integration, tool, package_tool, result)
    for tool in existing.values():
        if tool.enabled:
            tool.enabled = False
            tool.updated_at = now
            result.disabled.append(tool.id)
    await ctx.db.flush()
    return result


async def _import_tool(
    ctx: Ctx,
    integration: Integration,
    tool: Tool | None,
    package: ToolPackage,
    result: ImportResult,
) -> None:
    now = ctx.now()
    digest = package.digest
    latest = None
    if tool is not None and tool.version_id is not None:
        latest = await ctx.db.get(ToolVersion, tool.version_id)
    if tool is None:
        tool = Tool(id=new_id("tool"), integration_id=integration.id, created_at=now)
        ctx.db.add(tool)
        result.created.append(tool.id)
    elif latest is not None and latest.digest == digest and tool.enabled:
        result.unchanged.append(tool.id)
    else:
        result.updated.append(tool.id)
    site = parse_site(package.site_url or integration.site_url, "tool.toml/site/url")
    tool.account_id = integration.account_id
    tool.visibility = integration.visibility
    tool.domain = site.domain
    tool.name = package.name
    tool.description = package.description
    tool.mcp_name = package.mcp_name
    tool.effect = package.effect
    tool.login_fields = package.login_fields
    tool.two_factor_methods = package.two_factor_methods
    tool.input_schema = package.input_schema
    tool.output_schema = package.output_schema
    tool.search_name, tool.search_text = search_words(
        package.name, package.description, package.mcp_name
    )
    tool.enabled = True
    tool.updated_at = now
    await ctx.db.flush()
    if latest is None or latest.digest != digest:
        version = ToolVersion(
            id=new_id("ver"),
            tool_id=tool.id,
            number=(latest.number + 1) if latest else 1,
            digest=digest,
            files=package.files,
            manifest=package.manifest(),
            created_at=now,
        )
        ctx.db.add(version)
        await ctx.db.flush()
        tool.version_id = version.id
        await ctx.db.flush()


async def integration_tree(
    ctx: Ctx, integration_id: str
) -> tuple[IntegrationPackage, dict[str, dict[str, str]]]:
    """What ``sitetools tools export`` writes: the integration and each enabled tool's files."""
    integration = await ctx.db.get(Integration, integration_id)
    if integration is None:
        raise ServiceError("not_found", resource="integration")
    trees: dict[str, dict[str, str]] = {}
    rows = await ctx.db.execute(
        select(Tool, ToolVersion)
        .join(ToolVersion, ToolVersion.id == Tool.version_id)
        .where(Tool.integration_id == integration_id, Tool.enabled.is_(True))
        .order_by(Tool.mcp_name)
    )
    for tool, version in rows.all():
        trees[tool.mcp_name] = dict(version.files)
    package = IntegrationPackage(
        key=integration.key or integration.id,
        name=integration.name,
        description=integration.description,
        site_url=integration.site_url,
        site_name=integration.site_name,
        mcp_hosted=integration.mcp_hosted,
    )
    return package, trees


# What a catalog answer needs, as plain columns (no ORM objects to build per row).
_LIST_COLUMNS = (
    Tool.id,
    Tool.name,
    Tool.description,
    Tool.integration_id,
    Tool.effect,
    # As stored text: decoded only when the entry is not built already (see _row_out).
    type_coerce(Tool.input_schema, Text).label("input_schema"),
    type_coerce(Tool.output_schema, Text).label("output_schema"),
    Tool.login_fields,
    Tool.two_factor_methods,
    Tool.mcp_name,
    Tool.updated_at,
    Integration.site_url,
    Integration.site_name,
    Integration.name.label("integration_name"),
)

# Built catalog entries by (tool id, updated_at, site fields): an import sets updated_at on
# every tool it touches, so a changed tool never matches an old entry.
_BUILT: OrderedDict[tuple[Any, ...], ToolOut] = OrderedDict()
_BUILT_KEPT = 4096


def _schema(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _row_out(row: Any) -> ToolOut:
    """A catalog entry from stored values (checked when imported): built without validating
    again, which would walk every JSON schema of every tool on every answer, and kept (entries
    are never changed after they are built)."""
    key = (row.id, row.updated_at, row.site_url, row.site_name, row.integration_name)
    cached = _BUILT.get(key)
    if cached is not None:
        _BUILT.move_to_end(key)
        return cached
    built = _build_out(row)
    _BUILT[key] = built
    if len(_BUILT) > _BUILT_KEPT:
        _BUILT.popitem(last=False)
    return built


def _build_out(row: Any) -> ToolOut:
    login = None
    if row.login_fields is not None:
        login = LoginOut.model_construct(
            fields=row.login_fields, two_factor_methods=row.two_factor_methods or []
        )
    return ToolOut.model_construct(
        id=row.id,
        name=row.name,
        description=row.description,
        integration_id=row.integration_id,
        site=SiteOut.model_construct(url=row.site_url, name=row.site_name or row.integration_name),
        effect=row.effect,
        input_schema=_schema(row.input_schema),
        output_schema=_schema(row.output_schema),
        login=login,
        mcp_name=row.mcp_name,
    )


def _visible(caller: Caller | None, *columns: Any) -> AnySelect:
    """Enabled tools of active integrations the caller may see (spec: "GET /v1/tools")."""
    kind, values = _caller_shape(caller)
    return _visible_bound(kind, *columns).params(**values)


def _ranking(count: int) -> tuple[Any, Any, Any]:
    """SQL for search over ``count`` query words, bound as ``w<i>p`` (``% word%``, a word
    prefix) and ``w<i>w`` (``% word %``, a whole word): (a row matches, how many query words
    it matched, how well).

    Whole words of the name count most (4), then word prefixes of the name (3), then whole words
    (2) and prefixes (1) of the MCP name and description. Words are [a-z0-9] only (no escaping).
    """
    matched, quality, any_match = [], [], []
    for i in range(count):
        prefix, whole = bindparam(f"w{i}p", type_=String), bindparam(f"w{i}w", type_=String)
        in_name, in_rest = Tool.search_name.like(prefix), Tool.search_text.like(prefix)
        any_match += [in_name, in_rest]
        matched.append(case((or_(in_name, in_rest), 1), else_=0))
        quality.append(
            case(
                (Tool.search_name.like(whole), 4),
                (in_name, 3),
                (Tool.search_text.like(whole), 2),
                (in_rest, 1),
                else_=0,
            )
        )
    return or_(*any_match), sum(matched[1:], matched[0]), sum(quality[1:], quality[0])


def _visible_bound(kind: str, *columns: Any) -> AnySelect:
    """The visible tools for a kind of caller, its values left as parameters
    (``caller_integration``, ``caller_account``)."""
    query = (
        select(*(columns or _LIST_COLUMNS))
        .join(Integration, Integration.id == Tool.integration_id)
        .where(Tool.enabled.is_(True), Integration.status == "active")
    )
    if kind == "keyless":
        return query.where(
            Tool.visibility == "public", Tool.effect == "read", Tool.login_fields.is_(None)
        )
    if kind == "integration":
        return query.where(Tool.integration_id == bindparam("caller_integration"))
    return query.where(
        or_(Tool.visibility == "public", Tool.account_id == bindparam("caller_account"))
    )


def _caller_shape(caller: Caller | None) -> tuple[str, dict[str, Any]]:
    if caller is None:
        return "keyless", {}
    if caller.integration_id is not None:
        return "integration", {"caller_integration": caller.integration_id}
    return "account", {"caller_account": caller.account_id}


@functools.lru_cache(maxsize=512)
def _search_statement(
    kind: str, words: int, by_site: bool, by_integration: bool, nothing: bool, fts: bool
) -> AnySelect:
    """The catalog search for one shape of request, built and compiled once (a statement built
    per request cost ~3 ms of compiling, more than running it)."""
    query = _visible_bound(kind)
    if by_site:
        query = query.where(Tool.domain == bindparam("domain"))
    if by_integration:
        query = query.where(Tool.integration_id == bindparam("integration_id"))
    if nothing:  # a query without words to look for: nothing matches
        query = query.where(false())
    if words:  # the database finds and ranks; only the page comes back
        matches, matched, quality = _ranking(words)
        if fts:
            # SQLite: candidates from the FTS5 index (migration 0003), not a scan of every row;
            # its word-prefix match is the same test as `matches`, not repeated per row.
            query = query.where(
                text("tools.rowid IN (SELECT rowid FROM tools_fts WHERE tools_fts MATCH :fts)")
            )
        else:
            query = query.where(matches)
        query = query.order_by(matched.desc(), quality.desc())
    return (
        query.order_by(Tool.name, Tool.id)
        .offset(bindparam("offset", type_=Integer))
        .limit(bindparam("limit", type_=Integer))
    )


def _fts_tiers(tokens: list[str], most_combinations: int = 10) -> list[str]:
    """FTS queries for rows matching at least k of the words, k from all down to one.

    The ranking sorts by how many words a row matched first, so when the rows matching at
    least k words fill the page, the page is the same as over all candidates, and a broad word
    no longer makes SQLite rank thousands of rows. Tiers whose word combinations would be too
    many are skipped (the last tier, any word, is always there).
    """
    words = [f'"{token}"*' for token in tokens]
    tiers = []
    for k in range(len(words), 1, -1):
        groups = list(itertools.combinations(words, k))
        if len(groups) <= most_combinations:
            tiers.append(" OR ".join("(" + " AND ".join(group) + ")" for group in groups))
    tiers.append(" OR ".join(words))
    return tiers


@functools.lru_cache(maxsize=16)
def _site_statement(kind: str, by_integration: bool) -> AnySelect:
    """The site's (and integration's) tools: the others that may cover the task."""
    query = _visible_bound(kind).where(Tool.domain == bindparam("domain"))
    if by_integration:
        query = query.where(Tool.integration_id == bindparam("integration_id"))
    return query.order_by(Tool.name, Tool.id).limit(bindparam("limit", type_=Integer))


async def list_tools(ctx: Ctx, caller: Caller | None, params: ListToolsQuery) -> ToolPage:
    site = parse_site(params.site_url) if params.site_url else None
    tokens = list(dict.fromkeys(stems(params.query or "")))
    kind, values = _caller_shape(caller)
    if site is not None:
        values["domain"] = site.domain
    if params.integration_id is not None:
        values["integration_id"] = params.integration_id
    fts = bool(tokens) and ctx.app.reader is not None
    for i, token in enumerate(tokens):
        values[f"w{i}p"], values[f"w{i}w"] = f"% {token}%", f"% {token} %"
    offset = decode_offset(params.cursor) if params.cursor else 0
    statement = _search_statement(
        kind,
        len(tokens),
        site is not None,
        params.integration_id is not None,
        params.query is not None and not tokens,
        fts,
    )
    values.update(offset=offset, limit=params.limit + 1)
    window: Sequence[Any] = []
    for fts_query in _fts_tiers(tokens) if fts else [None]:
        if fts_query is not None:
            values["fts"] = fts_query
        window = await ctx.read(statement, values)
        if len(window) > params.limit:
            break
    page, more = window[: params.limit], len(window) > params.limit
    data = [_row_out(row) for row in page]
    result = ToolPage(data=data, next_cursor=encode_offset(offset + params.limit) if more else None)
    if tokens and site is not None and offset == 0:
        shown = {tool.id for tool in data}
        others = _site_statement(kind, params.integration_id is not None)
        rows = await ctx.read(others, {**values, "limit": POSSIBLE_MATCHES + len(shown)})
        rows = [row for row in rows if row.id not in shown]
        result.possible_matches = [_row_out(row) for row in rows[:POSSIBLE_MATCHES]]
    if caller is None:
        result.notice = Notice(
            code="sign_in_to_see_all_tools",
            message="Without credentials only public tools that read and need no login are "
            "listed. Sign up or sign in to see every tool.",
            docs_url=f"{ctx.settings.base_url}/docs/keyless",
        )
    return result


def _tool_id(value: str) -> str:
    """``tool_<hex>``, or ``op_<uuid>`` spelling the same UUID (decisions: "IDs")."""
    match = _OP_ID.match(value)
    if match:
        try:
            return f"tool_{uuid.UUID(match.group(1)).hex}"
        except ValueError:
            return value
    return value


async def get_tool(ctx: Ctx, caller: Caller, tool_id: str) -> ToolOut:
    query = _visible(caller, *_LIST_COLUMNS).where(Tool.id == _tool_id(tool_id))
    found = (await ctx.db.execute(query)).first()
    if found is None:
        raise ServiceError("not_found", resource="tool")
    return _row_out(found)


async def visible_integration(
    ctx: Ctx, caller: Caller, integration_id: str
) -> tuple[Integration, list[Tool]]:
    """The integration (public or the caller's own; an integration key only its own) and its
    enabled tools; anything else is 404 ``not_found``."""
    if caller.integration_id is not None and caller.integration_id != integration_id:
        raise ServiceError("not_found", resource="integration")
    integration = await require_visible_integration(ctx.db, caller.account_id, integration_id)
    tools = list(
        await ctx.db.scalars(
            select(Tool)
            .where(Tool.integration_id == integration_id, Tool.enabled.is_(True))
            .order_by(Tool.mcp_name)
        )
    )
    return integration, tools


def schema_sample(schema: dict[str, Any]) -> Any:
    """A value that fits ``schema`` (for sample calls): examples and defaults first."""
    if schema.get("examples"):
        return schema["examples"][0]
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        required = schema.get("required", [])
        props = schema.get("properties", {})
        return {name: schema_sample(props.get(name, {})) for name in required}
    if kind == "array":
        minimum = schema.get("minItems", 0)
        return [schema_sample(schema.get("items", {})) for _ in range(minimum)]
    if kind == "integer":
        return (
            max(int(schema.get("minimum", 1)), 1) if "minimum" not in schema else schema["minimum"]
        )
    if kind == "number":
        return schema.get("minimum", 1)
    if kind == "boolean":
        return True
    if kind == "string":
        minimum = schema.get("minLength", 1)
        return "x" * max(minimum, 1) if "pattern" not in schema else ""
    return None


@dataclass(frozen=True)
class RunnableTool:
    """What starting a run needs to know about a tool (its published version)."""

    id: str
    name: str
    effect: str
    integration_id: str
    site_url: str
    site_name: str
    version_id: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    login_fields: list[str] | None
    two_factor_methods: list[str] | None
    budget_seconds: int


async def runnable_tool(ctx: Ctx, caller: Caller | None, tool_id: str) -> RunnableTool:
    """A tool the caller may see and run, or 404 ``not_found`` (the catalog's one rule)."""
    query = _visible(caller, Tool, Integration).where(Tool.id == _tool_id(tool_id))
    found = (await ctx.db.execute(query)).first()
    if found is None:
        raise ServiceError("not_found", resource="tool")
    tool, integration = found
    version = await ctx.db.get(ToolVersion, tool.version_id) if tool.version_id else None
    if version is None:
        raise ServiceError("not_found", resource="tool")
    manifest = version.manifest
    return RunnableTool(
        id=tool.id,
        name=tool.name,
        effect=tool.effect,
        integration_id=integration.id,
        site_url=manifest.get("site_url") or integration.site_url,
        site_name=integration.site_name or integration.name,
        version_id=version.id,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        login_fields=tool.login_fields,
        two_factor_methods=tool.two_factor_methods,
        budget_seconds=int(manifest.get("budget", {}).get("seconds", 120)),
    )


@dataclass(frozen=True)
class ToolCode:
    """A tool version's files and entrypoint, as the runtime materializes them."""

    files: dict[str, str]
    entrypoint: str
    output_schema: dict[str, Any]


async def tool_code(ctx: Ctx, version_id: str) -> ToolCode:
    version = await ctx.db.get(ToolVersion, version_id)
    if version is None:
        raise ServiceError("not_found", resource="tool_version")
    tool = await ctx.db.get(Tool, version.tool_id)
    assert tool is not None
    return ToolCode(
        files=dict(version.files),
        entrypoint=str(version.manifest["entrypoint"]),
        output_schema=tool.output_schema,
    )


async def tool_login_fields(ctx: Ctx, tool_id: str) -> list[str] | None:
    tool = await ctx.db.get(Tool, tool_id)
    return None if tool is None else tool.login_fields


async def tool_effect(ctx: Ctx, tool_id: str) -> str | None:
    """A tool's effect by ID (either spelling), or None when there is no such tool."""
    try:
        normalized = _tool_id(tool_id)
    except ServiceError:
        return None
    effect: str | None = await ctx.db.scalar(select(Tool.effect).where(Tool.id == normalized))
    return effect
