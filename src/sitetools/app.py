"""``create_app(settings)``: the only place the surfaces are assembled."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from sqlalchemy import text
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sitetools.core.clock import Clock, SystemClock
from sitetools.core.config import Settings
from sitetools.core.context import AppServices
from sitetools.core.crypto import Keyring, PasswordHashing, load_or_create_master_key
from sitetools.core.db import create_engine, session_factory
from sitetools.core.fastread import CommittedReader
from sitetools.dashboard.routes import mount_dashboard
from sitetools.mcp_endpoints.endpoint import McpHub
from sitetools.mcp_endpoints.server import McpServers
from sitetools.oauth.routes import oauth_routes
from sitetools.operations.catalog import all_operations
from sitetools.operations.http import HttpMiddleware, install_handlers
from sitetools.operations.openapi import build_openapi
from sitetools.operations.rest import mount_operations
from sitetools.worker.loop import Worker

__all__ = ["create_app"]


def create_app(
    settings: Settings | None = None, *, clock: Clock | None = None, worker: bool = False
) -> FastAPI:
    """The service; ``worker`` also runs the job worker inside this process (embedded)."""
    settings = settings or Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = create_engine(settings.resolved_database_url, settings.db_pool_size)
    database = engine.url.database
    reader = (
        CommittedReader(database)
        if engine.url.get_backend_name() == "sqlite" and database and database != ":memory:"
        else None
    )
    services = AppServices(
        settings=settings,
        clock=clock or SystemClock(),
        keyring=Keyring(load_or_create_master_key(settings.resolved_master_key_file)),
        passwords=PasswordHashing(
            settings.password_hash_time_cost, settings.password_hash_memory_kib
        ),
        reader=reader,
    )
    db_sessions = session_factory(engine)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        embedded = Worker(services, db_sessions, engine) if worker else None
        if embedded is not None:
            embedded.start()
        async with mcp.running():
            yield
        if embedded is not None:
            await embedded.stop()
        await engine.dispose()
        if reader is not None:
            reader.close()

    app = FastAPI(
        title="sitetools",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        # We export no OpenTelemetry data; the probe for providers runs on every request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.services = services
    app.state.engine = engine
    app.state.sessions = db_sessions

    operations = all_operations()
    document = build_openapi(operations, settings.base_url)
    mount_operations(app, operations, services, db_sessions)
    mcp = McpHub(services, db_sessions, McpServers(services, db_sessions, operations, document))
    app.router.routes.extend(
        [
            Route("/mcp", mcp, name="mcp"),
            Route("/mcp/integrations/{integration_id}", mcp, name="mcp_integration"),
            *oauth_routes(services, db_sessions),
        ]
    )

    @app.get("/v1/openapi.json", include_in_schema=False)
    async def openapi_document() -> JSONResponse:
        return JSONResponse(document)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @app.get("/readyz", include_in_schema=False)
    async def readyz(_request: Request) -> Response:
        try:
            async with engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        except Exception:  # the answer is the signal; details go to the log
            return JSONResponse({"status": "unavailable", "database": "unreachable"}, 503)
        return JSONResponse({"status": "ok", "database": "ok"})

    mount_dashboard(app, services, db_sessions)
    install_handlers(app, settings.base_url)
    app.add_middleware(
        HttpMiddleware, base_url=settings.base_url, max_body_bytes=settings.max_body_bytes
    )
    return app
