"""Small tools that exercise the runtime: questions, sleeps, limits, bad outputs, egress."""

from __future__ import annotations

from tests.jobs.packages import tool

NOOP = "async def run(ctx, input):\n    return {'ok': True}\n"

QUESTIONS = """
async def run(ctx, input):
    answers = await ctx.ask_many([
        {"id": "name", "type": "text", "prompt": "Your name?", "max_length": 20},
        {"id": "size", "type": "choice", "prompt": "Size?", "options": ["s", "m", "l"],
         "allow_other": input.get("allow_other", False)},
        {"id": "sure", "type": "confirm", "prompt": "Sure?"},
    ], expires_in=input.get("expires_in", 900))
    return {"answers": answers}
"""

MULTI = """
async def run(ctx, input):
    picked = await ctx.choose("Pick two or three", ["a", "b", "c", "d"], multiple=True,
                              min_selections=2, max_selections=3)
    return {"picked": picked}
"""

SECRET = """
async def run(ctx, input):
    code = await ctx.two_factor("totp")
    return {"length": len(code)}
"""

SLEEPER = """
import asyncio
async def run(ctx, input):
    ctx.progress("running", "sleeping")
    await asyncio.sleep(input.get("seconds", 30))
    return {}
"""

SLEEP_AFTER_ASK = """
import asyncio
async def run(ctx, input):
    await ctx.confirm("Go on?")
    await asyncio.sleep(input.get("seconds", 0))
    return {}
"""

MEMORY_HOG = """
import time
async def run(ctx, input):
    hog = b"x" * (1536 * 1024 * 1024)
    time.sleep(30)
    return {"size": len(hog)}
"""

FORK_BOMB = """
import subprocess, time
async def run(ctx, input):
    children = [subprocess.Popen(["sleep", "60"]) for _ in range(80)]
    time.sleep(30)
    return {"children": len(children)}
"""

BAD_OUTPUT = "async def run(ctx, input):\n    return {'wrong': 1}\n"

FAILS_POLITELY = """
from sitetools.sdk import ToolError
async def run(ctx, input):
    raise ToolError("The shop is closed for inventory today.")
"""

CRASHES = """
async def run(ctx, input):
    secret = "do-not-leak-" + "traceback"
    raise RuntimeError(secret)
"""

FETCH = """
import httpx
async def run(ctx, input):
    try:
        response = await ctx.http.get(input["url"])
    except httpx.HTTPError as error:
        return {"status": 0, "refused": True, "error": type(error).__name__}
    return {"status": response.status_code,
            "refused": response.headers.get("x-sitetools-egress") == "refused"}
"""

WRITE_TOUCHING_SITE = """
import asyncio
async def run(ctx, input):
    await ctx.http.get("/api/products")
    await asyncio.sleep(input.get("seconds", 30))
    return {}
"""

_OK = {"type": "object", "required": ["ok"], "properties": {"ok": {"const": True}}}

TEST_TOOLS = [
    tool("noop", NOOP, output_schema=_OK),
    tool("questions", QUESTIONS),
    tool("multi", MULTI),
    tool("secret_code", SECRET),
    tool("sleeper", SLEEPER, budget=3),
    tool("long_sleeper", SLEEPER, budget=120),
    tool("sleep_after_ask", SLEEP_AFTER_ASK, budget=3),
    tool("memory_hog", MEMORY_HOG),
    tool("fork_bomb", FORK_BOMB),
    tool("bad_output", BAD_OUTPUT, output_schema=_OK),
    tool("fails_politely", FAILS_POLITELY),
    tool("crashes", CRASHES),
    tool("fetch", FETCH),
    tool("write_touching_site", WRITE_TOUCHING_SITE, effect="write", budget=120),
]
