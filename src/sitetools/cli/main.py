"""The ``sitetools`` command: serve, migrate, admin."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import secrets
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer
import uvicorn
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from sitetools.accounts import service as accounts
from sitetools.accounts import sessions
from sitetools.auth.permissions import Permission, Role
from sitetools.core.clock import SystemClock
from sitetools.core.config import Settings
from sitetools.core.context import AppServices, Ctx
from sitetools.core.crypto import Keyring, PasswordHashing, load_or_create_master_key
from sitetools.core.db import create_engine, session_factory
from sitetools.core.errors import ServiceError
from sitetools.core.logging import configure_logging
from sitetools.core.migrate import migrate as run_migrations
from sitetools.keys import service as keys
from sitetools.tools import service as catalog
from sitetools.tools.package import PackageError, load_integration, write_integration

__all__ = ["app"]

app = typer.Typer(
    help="sitetools: tools that operate on websites, over REST, MCP and a Dashboard.",
    pretty_exceptions_enable=False,
)
admin = typer.Typer(help="Administration: accounts, members, sessions, keys.")
app.add_typer(admin, name="admin")
tools_cli = typer.Typer(help="Tool packages: import and export integrations.")
app.add_typer(tools_cli, name="tools")

T = TypeVar("T")


def _settings() -> Settings:
    settings = Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return settings


def _services(
    settings: Settings, pool_size: int | None = None
) -> tuple[AppServices, AsyncEngine, async_sessionmaker[AsyncSession]]:
    engine = create_engine(settings.resolved_database_url, pool_size or settings.db_pool_size)
    services = AppServices(
        settings=settings,
        clock=SystemClock(),
        keyring=Keyring(load_or_create_master_key(settings.resolved_master_key_file)),
        passwords=PasswordHashing(
            settings.password_hash_time_cost, settings.password_hash_memory_kib
        ),
    )
    return services, engine, session_factory(engine)


def _in_transaction(settings: Settings, work: Callable[[Ctx], Awaitable[T]]) -> T:
    """Run ``work`` in one committed transaction against the configured database."""

    async def main() -> T:
        services, engine, db_sessions = _services(settings, pool_size=2)
        try:
            async with db_sessions() as db:
                result = await work(Ctx(db, services))
                await db.commit()
                return result
        finally:
            await engine.dispose()

    try:
        return asyncio.run(main())
    except ServiceError as error:
        typer.echo(json.dumps({"error": {"code": error.code, "message": error.message}}), err=True)
        raise typer.Exit(1) from None


def _print(data: dict[str, Any]) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


@app.command()
def migrate() -> None:
    """Apply database migrations."""
    settings = _settings()
    configure_logging(settings.log_level, settings.log_format)
    run_migrations(settings.resolved_database_url)
    typer.echo("database is up to date")


def _ensure_demo_owner(settings: Settings) -> None:
    """``make run``: a demo owner on first start, and a sign-in link every start."""
    marker = settings.data_dir / "demo-owner.json"
    email = "demo@sitetools.local"
    if not marker.exists():
        password = secrets.token_urlsafe(12)

        async def create(ctx: Ctx) -> None:
            await accounts.create_account(
                ctx, email=email, password=password, name="Demo", first_name="Demo"
            )

        _in_transaction(settings, create)
        marker.write_text(json.dumps({"email": email, "password": password}))
        marker.chmod(0o600)
    demo = json.loads(marker.read_text())

    async def link(ctx: Ctx) -> str:
        return await sessions.sign_in_link(ctx, demo["email"])

    url = _in_transaction(settings, link)
    typer.echo(
        f"\n  sitetools is starting on {settings.base_url}\n"
        f"  REST API        {settings.base_url}/v1\n"
        f"  OpenAPI         {settings.base_url}/v1/openapi.json\n"
        f"  Dashboard       {settings.base_url}/dashboard\n"
        f"  Sign in         {url}\n"
        f"                  (works once, for 15 minutes; or sign in as "
        f"{demo['email']} / {demo['password']})\n"
    )


DEMO_INTEGRATION = Path(__file__).resolve().parents[3] / "examples/integrations/demo-shop"


def _demo_settings(settings: Settings) -> Settings:
    """The Demo Shop listens on loopback: admit it by name (``SITETOOLS_EGRESS_ALLOW``)."""
    entry = f"127.0.0.1:{settings.demo_site_port}"
    allowed = [e for e in settings.egress_allow.split(",") if e.strip()]
    if entry not in allowed:
        allowed.append(entry)
    return settings.model_copy(update={"egress_allow": ",".join(allowed)})


def _import_demo_integration(settings: Settings) -> None:
    """Import ``examples/integrations/demo-shop`` as public, pointed at the demo port."""
    if not DEMO_INTEGRATION.is_dir():
        typer.echo(f"  (no demo integration at {DEMO_INTEGRATION}; skipped)")
        return
    package = load_integration(DEMO_INTEGRATION)
    site = f"http://127.0.0.1:{settings.demo_site_port}"
    package = dataclasses.replace(package, site_url=site)

    async def work(ctx: Ctx) -> Any:
        return await catalog.import_package(ctx, package, account_id=None)

    result = _in_transaction(settings, work)
    typer.echo(f"  Demo integration {result.integration_id} ({site}), public")


def _die_with_parent() -> None:
    """In a child process: the kernel sends it SIGTERM when the parent dies (Linux).

    uvicorn ends the process by re-raising SIGTERM after its graceful shutdown, so cleanup in
    ``finally`` never runs then; this keeps the demo site from outliving the service.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


