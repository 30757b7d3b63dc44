"""``make bench``: throughput of authenticated reads beside a bare FastAPI endpoint.

Each server runs in its own process (one uvicorn worker); the load generator is ``wrk`` (Debian)
in another process, so the figures compare like with like on this machine. Prints a table and
writes ``bench/results/latest.json``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
DURATION = int(os.environ.get("BENCH_SECONDS", "6"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "16"))


def write_results(name: str, results: object) -> None:
    """Figures as JSON under bench/results/ (not committed)."""
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / name).write_text(json.dumps(results, indent=2))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_up(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def sitetools(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "sitetools.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def service_env(data: Path, port: int) -> dict[str, str]:
    """The environment of a benchmarked service: its own data folder and port, quiet logs,
    none of the caller's SITETOOLS_ settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITETOOLS_")}
    env.update(
        SITETOOLS_DATA_DIR=str(data),
        SITETOOLS_PORT=str(port),
        SITETOOLS_BASE_URL=f"http://127.0.0.1:{port}",
        SITETOOLS_LOG_LEVEL="WARNING",
    )
    return env


def create_key(env: dict[str, str], email: str, *permissions: str) -> str:
    """A new API key's secret for ``email`` (all the member's permissions when none given)."""
    args = ["admin", "create-key", "--email", email, "--name", "bench"]
    for permission in permissions:
        args += ["--permission", permission]
    secret: str = json.loads(sitetools(env, *args))["secret"]
    return secret


def wrk(url: str, token: str | None) -> dict[str, float]:
    """Requests per second and latency percentiles from wrk."""
    script = Path(tempfile.mkstemp(suffix=".lua")[1])
    header = f'wrk.headers["Authorization"] = "Bearer {token}"\n' if token else ""
    script.write_text(
        header
        + "done = function(summary, latency, requests)\n"
        + '  io.write(string.format("P50 %d\\nP95 %d\\nP99 %d\\n", latency:percentile(50), '
        + "latency:percentile(95), latency:percentile(99)))\n"
        + "end\n"
    )
    out = subprocess.run(
        ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{DURATION}s", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    script.unlink()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise RuntimeError(f"{url}: {non2xx.group(1)} failed answers\n{out}")
    pct = {k: int(v) / 1000 for k, v in re.findall(r"(P\d+) (\d+)", out)}
    return {"rps": rps, "p50_ms": pct["P50"], "p95_ms": pct["P95"], "p99_ms": pct["P99"]}


def main() -> None:
    if shutil.which("wrk") is None:
        sys.exit("wrk is missing: `apt-get install wrk` (make bench does this)")
    data = Path(tempfile.mkdtemp(prefix="sitetools-bench-"))
    port, bare_port = free_port(), free_port()
    env = service_env(data, port)
    sitetools(env, "migrate")
    sitetools(
        env,
        "admin",
        "create-account",
        "--email",
        "bench@example.com",
        "--password",
        "bench-password",
        "--name",
        "Bench",
    )
    secret = create_key(env, "bench@example.com", "api_keys:manage", "usage:read")
    for index in range(19):  # 20 keys in all
        sitetools(env, "admin", "create-key", "--email", "bench@example.com", "--name", f"k{index}")
    server = subprocess.Popen(
        [sys.executable, "-m", "sitetools.cli.main", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    bare = None
    try:
        wait_up(f"{base}/healthz")
        headers = {"Authorization": f"Bearer {secret}"}
        account_body = httpx.get(f"{base}/v1/account", headers=headers).content
        keys_body = httpx.get(f"{base}/v1/api-keys", headers=headers).content
        assert len(json.loads(keys_body)["data"]) == 20
        bare_env = dict(env, BENCH_BODY=account_body.decode(), BENCH_KEYS_BODY=keys_body.decode())
        bare = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "bare_app.py"), str(bare_port)], env=bare_env
        )
        wait_up(f"http://127.0.0.1:{bare_port}/v1/account")
        results = {}
        for name, path in (("account", "/v1/account"), ("api_keys", "/v1/api-keys")):
            wrk(f"{base}{path}", secret)  # warm-up pass, not counted
            rounds = []
            for _ in range(ROUNDS):  # alternate, so drift on the machine hits both alike
                ours = wrk(f"{base}{path}", secret)
                baseline = wrk(f"http://127.0.0.1:{bare_port}{path}", None)
                rounds.append((ours["rps"] / baseline["rps"], ours, baseline))
            rounds.sort(key=lambda r: r[0])
            ratio, ours, baseline = rounds[len(rounds) // 2]  # the median round
            results[name] = {
                "sitetools": ours,
                "bare": baseline,
                "ratio": round(ratio, 3),
                "ratios": [round(r[0], 3) for r in rounds],
            }
    finally:
        server.terminate()
        if bare:
            bare.terminate()
        shutil.rmtree(data, ignore_errors=True)
    print(
        f"\nGET throughput, SQLite, 1 uvicorn worker, wrk -c{CONNECTIONS} -d{DURATION}s, "
        f"median of {ROUNDS} alternating rounds ({os.cpu_count()} cores)"
    )
    print(
        f"{'endpoint':<22}{'sitetools rps':>15}{'bare rps':>12}{'ratio':>8}"
        f"{'p50 ms':>9}{'p95 ms':>9}  all ratios"
    )
    for name, row in results.items():
        label = "GET /v1/account" if name == "account" else "GET /v1/api-keys (20)"
        print(
            f"{label:<22}{row['sitetools']['rps']:>15.0f}{row['bare']['rps']:>12.0f}"
            f"{row['ratio']:>8.2f}{row['sitetools']['p50_ms']:>9.2f}"
            f"{row['sitetools']['p95_ms']:>9.2f}  {row['ratios']}"
        )
    target = results["account"]["ratio"] >= 0.5
    print(
        f"target: authenticated GET /v1/account >= 50% of bare: "
        f"{'met' if target else 'NOT met'} ({results['account']['ratio']:.0%})"
    )
    write_results("latest.json", results)


if __name__ == "__main__":
    main()
