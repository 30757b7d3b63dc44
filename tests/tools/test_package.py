"""Tool packages: loaded, checked, and every mistake named by file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from sitetools.tools.package import PackageError, load_integration
from tests.tools.packages import tool_toml, write_package


def test_a_valid_package_loads_with_digest_and_files(tmp_path: Path) -> None:
    root = write_package(
        tmp_path / "shop",
        key="shop",
        site_url="https://shop.example",
        tools={
            "search": tool_toml("Search products", "search_products"),
            "orders": tool_toml(
                "List orders",
                "list_orders",
                login={"fields": ["username", "password"], "two_factor_methods": ["totp"]},
            ),
        },
    )
    package = load_integration(root)
    assert package.key == "shop"
    assert [t.mcp_name for t in package.tools] == ["list_orders", "search_products"]
    orders = package.tools[0]
    assert orders.login_fields == ["username", "password"]
    assert orders.two_factor_methods == ["totp"]
    assert set(orders.files) == {"tool.toml", "src/main.py"}
    assert len(orders.digest) == 64
    assert load_integration(root).tools[0].digest == orders.digest


@pytest.mark.parametrize(
    ("change", "file", "field"),
    [
        ({"extra": 'colour = "blue"'}, "tools/t/tool.toml", "colour"),
        ({"effect": "delete"}, "tools/t/tool.toml", "effect"),
        ({"mcp_name": "Bad-Name"}, "tools/t/tool.toml", "mcp_name"),
        ({"input_schema": {"type": "array"}}, "tools/t/tool.toml", "input_schema.type"),
        (
            {"input_schema": {"type": "object", "properties": {"a": {"type": 5}}}},
            "tools/t/tool.toml",
            "input_schema.properties/a/type",
        ),
        ({"login": {"fields": ["retina"]}}, "tools/t/tool.toml", "login.fields"),
        (
            {"login": {"fields": ["username"], "two_factor_methods": ["pigeon"]}},
            "tools/t/tool.toml",
            "login.two_factor_methods",
        ),
        ({"extra": "[budget]\nseconds = 0"}, "tools/t/tool.toml", "budget.seconds"),
    ],
)
def test_mistakes_name_file_and_field(
    tmp_path: Path, change: dict[str, object], file: str, field: str
) -> None:
    args: dict[str, object] = {"name": "T", "mcp_name": "t"}
    args.update(change)
    name, mcp_name = str(args.pop("name")), str(args.pop("mcp_name"))
    root = write_package(
        tmp_path / "p",
        key="p",
        site_url="https://p.example",
        tools={"t": tool_toml(name, mcp_name, **args)},  # type: ignore[arg-type]
    )
    with pytest.raises(PackageError) as raised:
        load_integration(root)
    assert raised.value.file == file
    assert raised.value.field.startswith(field.split("/")[0])
    assert file in str(raised.value)


def test_missing_entrypoint_and_duplicate_mcp_names(tmp_path: Path) -> None:
    root = write_package(
        tmp_path / "p",
        key="p",
        site_url="https://p.example",
        tools={"a": tool_toml("A", "same"), "b": tool_toml("B", "same")},
    )
    with pytest.raises(PackageError, match=r"tools/b/tool.toml: mcp_name: 'same' is also used"):
        load_integration(root)
    (root / "tools" / "b" / "src" / "main.py").unlink()
    (root / "tools" / "b" / "tool.toml").write_text(tool_toml("B", "other"))
    with pytest.raises(PackageError, match=r"tools/b/tool.toml: entrypoint"):
        load_integration(root)


def test_integration_file_mistakes(tmp_path: Path) -> None:
    root = write_package(tmp_path / "p", key="p", site_url="https://p.example", tools={})
    (root / "integration.toml").write_text(
        'key = "p"\nname = "P"\n[site]\nurl = "nope!!"\nname = "P"\n'
    )
    with pytest.raises(PackageError, match=r"integration\.toml: site\.url"):
        load_integration(root)
    (root / "integration.toml").write_text("key = [")
    with pytest.raises(PackageError, match=r"integration\.toml: not valid TOML"):
        load_integration(root)
    with pytest.raises(PackageError, match="is not a folder"):
        load_integration(tmp_path / "missing")


def test_schema_from_a_json_file(tmp_path: Path) -> None:
    root = write_package(
        tmp_path / "p", key="p", site_url="https://p.example", tools={"t": tool_toml("T", "t")}
    )
    text = (
        (root / "tools/t/tool.toml")
        .read_text()
        .replace("input_schema = {", 'input_schema = "schemas/input.json"\nignored = {')
    )
    (root / "tools/t/tool.toml").write_text(text.replace("ignored = {", "#"))
    (root / "tools/t/schemas").mkdir()
    (root / "tools/t/schemas/input.json").write_text('{"type": "object"}')
    package = load_integration(root)
    assert package.tools[0].input_schema == {"type": "object"}
