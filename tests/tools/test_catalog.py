"""spec: "Tools and integrations" - search, site matching, visibility, keyless use, reference."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from jsonschema import Draft202012Validator
from sqlalchemy import update

from sitetools.tools import service as catalog
from sitetools.tools.models import Integration, Tool
from sitetools.tools.package import load_integration
from tests.support import Person, ctx_for, error_code, new_person
from tests.tools.packages import tool_toml, write_package

LOGIN = {"fields": ["username", "password"], "two_factor_methods": ["totp"]}


async def import_shop(
    app: FastAPI, tmp_path: Path, *, account_id: str | None = None, extra: int = 0
) -> tuple[str, str, dict[str, str]]:
    """A shop integration on its own domain; returns (integration_id, domain, mcp → tool id)."""
    tag = uuid.uuid4().hex[:8]
    domain = f"shop-{tag}.example"
    tools = {
        "search": tool_toml(
            "Search products",
            "search_products",
            description="Find products in the catalog by words.",
        ),
        "page": tool_toml(
            "Get product page",
            "get_product_page",
            description="Read one product's page, prices and stock.",
        ),
        "orders": tool_toml(
            "List orders", "list_orders", description="Your past orders.", login=LOGIN
        ),
        "order": tool_toml(
            "Place order", "place_order", effect="write", description="Buy a product.", login=LOGIN
        ),
    }
    for i in range(extra):
        tools[f"x{i}"] = tool_toml(f"Extra tool {i}", f"extra_{i}", description="Other things.")
    root = write_package(
        tmp_path / tag,
        key=f"shop-{tag}",
        site_url=f"https://www.{domain}",
        tools=tools,
        name=f"Shop {tag}",
    )
    async with ctx_for(app) as ctx:
        result = await catalog.import_package(ctx, load_integration(root), account_id=account_id)
        await ctx.db.commit()
        ids = {
            t.mcp_name: t.id
            for t in (
                await ctx.db.execute(
                    Tool.__table__.select().where(Tool.integration_id == result.integration_id)
                )
            ).all()
        }
    return result.integration_id, domain, ids


async def _list(
    client: httpx.AsyncClient, person: Person | None, **params: object
) -> httpx.Response:
    headers = person.auth() if person else {}
    return await client.get("/v1/tools", params=params, headers=headers)


async def test_multi_word_query_finds_by_meaning_and_ranks(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    person = await new_person(app)
    integration_id, _, ids = await import_shop(app, tmp_path)
    response = await _list(client, person, query="product search", integration_id=integration_id)
    body = response.json()
    names = [t["name"] for t in body["data"]]
    assert names[0] == "Search products"
    assert "Get product page" in names
    tool = body["data"][0]
    assert tool["id"] == ids["search_products"]
    assert tool["site"] == {"url": tool["site"]["url"], "name": tool["site"]["name"]}
    assert tool["login"] is None
    assert tool["effect"] == "read"
    assert set(tool) == {
        "id",
        "name",
        "description",
        "integration_id",
        "site",
        "effect",
        "input_schema",
        "output_schema",
        "login",
        "mcp_name",
    }


@pytest.mark.parametrize(
    "form", ["{d}", "https://www.{d}/a?b#c", "shop.{d}", "WWW.{D}", "http://{d}:8080/x"]
)
async def test_site_url_matches_the_registrable_domain(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path, form: str
) -> None:
    person = await new_person(app)
    _, domain, ids = await import_shop(app, tmp_path)
    value = form.format(d=domain, D=domain.upper())
    body = (await _list(client, person, site_url=value, limit=100)).json()
    assert {t["id"] for t in body["data"]} == set(ids.values())


@pytest.mark.parametrize(
    "value", ["garbage!!", "ftp://x.example", "co.uk", "http://x:99999", "[", "http://[::1", "a..b"]
)
async def test_bad_site_url_is_invalid_request(
    app: FastAPI, client: httpx.AsyncClient, value: str
) -> None:
    person = await new_person(app)
    response = await _list(client, person, site_url=value)
    assert response.status_code == 400
    assert response.json()["error"]["details"]["issues"][0]["path"] == "/query/site_url"


async def test_ip_sites_match_exactly(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    person = await new_person(app)
    root = write_package(
        tmp_path / "ip",
        key=f"ip-{uuid.uuid4().hex[:6]}",
        site_url="http://127.0.0.9:8766",
        tools={"t": tool_toml("Ping", "ping")},
    )
    async with ctx_for(app) as ctx:
        await catalog.import_package(ctx, load_integration(root), account_id=person.account_id)
        await ctx.db.commit()
    hits = (await _list(client, person, site_url="127.0.0.9")).json()["data"]
    assert [t["mcp_name"] for t in hits] == ["ping"]
    assert (await _list(client, person, site_url="127.0.0.10")).json()["data"] == []


async def test_possible_matches_only_with_query_and_site_on_the_first_page(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    person = await new_person(app)
    _, domain, ids = await import_shop(app, tmp_path, extra=3)
    body = (await _list(client, person, query="orders", site_url=domain, limit=1)).json()
    assert [t["mcp_name"] for t in body["data"]] == ["list_orders"]
    others = {t["id"] for t in body["possible_matches"]}
    assert ids["list_orders"] not in others
    assert others == set(ids.values()) - {ids["list_orders"]}
    later = (
        (
            await _list(client, person, query="orders", site_url=domain, cursor=body["next_cursor"])
        ).json()
        if body["next_cursor"]
        else {"possible_matches": None}
    )
    assert later.get("possible_matches") is None
    assert (await _list(client, person, query="orders")).json()["possible_matches"] is None
    assert (await _list(client, person, site_url=domain)).json()["possible_matches"] is None


async def test_private_public_and_disabled_visibility_across_accounts(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    owner, stranger = await new_person(app), await new_person(app)
    integration_id, domain, ids = await import_shop(app, tmp_path, account_id=owner.account_id)
    mine = {t["id"] for t in (await _list(client, owner, site_url=domain)).json()["data"]}
    assert mine == set(ids.values())
    assert (await _list(client, stranger, site_url=domain)).json()["data"] == []
    tool_id = ids["search_products"]
    assert (await client.get(f"/v1/tools/{tool_id}", headers=owner.auth())).status_code == 200
    hidden = await client.get(f"/v1/tools/{tool_id}", headers=stranger.auth())
    assert hidden.status_code == 404
    assert error_code(hidden) == "not_found"
    reference = await client.get(
        f"/v1/integrations/{integration_id}/reference", headers=stranger.auth()
    )
    assert reference.status_code == 404
    async with ctx_for(app) as ctx:
        await ctx.db.execute(update(Tool).where(Tool.id == tool_id).values(enabled=False))
        await ctx.db.commit()
    assert (await client.get(f"/v1/tools/{tool_id}", headers=owner.auth())).status_code == 404
    listed = {t["id"] for t in (await _list(client, owner, site_url=domain)).json()["data"]}
    assert tool_id not in listed
    async with ctx_for(app) as ctx:
        await ctx.db.execute(
            update(Integration).where(Integration.id == integration_id).values(status="disabled")
        )
        await ctx.db.commit()
    assert (await _list(client, owner, site_url=domain)).json()["data"] == []


async def test_public_tools_are_seen_by_every_account(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    _, domain, ids = await import_shop(app, tmp_path)
    for _ in range(2):
        person = await new_person(app)
        seen = {t["id"] for t in (await _list(client, person, site_url=domain)).json()["data"]}
        assert seen == set(ids.values())


async def test_get_tool_by_op_uuid(app: FastAPI, client: httpx.AsyncClient, tmp_path: Path) -> None:
    person = await new_person(app)
    _, _, ids = await import_shop(app, tmp_path)
    tool_id = ids["place_order"]
    op_id = "op_" + str(uuid.UUID(tool_id.removeprefix("tool_")))
    response = await client.get(f"/v1/tools/{op_id}", headers=person.auth())
    assert response.status_code == 200
    assert response.json()["id"] == tool_id
    assert response.json()["login"] == LOGIN
    assert response.json()["effect"] == "write"
    for missing in ("tool_" + "0" * 32, "op_not-a-uuid", "nonsense"):
        assert (await client.get(f"/v1/tools/{missing}", headers=person.auth())).status_code == 404


async def test_keyless_lists_only_public_read_tools_without_login(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    _, domain, ids = await import_shop(app, tmp_path)
    body = (await _list(client, None, site_url=domain)).json()
    assert {t["mcp_name"] for t in body["data"]} == {"search_products", "get_product_page"}
    assert body["notice"]["code"] == "sign_in_to_see_all_tools"
    assert body["notice"]["docs_url"].startswith("http://testserver/")
    person = await new_person(app)
    signed_in = (await _list(client, person, site_url=domain)).json()
    assert signed_in["notice"] is None
    owner = await new_person(app)
    _, private_domain, _ = await import_shop(app, tmp_path, account_id=owner.account_id)
    assert (await _list(client, None, site_url=private_domain)).json()["data"] == []
    for path in (f"/v1/tools/{ids['search_products']}", "/v1/account"):
        assert (await client.get(path)).status_code == 401


async def test_integration_key_sees_only_its_integration(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    person = await new_person(app)
    first, _, first_ids = await import_shop(app, tmp_path)
    second, _, second_ids = await import_shop(app, tmp_path)
    key = await person.key("scoped", integration_id=first)
    seen = {
        t["id"]
        for t in (
            await _list(client, person, limit=100)
            if False
            else await client.get(
                "/v1/tools", params={"limit": 100}, headers=person.auth(key.secret)
            )
        ).json()["data"]
    }
    assert seen == set(first_ids.values())
    other = await client.get(
        f"/v1/tools/{second_ids['search_products']}", headers=person.auth(key.secret)
    )
    assert other.status_code == 404
    reference = await client.get(
        f"/v1/integrations/{second}/reference", headers=person.auth(key.secret)
    )
    assert reference.status_code == 404
    own = await client.get(f"/v1/integrations/{first}/reference", headers=person.auth(key.secret))
    assert own.status_code == 200


async def test_pagination_visits_every_tool_once(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    person = await new_person(app)
    _, domain, ids = await import_shop(app, tmp_path, extra=6)
    for query in (None, "extra tool"):
        seen: list[str] = []
        cursor = None
        while True:
            params: dict[str, object] = {"site_url": domain, "limit": 3}
            if query:
                params["query"] = query
            if cursor:
                params["cursor"] = cursor
            page = (await _list(client, person, **params)).json()
            seen += [t["id"] for t in page["data"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert len(seen) == len(set(seen))
        expected = (
            set(ids.values())
            if query is None
            else {v for k, v in ids.items() if k.startswith("extra_")}
        )
        assert expected <= set(seen)


async def test_reference_document_and_valid_sample_calls(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    person = await new_person(app)
    integration_id, _, ids = await import_shop(app, tmp_path)
    response = await client.get(
        f"/v1/integrations/{integration_id}/reference", headers=person.auth()
    )
    assert response.status_code == 200
    body = response.json()
    assert body["format"] == "markdown"
    content = body["content"]
    assert f"http://testserver/mcp/integrations/{integration_id}" in content
    assert f"/v1/tools?integration_id={integration_id}" in content
    assert "http://testserver/v1/openapi.json" in content
    for mcp_name in ids:
        assert f"### `{mcp_name}`" in content
    assert "Effect: write" in content
    assert "two-factor: totp" in content
    async with ctx_for(app) as ctx:
        for tool_id in ids.values():
            tool = await ctx.db.get(Tool, tool_id)
            assert tool is not None
            Draft202012Validator(tool.input_schema).validate(
                catalog.schema_sample(tool.input_schema)
            )


async def test_reimport_makes_a_version_per_changed_tool_and_disables_removed_ones(
    app: FastAPI, tmp_path: Path
) -> None:
    root = write_package(
        tmp_path / "v",
        key=f"v-{uuid.uuid4().hex[:6]}",
        site_url="https://v.example",
        tools={"a": tool_toml("A", "a"), "b": tool_toml("B", "b")},
    )
    async with ctx_for(app) as ctx:
        first = await catalog.import_package(ctx, load_integration(root), account_id=None)
        await ctx.db.commit()
    assert len(first.created) == 2
    (root / "tools/a/src/main.py").write_text("async def run(ctx, input):\n    return {'v': 2}\n")
    import shutil

    shutil.rmtree(root / "tools/b")
    async with ctx_for(app) as ctx:
        second = await catalog.import_package(ctx, load_integration(root), account_id=None)
        await ctx.db.commit()
        assert second.integration_id == first.integration_id
        assert len(second.updated) == 1
        assert len(second.disabled) == 1
        tool = await ctx.db.get(Tool, second.updated[0])
        assert tool is not None
        from sitetools.tools.models import ToolVersion

        version = await ctx.db.get(ToolVersion, tool.version_id)
        assert version is not None
        assert version.number == 2
        assert "'v': 2" in version.files["src/main.py"]
    async with ctx_for(app) as ctx:
        third = await catalog.import_package(ctx, load_integration(root), account_id=None)
        await ctx.db.commit()
    assert third.unchanged == second.updated


async def test_a_query_without_words_finds_nothing(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    person = await new_person(app)
    _, domain, _ = await import_shop(app, tmp_path)
    body = (await _list(client, person, query="!!! ---", site_url=domain)).json()
    assert body["data"] == []


async def test_keyless_use_can_be_switched_off(data_dir: Path, database_url: str) -> None:
    from sitetools.app import create_app
    from tests.conftest import make_settings

    app = create_app(make_settings(data_dir, database_url, keyless_enabled=False))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        response = await http.get("/v1/tools")
        assert response.status_code == 401
        assert error_code(response) == "unauthorized"
        page = await http.get("/docs/keyless")
    await app.state.engine.dispose()
    assert page.status_code == 200


async def test_ranking_is_the_same_page_by_page_as_in_one_page(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Rows matching every word rank first; pages taken one row at a time (where SQLite's
    search can stop at the rows matching both words) equal one page holding everything."""
    person = await new_person(app)
    tag = uuid.uuid4().hex[:8]
    tools = {
        "a": tool_toml("Track parcel", "track_parcel_a", description="Where is my parcel."),
        "b": tool_toml("Track order", "track_order_b", description="Order status."),
        "c": tool_toml("Parcel price", "parcel_price_c", description="Cost of sending."),
        "d": tool_toml("Track parcel fast", "track_parcel_d", description="Express."),
        "e": tool_toml("Parcel track", "parcel_track_e", description="Both words."),
        "f": tool_toml("Track", "track_f", description="Only one word."),
        "g": tool_toml("Unrelated", "unrelated_g", description="Nothing to see."),
    }
    root = write_package(
        tmp_path / tag, key=f"p-{tag}", site_url=f"https://{tag}.example", tools=tools
    )
    async with ctx_for(app) as ctx:
        result = await catalog.import_package(ctx, load_integration(root), account_id=None)
        await ctx.db.commit()
    params = {"query": "track parcel", "integration_id": result.integration_id}
    whole = (await _list(client, person, **params, limit=50)).json()["data"]
    names = [tool["name"] for tool in whole]
    assert set(names[:3]) == {"Track parcel", "Track parcel fast", "Parcel track"}
    assert set(names[3:]) == {"Track order", "Parcel price", "Track"}
    one_by_one: list[str] = []
    cursor = None
    while True:
        page = (
            await _list(client, person, **params, limit=1, **({"cursor": cursor} if cursor else {}))
        ).json()
        one_by_one += [tool["name"] for tool in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert one_by_one == names


async def test_a_changed_tool_is_listed_as_changed(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Catalog entries are kept once built; an import that changes a tool shows at once."""
    person = await new_person(app)
    key = f"c-{uuid.uuid4().hex[:6]}"

    async def import_with(description: str, site_name: str) -> str:
        root = write_package(
            tmp_path / f"c-{uuid.uuid4().hex[:6]}",
            key=key,
            site_url=f"https://{key}.example",
            tools={"a": tool_toml("Convert units", "convert_units", description=description)},
            name=site_name,
        )
        async with ctx_for(app) as ctx:
            result = await catalog.import_package(ctx, load_integration(root), account_id=None)
            await ctx.db.commit()
        return result.integration_id

    integration_id = await import_with("Metres to feet.", "First name")
    params = {"query": "convert units", "integration_id": integration_id}
    (before,) = (await _list(client, person, **params)).json()["data"]
    assert before["description"] == "Metres to feet."
    await import_with("Feet to metres.", "First name")
    (after,) = (await _list(client, person, **params)).json()["data"]
    assert after["description"] == "Feet to metres."
    shown = (await client.get(f"/v1/tools/{after['id']}", headers=person.auth())).json()
    assert shown["description"] == "Feet to metres."
