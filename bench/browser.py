"""Browser tools: time to the first page with a cold Chromium launch beside a page in the
already-running (warm) browser of the same run, against the Demo Shop's JavaScript page.

Each sample is one tool run in the sandboxed process through the egress proxy
(``run_locally``); the tool measures inside itself. Prints a table and writes
``bench/results/browser.json``. ``BENCH_BROWSER_RUNS`` (default 8) sets the samples.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import free_port, wait_up, write_results

from sitetools.runtime.local import run_locally
from sitetools.tools.package import ToolPackage

ROOT = Path(__file__).resolve().parent.parent
RUNS = int(os.environ.get("BENCH_BROWSER_RUNS", "8"))

TIMED = """
import time

async def run(ctx, input):
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        async with ctx.page() as page:
            await page.goto("/deals")
            await page.wait_for_selector("#deals li")
        timings.append((time.perf_counter() - started) * 1000)
    return {"cold_ms": timings[0], "warm_ms": timings[1:]}
"""


def tool() -> ToolPackage:
    return ToolPackage(
        folder="timed",
        name="Timed pages",
        description="Opens the deals page three times",
        mcp_name="timed_pages",
        effect="read",
        entrypoint="src/main.py:run",
        site_url=None,
        login_fields=None,
        two_factor_methods=None,
        budget_seconds=120,
        input_schema={"type": "object"},
        output_schema={"type": "object"},
        files={"src/main.py": TIMED},
    )


async def sample(site: str, allow: str, chromium: str) -> dict[str, object]:
    result = await run_locally(
        tool(),
        {},
        site_url=site,
        answer=lambda _question: None,
        egress_allow=allow,
        chromium=chromium,
    )
    assert result.status == "succeeded", (result.error, result.log[-2000:])
    output = result.output
    assert isinstance(output, dict)
    return output


def main() -> None:
    port = free_port()
    data = Path(tempfile.mkdtemp(prefix="sitetools-bench-browser-"))
    env = {**os.environ, "SITETOOLS_DATA_DIR": str(data)}
    shop = subprocess.Popen(
        [sys.executable, "-m", "sitetools.cli.main", "demo-site", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    site = f"http://127.0.0.1:{port}"
    chromium = os.environ.get("SITETOOLS_CHROMIUM", "/usr/lib/chromium/chromium")
    try:
        wait_up(f"{site}/")
        cold: list[float] = []
        warm: list[float] = []
        for _ in range(RUNS):
            output = asyncio.run(sample(site, f"127.0.0.1:{port}", chromium))
            cold.append(float(output["cold_ms"]))  # type: ignore[arg-type]
            warm.extend(float(value) for value in output["warm_ms"])  # type: ignore[attr-defined]
    finally:
        shop.terminate()
        shop.wait(20)
    results = {
        "cold_p50_ms": statistics.median(cold),
        "cold_max_ms": max(cold),
        "warm_p50_ms": statistics.median(warm),
        "warm_max_ms": max(warm),
        "samples": RUNS,
    }
    print(f"\nBrowser tool, Demo Shop JavaScript page ({os.cpu_count()} cores, {RUNS} runs)")
    print(
        f"  first page, cold Chromium launch: p50 {results['cold_p50_ms']:.0f} ms "
        f"(max {results['cold_max_ms']:.0f} ms)"
    )
    print(
        f"  page in the warm browser (new context): p50 {results['warm_p50_ms']:.0f} ms "
        f"(max {results['warm_max_ms']:.0f} ms)"
    )
    write_results("browser.json", results)


if __name__ == "__main__":
    main()
