"""Service configuration: every setting is an environment variable prefixed ``SITETOOLS_``.

``docs/configuration.md`` lists each one with its default; keep the two in step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings", "async_database_url"]


class Settings(BaseSettings):
    """All configuration of one service process, read once at start and passed down."""

    model_config = SettingsConfigDict(env_prefix="SITETOOLS_", extra="ignore")

    data_dir: Path = Path("./.sitetools")
    database_url: str | None = None
    base_url: str = "http://127.0.0.1:8765"
    host: str = "127.0.0.1"
    port: int = 8765
    master_key_file: Path | None = None
    log_level: str = "INFO"
    log_format: Literal["console", "json"] = "console"

    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    db_pool_size: int = Field(default=10, ge=1)
    gil_switch_interval_ms: float = Field(default=1.0, gt=0)

    # Dashboard sessions (decisions: 14 days, idle 2 days).
    session_lifetime_seconds: int = 14 * 24 * 3600
    session_idle_seconds: int = 2 * 24 * 3600
    fresh_sign_in_seconds: int = 300
    sign_in_max_failures: int = 5
    sign_in_max_failures_per_network: int = 30
    sign_in_throttle_seconds: int = 900
    sign_in_link_seconds: int = 900
    dashboard_intent_seconds: int = 900

    # Password hashing (argon2id). Defaults follow RFC 9106's second recommended option.
    password_hash_time_cost: int = 3
    password_hash_memory_kib: int = 65536

    # Plans (decisions: "Limits the specification leaves open").
    free_daily_tool_calls: int = 100
    free_monthly_integrations: int = 3
    premium_daily_tool_calls: int = 5000
    premium_monthly_integrations: int = 50
    quota_reservation_seconds: int = 900

    demo_site_port: int = 8766
    keyless_enabled: bool = True
    keyless_daily_runs_per_network: int = Field(default=20, ge=0)
    keyless_daily_runs: int = Field(default=2000, ge=0)
    webhooks_enabled: bool = True
    builds_enabled: bool = True
    sms_numbers_enabled: bool = False

    # Jobs and the tool runtime (issue 5).
    worker_concurrency: int = Field(default=4, ge=1, le=256)
    job_lease_seconds: int = Field(default=30, ge=5)
    chromium: str = "/usr/lib/chromium/chromium"
    # Comma-separated host:port or CIDR entries tools may reach although not public.
    egress_allow: str = ""
    runtime_memory_mb: int = Field(default=2048, ge=64)
    runtime_max_processes: int = Field(default=64, ge=2)
    runtime_open_files: int = Field(default=1024, ge=64)
    runtime_spare_processes: int = Field(default=3, ge=0, le=64)

    # Webhooks (issue 6). Comma-separated host:port or CIDR entries deliveries may reach
    # although not public (tests, private deployments), and an extra trusted CA (PEM file).
    webhook_allow: str = ""
    webhook_ca_file: Path | None = None
    # spec: "Limits" - the receiver answers within 10 seconds (lower only for tests).
    webhook_timeout_seconds: float = Field(default=10.0, gt=0, le=10)
    webhook_concurrency: int = Field(default=128, ge=1, le=4096)
    webhook_concurrency_per_endpoint: int = Field(default=16, ge=1, le=1024)
    webhook_lease_seconds: int = Field(default=30, ge=2)

    # MCP and OAuth (issue 7; decisions: "Limits the specification leaves open" - tokens).
    # Comma-separated browser origins allowed to call the MCP endpoints besides the service's
    # own, and extra Host header values (behind a proxy) besides the base URL's host.
    allowed_origins: str = ""
    allowed_hosts: str = ""
    oauth_access_token_seconds: int = Field(default=3600, ge=60)
    oauth_refresh_token_seconds: int = Field(default=30 * 24 * 3600, ge=3600)
    oauth_code_seconds: int = Field(default=600, ge=30, le=3600)
    mcp_session_idle_seconds: int = Field(default=1800, ge=30)
    device_sign_in_enabled: bool = True
    device_sign_in_seconds: int = Field(default=600, ge=60, le=3600)
    device_sign_ins_per_network_daily: int = Field(default=20, ge=0)

    @field_validator("base_url")
    @classmethod
    def _strip_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @property
    def resolved_database_url(self) -> str:
        """The async SQLAlchemy URL, defaulting to SQLite under ``data_dir``."""
        if self.database_url:
            return async_database_url(self.database_url)
        return f"sqlite+aiosqlite:///{(self.data_dir / 'sitetools.db').resolve()}"

    @property
    def resolved_master_key_file(self) -> Path:
        return self.master_key_file or self.data_dir / "master.key"

    @property
    def secure_cookies(self) -> bool:
        return self.base_url.startswith("https://")


def async_database_url(url: str) -> str:
    """Accept plain ``postgresql://`` and ``sqlite://`` URLs and pick the async drivers."""
    for plain, driver in (
        ("postgresql://", "postgresql+asyncpg://"),
        ("postgres://", "postgresql+asyncpg://"),
        ("sqlite://", "sqlite+aiosqlite://"),
    ):
        if url.startswith(plain):
            return driver + url[len(plain) :]
    return url
