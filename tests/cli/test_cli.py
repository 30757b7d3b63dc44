"""The ``sitetools`` command against a real database and a real server process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support import free_port


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sitetools.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _wait_healthy(port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.1)


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITETOOLS_")}
    env.update(
        SITETOOLS_DATA_DIR=str(tmp_path / "data"),
        SITETOOLS_PASSWORD_HASH_MEMORY_KIB="1024",
        SITETOOLS_PASSWORD_HASH_TIME_COST="1",
        SITETOOLS_LOG_FORMAT="json",
    )
    return env


def test_admin_commands_and_serve(cli_env: dict[str, str], tmp_path: Path) -> None:
    assert _run(cli_env, "migrate").returncode == 0
    key_file = tmp_path / "data" / "master.key"
    made = _run(
        cli_env,
        "admin",
        "create-account",
        "--email",
        "Owner@Example.com",
        "--password",
        "pw-123456",
        "--type",
        "business",
        "--name",
        "Acme",
    )
    assert made.returncode == 0, made.stderr
    ids = json.loads(made.stdout)
    assert ids["account_id"].startswith("acct_")
    assert ids["user_id"].startswith("user_")
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    member = _run(
        cli_env,
        "admin",
        "add-member",
        "--account",
        ids["account_id"],
        "--email",
        "m@example.com",
        "--password",
        "pw-123456",
        "--role",
        "admin",
    )
    assert member.returncode == 0, member.stderr
    dup = _run(
        cli_env,
        "admin",
        "create-account",
        "--email",
        "x@example.com",
        "--password",
        "p",
        "--plan",
        "gold",
    )
    assert dup.returncode != 0
    session = _run(cli_env, "admin", "create-session", "--email", "owner@example.com")
    assert session.stdout.strip().startswith("sst_")
    key = _run(
        cli_env,
        "admin",
        "create-key",
        "--email",
        "m@example.com",
        "--name",
        "cli",
        "--permission",
        "team:manage",
        "--permission",
        "usage:read",
    )
    assert key.returncode == 0, key.stderr
    secret = json.loads(key.stdout)["secret"]
    assert secret.startswith("svc_")

    port = free_port()
    env = dict(cli_env, SITETOOLS_PORT=str(port), SITETOOLS_BASE_URL=f"http://127.0.0.1:{port}")
    server = subprocess.Popen(
        [sys.executable, "-m", "sitetools.cli.main", "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait_healthy(port)
        base = f"http://127.0.0.1:{port}"
        account = httpx.get(f"{base}/v1/account", headers={"Authorization": f"Bearer {secret}"})
        assert account.status_code == 200
        assert account.json()["role"] == "admin"
        assert account.json()["name"] == "Acme"
        assert httpx.get(f"{base}/v1/openapi.json").status_code == 200
        assert httpx.get(f"{base}/readyz").json()["database"] == "ok"
    finally:
        server.terminate()  # SIGTERM: graceful shutdown
        output, _ = server.communicate(timeout=20)
    # uvicorn finishes in-flight work, then re-raises SIGTERM as its exit status.
    assert server.returncode in (0, -15), output
    assert "Application shutdown complete." in output
    assert secret not in output
    assert '"request_id"' in output


def test_serve_demo_creates_the_owner_once_and_prints_a_sign_in_link(
    cli_env: dict[str, str],
) -> None:
    port, shop_port = free_port(), free_port()
    env = dict(
        cli_env,
        SITETOOLS_PORT=str(port),
        SITETOOLS_BASE_URL=f"http://127.0.0.1:{port}",
        SITETOOLS_DEMO_SITE_PORT=str(shop_port),
    )
    for _ in range(2):
        server = subprocess.Popen(
            [sys.executable, "-m", "sitetools.cli.main", "serve", "--demo"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            _wait_healthy(port)
            deadline = time.monotonic() + 30
            while True:  # the Demo Shop runs beside the service
                try:
                    products = httpx.get(f"http://127.0.0.1:{shop_port}/api/products")
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "demo site did not start"
                    time.sleep(0.1)
            assert products.json()["products"]
        finally:
            server.terminate()
            output, _ = server.communicate(timeout=20)
        with pytest.raises(httpx.TransportError):  # stopped with the service
            httpx.get(f"http://127.0.0.1:{shop_port}/api/products")
        assert "alice" in output  # seed users and their TOTP secrets are printed
        assert f"http://127.0.0.1:{port}/dashboard/sign-in/link?token=" in output
        assert "demo@sitetools.local" in output


def test_tools_import_and_export_round_trip(cli_env: dict[str, str], tmp_path: Path) -> None:
    from sitetools.tools.package import load_integration
    from tests.tools.packages import tool_toml, write_package

    assert _run(cli_env, "migrate").returncode == 0
    root = write_package(
        tmp_path / "pkg",
        key="roundtrip",
        site_url="https://roundtrip.example",
        tools={"s": tool_toml("Search things", "search_things")},
    )
    both = _run(cli_env, "tools", "import", str(root), "--public", "--account", "acct_x")
    assert both.returncode != 0
    made = _run(cli_env, "tools", "import", str(root), "--public")
    assert made.returncode == 0, made.stderr
    result = json.loads(made.stdout)
    assert len(result["created"]) == 1
    again = json.loads(_run(cli_env, "tools", "import", str(root), "--public").stdout)
    assert again["unchanged"] == result["created"]
    out = tmp_path / "exported"
    exported = _run(cli_env, "tools", "export", result["integration_id"], str(out))
    assert exported.returncode == 0, exported.stderr
    original, copy = load_integration(root), load_integration(out)
    assert copy.key == original.key
    assert [t.digest for t in copy.tools] == [t.digest for t in original.tools]
    (root / "tools/s/tool.toml").write_text("name = 5\n")
    broken = _run(cli_env, "tools", "import", str(root), "--public")
    assert broken.returncode == 1
    assert "tools/s/tool.toml" in broken.stderr