@app.command()
def serve(
    demo: Annotated[
        bool,
        typer.Option(
            help="Start the Demo Shop beside the service, import its integration as public, "
            "create the demo owner and print a sign-in link."
        ),
    ] = False,
    no_worker: Annotated[
        bool, typer.Option("--no-worker", help="Run no job worker in this process.")
    ] = False,
) -> None:
    """Migrate, then serve the API, MCP and Dashboard (with an embedded job worker)."""
    settings = _settings()
    configure_logging(settings.log_level, settings.log_format)
    run_migrations(settings.resolved_database_url)
    shop = None
    if demo:
        settings = _demo_settings(settings)
        _import_demo_integration(settings)
        _ensure_demo_owner(settings)
        # The demo website beside the service, stopped with it (its own process and port).
        shop = subprocess.Popen(  # noqa: S603 - our own command, fixed arguments
            [
                sys.executable,
                "-m",
                "sitetools.cli.main",
                "demo-site",
                "--port",
                str(settings.demo_site_port),
            ],
            preexec_fn=_die_with_parent,  # no threads exist yet, so preexec_fn is safe
        )
    from sitetools.app import create_app

    # The async SQLite driver runs each statement on a helper thread, which must win the GIL
    # back from a busy event loop; at the default 5 ms switch interval every statement can wait
    # that long under load. 1 ms keeps that wait short at a small cost in context switches.
    sys.setswitchinterval(settings.gil_switch_interval_ms / 1000)
    try:
        uvicorn.run(
            create_app(settings, worker=not no_worker),
            host=settings.host,
            port=settings.port,
            log_config=None,
            access_log=False,  # our own access line carries the request id
            proxy_headers=True,
            timeout_graceful_shutdown=10,
        )
    finally:
        if shop is not None:
            shop.terminate()
            shop.wait(timeout=10)


@app.command()
def worker(
    concurrency: Annotated[
        int | None, typer.Option(help="Runs at once (default SITETOOLS_WORKER_CONCURRENCY).")
    ] = None,
) -> None:
    """Run a job worker (scale-out with PostgreSQL: any number of these processes)."""
    settings = _settings()
    configure_logging(settings.log_level, settings.log_format)
    run_migrations(settings.resolved_database_url)
    asyncio.run(_run_worker(settings, concurrency))


async def _run_worker(settings: Settings, concurrency: int | None) -> None:
    from sitetools.worker.loop import Worker

    services, engine, sessions = _services(settings)
    loop_worker = Worker(services, sessions, engine, concurrency=concurrency)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    loop_worker.start()
    await stop.wait()
    await loop_worker.stop()
    await engine.dispose()


