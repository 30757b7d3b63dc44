"""The on-disk format of integrations and tools (docs/tool-packages.md): load, check, write.

An integration folder holds ``integration.toml`` and ``tools/<folder>/`` per tool; a tool
folder holds ``tool.toml``, ``src/`` (the entrypoint), ``test/`` and ``explore/``. Every
mistake raises ``PackageError`` naming the file and the field.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from sitetools.tools.sites import _parse as parse_site_text

__all__ = [
    "LOGIN_FIELDS",
    "TWO_FACTOR_METHODS",
    "IntegrationPackage",
    "PackageError",
    "ToolPackage",
    "load_integration",
    "write_integration",
]

LOGIN_FIELDS = ("username", "email", "password", "phone")
TWO_FACTOR_METHODS = ("totp", "sms", "email")
_MCP_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_KEY = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")
_ENTRYPOINT = re.compile(r"^(src/[A-Za-z0-9_/.-]+\.py):([A-Za-z_][A-Za-z0-9_]*)$")
_SKIP = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", "node_modules"}
_MAX_FILE = 1024 * 1024
_TOOL_KEYS = {
    "name",
    "description",
    "mcp_name",
    "effect",
    "entrypoint",
    "site",
    "login",
    "budget",
    "input_schema",
    "output_schema",
}
_INTEGRATION_KEYS = {"key", "name", "description", "site", "mcp_hosted"}


class PackageError(ValueError):
    """A mistake in a package: ``file`` (relative to the integration folder) and ``field``."""

    def __init__(self, file: str, field: str, message: str) -> None:
        self.file, self.field, self.message = file, field, message
        super().__init__(f"{file}: {field}: {message}" if field else f"{file}: {message}")


@dataclass(frozen=True)
class ToolPackage:
    folder: str
    name: str
    description: str
    mcp_name: str
    effect: str
    entrypoint: str
    site_url: str | None
    login_fields: list[str] | None
    two_factor_methods: list[str] | None
    budget_seconds: int
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    files: dict[str, str]

    @property
    def digest(self) -> str:
        """SHA-256 over the sorted file tree: equal trees, equal digests."""
        hasher = hashlib.sha256()
        for path in sorted(self.files):
            hasher.update(path.encode() + b"\0" + self.files[path].encode() + b"\0")
        return hasher.hexdigest()

    def manifest(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "mcp_name": self.mcp_name,
            "effect": self.effect,
            "entrypoint": self.entrypoint,
            "site_url": self.site_url,
            "login": None
            if self.login_fields is None
            else {"fields": self.login_fields, "two_factor_methods": self.two_factor_methods or []},
            "budget": {"seconds": self.budget_seconds},
        }


@dataclass(frozen=True)
class IntegrationPackage:
    key: str
    name: str
    description: str
    site_url: str
    site_name: str
    mcp_hosted: bool
    tools: list[ToolPackage] = field(default_factory=list)


def _text(data: dict[str, Any], key: str, file: str, *, limit: int, required: bool = True) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise PackageError(file, key, "must be a non-empty string")
    if len(value) > limit:
        raise PackageError(file, key, f"must be at most {limit} characters")
    return value.strip()


def _toml(path: Path, file: str) -> dict[str, Any]:
    if not path.is_file():
        raise PackageError(file, "", "file is missing")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise PackageError(file, "", f"not valid TOML ({error})") from None


def _unknown(data: dict[str, Any], allowed: set[str], file: str, prefix: str = "") -> None:
    for key in sorted(set(data) - allowed):
        raise PackageError(file, prefix + key, "unknown field")


def _schema(value: Any, folder: Path, file: str, key: str) -> dict[str, Any]:
    if isinstance(value, str):  # a path to a JSON file inside the tool folder
        target = (folder / value).resolve()
        if folder.resolve() not in target.parents or not target.is_file():
            raise PackageError(file, key, f"{value!r} is not a file in the tool folder")
        try:
            value = json.loads(target.read_text(encoding="utf-8"))
        except ValueError as error:
            raise PackageError(file, key, f"{value!r} is not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise PackageError(file, key, "must be a JSON Schema object (a table or a .json path)")
    try:
        Draft202012Validator.check_schema(value)
    except SchemaError as error:
        where = "/".join(str(p) for p in error.absolute_path)
        raise PackageError(
            file,
            f"{key}{'.' + where if where else ''}",
            f"not a valid JSON Schema: {error.message}",
        ) from None
    if value.get("type") != "object":
        raise PackageError(file, f"{key}.type", 'the root must be "type": "object"')
    return value


def _files(folder: Path, file_prefix: str) -> dict[str, str]:
    files: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part in _SKIP for part in relative.parts) or not path.is_file():
            continue
        if path.suffix in (".pyc", ".pyo"):
            continue
        name = relative.as_posix()
        if path.stat().st_size > _MAX_FILE:
            raise PackageError(f"{file_prefix}/{name}", "", "larger than 1 MiB")
        try:
            files[name] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise PackageError(f"{file_prefix}/{name}", "", "not UTF-8 text") from None
    return files


def _login(data: Any, file: str) -> tuple[list[str] | None, list[str] | None]:
    if data is None:
        return None, None
    if not isinstance(data, dict):
        raise PackageError(file, "login", "must be a table")
    _unknown(data, {"fields", "two_factor_methods"}, file, "login.")
    fields, methods = data.get("fields"), data.get("two_factor_methods", [])
    if not isinstance(fields, list) or not fields or not all(f in LOGIN_FIELDS for f in fields):
        raise PackageError(file, "login.fields", f"must list some of {', '.join(LOGIN_FIELDS)}")
    if not isinstance(methods, list) or not all(m in TWO_FACTOR_METHODS for m in methods):
        raise PackageError(
            file, "login.two_factor_methods", f"must list some of {', '.join(TWO_FACTOR_METHODS)}"
        )
    return list(dict.fromkeys(fields)), list(dict.fromkeys(methods))


def load_tool(folder: Path, label: str) -> ToolPackage:
    """One tool folder; ``label`` is its path inside the integration, for messages."""
    file = f"{label}/tool.toml"
    data = _toml(folder / "tool.toml", file)
    _unknown(data, _TOOL_KEYS, file)
    mcp_name = _text(data, "mcp_name", file, limit=64)
    if not _MCP_NAME.match(mcp_name):
        raise PackageError(file, "mcp_name", "must be lowercase letters, digits and _")
    effect = data.get("effect")
    if effect not in ("read", "write"):
        raise PackageError(file, "effect", 'must be "read" or "write"')
    entrypoint = _text(data, "entrypoint", file, limit=300)
    match = _ENTRYPOINT.match(entrypoint)
    if not match:
        raise PackageError(file, "entrypoint", 'must look like "src/main.py:run"')
    files = _files(folder, label)
    if match.group(1) not in files:
        raise PackageError(file, "entrypoint", f"{match.group(1)} is not in the tool folder")
    site = data.get("site", {})
    if not isinstance(site, dict):
        raise PackageError(file, "site", "must be a table")
    _unknown(site, {"url"}, file, "site.")
    site_url = site.get("url")
    if site_url is not None and (not isinstance(site_url, str) or not parse_site_text(site_url)):
        raise PackageError(file, "site.url", "must be a website address")
    budget = data.get("budget", {})
    if not isinstance(budget, dict):
        raise PackageError(file, "budget", "must be a table")
    _unknown(budget, {"seconds"}, file, "budget.")
    seconds = budget.get("seconds", 120)
    if not isinstance(seconds, int) or isinstance(seconds, bool) or not 1 <= seconds <= 3600:
        raise PackageError(file, "budget.seconds", "must be a whole number from 1 to 3600")
    fields, methods = _login(data.get("login"), file)
    for key in ("input_schema", "output_schema"):
        if key not in data:
            raise PackageError(file, key, "is required")
    return ToolPackage(
        folder=folder.name,
        name=_text(data, "name", file, limit=200),
        description=_text(data, "description", file, limit=4000),
        mcp_name=mcp_name,
        effect=effect,
        entrypoint=entrypoint,
        site_url=site_url,
        login_fields=fields,
        two_factor_methods=methods,
        budget_seconds=seconds,
        input_schema=_schema(data["input_schema"], folder, file, "input_schema"),
        output_schema=_schema(data["output_schema"], folder, file, "output_schema"),
        files=files,
    )


def load_integration(root: Path) -> IntegrationPackage:
    """An integration folder with its tools, every file and field checked."""
    if not root.is_dir():
        raise PackageError(str(root), "", "is not a folder")
    file = "integration.toml"
    data = _toml(root / file, file)
    _unknown(data, _INTEGRATION_KEYS, file)
    key = _text(data, "key", file, limit=100)
    if not _KEY.match(key):
        raise PackageError(file, "key", "must be lowercase letters, digits and -")
    site = data.get("site")
    if not isinstance(site, dict):
        raise PackageError(file, "site", "must be a table with url and name")
    _unknown(site, {"url", "name"}, file, "site.")
    site_url = _text(site, "url", file, limit=2000)
    if not parse_site_text(site_url):
        raise PackageError(file, "site.url", "must be a website address")
    hosted = data.get("mcp_hosted", True)
    if not isinstance(hosted, bool):
        raise PackageError(file, "mcp_hosted", "must be true or false")
    tools_dir = root / "tools"
    folders = sorted(p for p in tools_dir.iterdir() if p.is_dir()) if tools_dir.is_dir() else []
    tools = [load_tool(folder, f"tools/{folder.name}") for folder in folders]
    seen: dict[str, str] = {}
    for tool in tools:
        if tool.mcp_name in seen:
            raise PackageError(
                f"tools/{tool.folder}/tool.toml",
                "mcp_name",
                f"{tool.mcp_name!r} is also used by tools/{seen[tool.mcp_name]}",
            )
        seen[tool.mcp_name] = tool.folder
    return IntegrationPackage(
        key=key,
        name=_text(data, "name", file, limit=200),
        description=_text(data, "description", file, limit=4000, required=False),
        site_url=site_url,
        site_name=_text(site, "name", file, limit=200),
        mcp_hosted=hosted,
        tools=tools,
    )


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def write_integration(
    root: Path, integration: IntegrationPackage, trees: dict[str, dict[str, str]]
) -> None:
    """Write ``integration.toml`` and each tool's file tree (folder name → path → text)."""
    root.mkdir(parents=True, exist_ok=True)
    lines = [
        f"key = {_toml_string(integration.key)}",
        f"name = {_toml_string(integration.name)}",
        f"description = {_toml_string(integration.description)}",
        f"mcp_hosted = {'true' if integration.mcp_hosted else 'false'}",
        "",
        "[site]",
        f"url = {_toml_string(integration.site_url)}",
        f"name = {_toml_string(integration.site_name)}",
    ]
    (root / "integration.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for folder, files in trees.items():
        for path, text in files.items():
            target = root / "tools" / folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
