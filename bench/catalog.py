"""``GET /v1/tools?query=…`` over 10,000 tools on SQLite: requests per second and p95 latency.

Target (issue 4): p95 < 50 ms at 8 concurrent clients. The load generator is its own process.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

from run import create_key, free_port, service_env, sitetools, wait_up

from sitetools.core.ids import new_id
from sitetools.tools.search import search_words

TOOLS = int(os.environ.get("BENCH_TOOLS", "10000"))
CLIENTS = int(os.environ.get("BENCH_CLIENTS", "8"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "8"))
# A catalog with the word variety of real sites: 30 verbs, 200 nouns, and descriptions drawn
# from 600 words, so a two-word query matches a few percent of the tools, not half of them.
VERBS = [
    "search",
    "list",
    "get",
    "create",
    "update",
    "cancel",
    "track",
    "export",
    "book",
    "find",
    "read",
    "send",
    "delete",
    "compare",
    "check",
    "download",
    "upload",
    "reserve",
    "pay",
    "renew",
    "subscribe",
    "rate",
    "review",
    "share",
    "schedule",
    "transfer",
    "apply",
    "register",
    "confirm",
    "fetch",
]
_SYLLABLES = [
    "pro",
    "duct",
    "or",
    "der",
    "in",
    "voice",
    "tick",
    "et",
    "flight",
    "ho",
    "tel",
    "mes",
    "sage",
    "file",
    "ac",
    "count",
    "pay",
    "ment",
    "ship",
    "re",
    "port",
    "ev",
    "ent",
    "con",
    "tact",
    "task",
    "cart",
    "deal",
    "item",
    "list",
]
_rng = random.Random(11)
NOUNS = ["products", "orders", "invoices", "tickets", "flights", "hotels", "messages"] + [
    "".join(_rng.sample(_SYLLABLES, 3)) + "s" for _ in range(193)
]
WORDS = NOUNS + ["".join(_rng.sample(_SYLLABLES, 2)) for _ in range(400)]


async def seed(url: str) -> None:
    from sqlalchemy import insert
    from sqlalchemy.ext.asyncio import create_async_engine

    from sitetools.tools.models import Integration, Tool

    rng = random.Random(7)
    engine = create_async_engine(url)
    now = datetime.now(UTC)
    integrations, tools = [], []
    for i in range(TOOLS // 100):
        integration_id = new_id("int")
        domain = f"site{i}.example"
        integrations.append(
            {
                "id": integration_id,
                "account_id": None,
                "visibility": "public",
                "name": f"Site {i}",
                "site_url": f"https://{domain}",
                "domain": domain,
                "status": "active",
                "created_at": now,
                "key": f"site-{i}",
                "description": "",
                "site_name": f"Site {i}",
                "mcp_hosted": True,
                "updated_at": now,
            }
        )
        for j in range(100):
            verb, noun = rng.choice(VERBS), rng.choice(NOUNS)
            name = f"{verb.title()} {noun} {j}"
            description = f"{verb.title()} {noun} on site {i}: " + " ".join(rng.sample(WORDS, 8))
            mcp = f"{verb}_{noun}_{j}"
            tools.append(
                {
                    "id": new_id("tool"),
                    "integration_id": integration_id,
                    "account_id": None,
                    "visibility": "public",
                    "domain": domain,
                    "name": name,
                    "description": description,
                    "mcp_name": mcp,
                    "effect": "read",
                    "login_fields": None,
                    "two_factor_methods": None,
                    "input_schema": {"type": "object"},
                    "output_schema": {"type": "object"},
                    "search_name": search_words(name, description, mcp)[0],
                    "search_text": search_words(name, description, mcp)[1],
                    "enabled": True,
                    "version_id": None,
                    "created_at": now,
                    "updated_at": now,
                }
            )
    async with engine.begin() as connection:
        await connection.execute(insert(Integration), integrations)
        for start in range(0, len(tools), 2000):
            await connection.execute(insert(Tool), tools[start : start + 2000])
    await engine.dispose()


def main() -> None:
    data = Path(tempfile.mkdtemp(prefix="sitetools-catalog-"))
    port = free_port()
    env = service_env(data, port)
    sitetools(env, "migrate")
    asyncio.run(seed(f"sqlite+aiosqlite:///{data / 'sitetools.db'}"))
    sitetools(env, "admin", "create-account", "--email", "cat@example.com", "--password", "pw")
    token = create_key(env, "cat@example.com")
    queries = [
        "product search",
        "cancel orders",
        "track shipments",
        "invoices",
        "book hotels",
        "find flights reports",
        "export payments",
        "messages",
    ]
    paths = [f"/v1/tools?{urlencode({'query': q})}" for q in queries]
    paths += [
        f"/v1/tools?{urlencode({'query': q, 'site_url': f'https://www.site{i}.example/x'})}"
        for i, q in enumerate(queries)
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "sitetools.cli.main", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_up(f"http://127.0.0.1:{port}/healthz")
        spec = {
            "base": f"http://127.0.0.1:{port}",
            "token": token,
            "paths": paths,
            "clients": CLIENTS,
            "seconds": 2,
        }
        load = [sys.executable, str(Path(__file__).parent / "load.py")]
        subprocess.run([*load, json.dumps(spec)], check=True, capture_output=True)  # warm-up
        spec["seconds"] = SECONDS
        out = subprocess.run(
            [*load, json.dumps(spec)], check=True, capture_output=True, text=True
        ).stdout
        figures = json.loads(out)
    finally:
        server.terminate()
        shutil.rmtree(data, ignore_errors=True)
    print(
        f"\nGET /v1/tools?query=… over {TOOLS} tools, SQLite, {CLIENTS} concurrent clients, "
        f"{SECONDS:.0f}s"
    )
    print(
        f"  {figures['rps']:.0f} requests/s, p50 {figures['p50_ms']:.1f} ms, "
        f"p95 {figures['p95_ms']:.1f} ms, {figures['failures']} failures"
    )
    print(
        f"  data: {TOOLS // 100} sites x 100 tools; names from {len(VERBS)} verbs x "
        f"{len(NOUNS)} nouns, descriptions from {len(WORDS)} words"
    )
    print(f"target: p95 < 50 ms: {'met' if figures['p95_ms'] < 50 else 'NOT met'}")


if __name__ == "__main__":
    main()
