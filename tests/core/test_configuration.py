"""Every setting is documented in docs/configuration.md, and URLs are normalised."""

from __future__ import annotations

from pathlib import Path

from sitetools.core.config import Settings, async_database_url

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_every_setting_is_documented() -> None:
    text = DOC.read_text()
    for name in Settings.model_fields:
        assert f"`SITETOOLS_{name.upper()}`" in text, name


def test_defaults(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for name in Settings.model_fields:
        monkeypatch.delenv(f"SITETOOLS_{name.upper()}", raising=False)
    settings = Settings()
    assert settings.port == 8765
    assert settings.base_url == "http://127.0.0.1:8765"
    assert settings.data_dir == Path("./.sitetools")
    assert settings.resolved_database_url.startswith("sqlite+aiosqlite:///")
    assert settings.resolved_database_url.endswith(".sitetools/sitetools.db")
    assert settings.resolved_master_key_file == Path("./.sitetools/master.key")


def test_environment_overrides(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SITETOOLS_BASE_URL", "https://svc.example/")
    monkeypatch.setenv("SITETOOLS_DATABASE_URL", "postgresql://u@h:5432/d")
    settings = Settings()
    assert settings.base_url == "https://svc.example"
    assert settings.secure_cookies
    assert settings.resolved_database_url == "postgresql+asyncpg://u@h:5432/d"


def test_async_database_urls() -> None:
    assert async_database_url("sqlite:///x.db") == "sqlite+aiosqlite:///x.db"
    assert async_database_url("postgres://a@b/c") == "postgresql+asyncpg://a@b/c"
    assert async_database_url("postgresql+asyncpg://a@b/c") == "postgresql+asyncpg://a@b/c"
