"""Dashboard pages: sign-in, sign-out, one-time sign-in links, the home page."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from sitetools.accounts import service as accounts
from sitetools.accounts import sessions
from sitetools.core.context import AppServices, Ctx
from sitetools.core.errors import CATALOGUE
from sitetools.dashboard import csrf
from sitetools.dashboard.grants import grant_routes
from sitetools.dashboard.identity import signed_in as signed_in_person
from sitetools.dashboard.jobs import job_routes
from sitetools.operations.rest import SESSION_COOKIE

__all__ = ["mount_dashboard"]

_HERE = Path(__file__).parent
_GENERIC_FAILURE = "Email or password is incorrect."


def _safe_next(value: str | None) -> str:
    """Only local Dashboard paths: an open redirect would help phishing."""
    if value and value.startswith("/dashboard") and not value.startswith("//"):
        return value
    return "/dashboard"


def mount_dashboard(
    app: FastAPI, services: AppServices, db_sessions: async_sessionmaker[AsyncSession]
) -> None:
    templates = Jinja2Templates(directory=str(_HERE / "templates"))
    router = APIRouter(include_in_schema=False)
    settings = services.settings
    cookie_flags: dict[str, Any] = {
        "httponly": True,
        "samesite": "lax",
        "secure": settings.secure_cookies,
        "path": "/",
    }

    def render(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        return templates.TemplateResponse(request, name, context, status_code=status)

    def sign_in_page(
        request: Request,
        *,
        error: str | None = None,
        email: str = "",
        next_path: str = "",
        status: int = 200,
    ) -> Response:
        token = request.cookies.get(csrf.PRE_SESSION_COOKIE) or csrf.new_pre_session_token()
        response = render(
            request,
            "sign_in.html",
            status,
            csrf_token=token,
            error=error,
            email=email,
            next=_safe_next(next_path),
            user=None,
        )
        response.set_cookie(csrf.PRE_SESSION_COOKIE, token, **cookie_flags)
        return response

    def signed_in(response: Response, token: str) -> Response:
        response.set_cookie(
            SESSION_COOKIE, token, max_age=settings.session_lifetime_seconds, **cookie_flags
        )
        return response

    @router.get("/dashboard/sign-in")
    async def sign_in_form(request: Request) -> Response:
        return sign_in_page(request, next_path=request.query_params.get("next", ""))

    @router.post("/dashboard/sign-in")
    async def sign_in_submit(request: Request) -> Response:
        form = await request.form()
        email = str(form.get("email") or "").strip()
        password = str(form.get("password") or "")
        next_path = _safe_next(str(form.get("next") or ""))
        if not csrf.pre_session_ok(request, str(form.get("csrf_token") or "")):
            return sign_in_page(
                request, error="The form expired; please try again.", email=email, status=403
            )
        network = sessions.network_of(request.client.host if request.client else None)
        async with db_sessions() as db:
            ctx = Ctx(db, services)
            try:
                user = await sessions.check_password(ctx, email, password, network)
            except sessions.SignInThrottledError as throttled:
                minutes = max(1, throttled.retry_after_seconds // 60)
                response = sign_in_page(
                    request,
                    error=f"Too many failed sign-ins. Try again in {minutes} minutes.",
                    email=email,
                    status=429,
                )
                response.headers["Retry-After"] = str(throttled.retry_after_seconds)
                return response
            new = await sessions.create_session(ctx, user.id) if user else None
            await db.commit()
        if new is None:
            return sign_in_page(request, error=_GENERIC_FAILURE, email=email, status=401)
        return signed_in(RedirectResponse(next_path, status_code=303), new.token)

    @router.get("/dashboard/sign-in/link")
    async def sign_in_link(request: Request) -> Response:
        async with db_sessions() as db:
            new = await sessions.redeem_sign_in_link(
                Ctx(db, services), request.query_params.get("token", "")
            )
            await db.commit()
        if new is None:
            return sign_in_page(request, error="This sign-in link is no longer valid.", status=400)
        return signed_in(RedirectResponse("/dashboard", status_code=303), new.token)

    @router.get("/dashboard/sign-out")
    async def sign_out_form(request: Request) -> Response:
        async with db_sessions() as db:
            found = await signed_in_person(Ctx(db, services), request)
            await db.commit()
        if found is None:
            return RedirectResponse("/dashboard/sign-in", status_code=303)
        caller, user = found
        token = csrf.session_token(services.keyring, caller.credential_id)
        return render(request, "sign_out.html", csrf_token=token, user=user)

    @router.post("/dashboard/sign-out")
    async def sign_out(request: Request) -> Response:
        form = await request.form()
        async with db_sessions() as db:
            ctx = Ctx(db, services)
            found = await signed_in_person(ctx, request)
            if found is not None:
                caller, _user = found
                if not csrf.session_token_ok(
                    services.keyring, caller.credential_id, str(form.get("csrf_token") or "")
                ):
                    return Response("The form expired; please try again.", status_code=403)
                await sessions.end_session(ctx, caller.credential_id)
            await db.commit()
        response = RedirectResponse("/dashboard/sign-in", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    @router.get("/dashboard")
    async def home(request: Request) -> Response:
        async with db_sessions() as db:
            ctx = Ctx(db, services)
            found = await signed_in_person(ctx, request)
            if found is None:
                await db.rollback()
                target = quote(request.url.path)
                return RedirectResponse(f"/dashboard/sign-in?next={target}", status_code=303)
            caller, user = found
            account = await accounts.get_account(ctx, caller)
            await db.commit()
        return render(
            request,
            "home.html",
            account=account,
            user=user,
            caller=caller,
            base_url=settings.base_url,
            csrf_token=csrf.session_token(services.keyring, caller.credential_id),
        )

    @router.get("/docs/keyless")
    async def keyless(request: Request) -> Response:
        return render(request, "keyless.html", user=None)

    @router.get("/docs/errors")
    async def error_codes(request: Request) -> Response:
        return render(request, "errors.html", codes=sorted(CATALOGUE.items()), user=None)

    app.include_router(router)
    app.include_router(job_routes(services, db_sessions, templates))
    app.include_router(grant_routes(services, db_sessions, templates))
    app.mount("/dashboard/static", StaticFiles(directory=str(_HERE / "static")), name="static")