@admin.command("create-account")
def create_account(
    email: Annotated[str, typer.Option()],
    password: Annotated[str, typer.Option()],
    type_: Annotated[str, typer.Option("--type")] = "personal",
    plan: Annotated[str | None, typer.Option()] = None,
    name: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Create an account with its owner; prints account_id and user_id."""
    if type_ not in ("personal", "business", "service"):
        raise typer.BadParameter("--type must be personal, business or service")
    if plan not in (None, "free", "premium"):
        raise typer.BadParameter("--plan must be free or premium")
    account_type: accounts.AccountType = type_  # type: ignore[assignment]
    chosen: Literal["free", "premium"] | None = plan  # type: ignore[assignment]

    async def work(ctx: Ctx) -> dict[str, Any]:
        account, user, _ = await accounts.create_account(
            ctx, email=email, password=password, account_type=account_type, plan=chosen, name=name
        )
        return {"account_id": account.id, "user_id": user.id}

    _print(_in_transaction(_settings(), work))


@admin.command("add-member")
def add_member(
    account: Annotated[str, typer.Option()],
    email: Annotated[str, typer.Option()],
    password: Annotated[str, typer.Option()],
    role: Annotated[str, typer.Option()] = "member",
) -> None:
    """Add a person to a Business account's team."""
    try:
        chosen = Role(role)
    except ValueError:
        raise typer.BadParameter("--role must be owner, admin or member") from None

    async def work(ctx: Ctx) -> dict[str, Any]:
        user, membership = await accounts.add_member(
            ctx, account_id=account, email=email, password=password, role=chosen
        )
        return {"account_id": account, "user_id": user.id, "role": membership.role}

    _print(_in_transaction(_settings(), work))


@admin.command("create-session")
def create_session(email: Annotated[str, typer.Option()]) -> None:
    """Print a Dashboard session token (counts as a fresh sign-in)."""

    async def work(ctx: Ctx) -> str:
        user = await accounts.find_user(ctx, email)
        return (await sessions.create_session(ctx, user.id)).token

    typer.echo(_in_transaction(_settings(), work))


@admin.command("sign-in-link")
def sign_in_link(email: Annotated[str, typer.Option()]) -> None:
    """Print a one-time Dashboard sign-in link."""

    async def work(ctx: Ctx) -> str:
        return await sessions.sign_in_link(ctx, email)

    typer.echo(_in_transaction(_settings(), work))


@admin.command("create-key")
def create_key(
    email: Annotated[str, typer.Option()],
    name: Annotated[str, typer.Option()],
    permission: Annotated[list[str] | None, typer.Option()] = None,
    expires_in_days: Annotated[int, typer.Option()] = 90,
    integration: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Create an API key for the person's first account; prints the secret once."""
    for value in permission or []:
        try:
            Permission(value)
        except ValueError:
            raise typer.BadParameter(f"unknown permission {value!r}") from None

    async def work(ctx: Ctx) -> dict[str, Any]:
        user = await accounts.find_user(ctx, email)
        new = await sessions.create_session(ctx, user.id)
        from sitetools.auth.resolve import resolve_caller
        from sitetools.keys.schemas import CreateKeyIn

        caller = await resolve_caller(ctx, new.token)
        await sessions.end_session(ctx, new.id)
        data = CreateKeyIn.model_validate(
            {
                "name": name,
                "permissions": permission or None,
                "expires_in_days": expires_in_days,
                "integration_id": integration,
            }
        )
        created = await keys.create_key(ctx, caller, data)
        return created.model_dump(mode="json")

    _print(_in_transaction(_settings(), work))


@app.command("demo-site")
def demo_site(
    port: Annotated[int, typer.Option(help="Port for the demo shop")] = 8766,
    host: Annotated[str, typer.Option(help="Address to listen on")] = "127.0.0.1",
) -> None:
    """Serve "Demo Shop", the website the demo integration's tools work on."""
    from sitetools.demo.site import create_demo_site

    settings = _settings()
    configure_logging(settings.log_level, settings.log_format)
    site, store = create_demo_site(settings.data_dir / "demo-shop.db")
    typer.echo(f"\n  Demo Shop on http://{host}:{port}\n  Seed users (password, TOTP secret):")
    for user in store.seed():
        typer.echo(f"    {user.username:<8} {user.password:<18} {user.totp_secret}")
    typer.echo("")
    uvicorn.run(site, host=host, port=port, log_config=None, access_log=False)


@tools_cli.command("import")
def tools_import(
    path: Annotated[Path, typer.Argument(help="An integration folder (integration.toml, tools/)")],
    account: Annotated[str | None, typer.Option(help="Private to this account")] = None,
    public: Annotated[bool, typer.Option(help="Public: every account sees it")] = False,
) -> None:
    """Load or update an integration: a new version per changed tool."""
    if public == (account is not None):
        raise typer.BadParameter("give exactly one of --account ID or --public")
    try:
        package = load_integration(path)
    except PackageError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None

    async def work(ctx: Ctx) -> dict[str, Any]:
        if account is not None:
            await accounts.load_account(ctx, account)
        result = await catalog.import_package(ctx, package, account_id=account)
        return dataclasses.asdict(result)

    _print(_in_transaction(_settings(), work))


@tools_cli.command("export")
def tools_export(
    integration_id: Annotated[str, typer.Argument(metavar="ID")],
    path: Annotated[Path, typer.Argument(help="Folder to write the integration into")],
) -> None:
    """Write an integration and its tools' published files back to a folder."""

    async def work(ctx: Ctx) -> tuple[Any, Any]:
        return await catalog.integration_tree(ctx, integration_id)

    package, trees = _in_transaction(_settings(), work)
    write_integration(path, package, trees)
    typer.echo(f"wrote {len(trees)} tools to {path}")


if __name__ == "__main__":
    app()
