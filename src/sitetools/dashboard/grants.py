"""Dashboard pages where a person grants access: OAuth consent and device sign-in approval.

Both show who asks, for which account and with which permissions, and act only on a POST
carrying the session's CSRF token.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.templating import Jinja2Templates
from mcp.server.auth.provider import construct_redirect_uri
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from sitetools.connect import service as devices
from sitetools.core.context import AppServices, Ctx
from sitetools.core.errors import ServiceError
from sitetools.dashboard import csrf
from sitetools.dashboard.identity import signed_in
from sitetools.dashboard.pages import private_page, to_sign_in
from sitetools.oauth import service as oauth
from sitetools.oauth.provider import CONSENT_PATH

__all__ = ["grant_routes"]

DEVICE_PATH = "/dashboard/device"


def form_token(form: Any) -> str:
    return str(form.get("csrf_token") or "")


def grant_routes(
    services: AppServices,
    db_sessions: async_sessionmaker[AsyncSession],
    templates: Jinja2Templates,
) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    keyring = services.keyring

    def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        response = private_page(templates, request, name, status, **context)
        # Consent must not be clickjacked into an approval.
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Content-Security-Policy"] = "frame-ancestors 'none'"
        return response

    @router.get(CONSENT_PATH)
    async def consent_page(request: Request) -> Response:
        sealed = request.query_params.get("request", "")
        async with db_sessions() as db:
            ctx = Ctx(db, services)
            found = await signed_in(ctx, request, detach=True)
            if found is None:
                return to_sign_in(request)
            caller, user = found
            consent = oauth.read_consent(ctx, sealed)
            client = await oauth.client(ctx, consent.client_id) if consent else None
            await db.commit()
        token = csrf.session_token(keyring, caller.credential_id)
        if consent is None or client is None:
            return page(request, "grant_invalid.html", 400, user=user, csrf_token=token)
        wanted = consent.scopes or sorted(p.value for p in caller.permissions)
        granted = sorted(
            set(wanted)
            & {p.value for p in caller.permissions}
            & {p.value for p in oauth.resource_permissions(consent.resource, ctx.settings.base_url)}
        )
        return page(
            request,
            "consent.html",
            user=user,
            csrf_token=token,
            client=client,
            redirect_host=consent.redirect_uri.split("/")[2]
            if "//" in consent.redirect_uri
            else "",
            account_name=caller.account_name,
            resource=consent.resource,
            permissions=granted,
            sealed=sealed,
        )

    @router.post(CONSENT_PATH)
    async def consent_decision(request: Request) -> Response:
        form = await request.form()
        sealed = str(form.get("request") or "")
        async with db_sessions() as db:
            ctx = Ctx(db, services)
            found = await signed_in(ctx, request, detach=True)
            if found is None:
                return to_sign_in(request)
            caller, user = found
            token = csrf.session_token(keyring, caller.credential_id)
            if not csrf.session_token_ok(
                keyring, caller.credential_id, str(form.get("csrf_token"))
            ):
                return page(request, "grant_invalid.html", 403, user=user, csrf_token=token)
            consent = oauth.read_consent(ctx, sealed)
            if consent is None:
                return page(request, "grant_invalid.html", 400, user=user, csrf_token=token)
            approved = form.get("decision") == "approve"
            try:
                code = await oauth.decide(ctx, caller, consent, approved=approved)
            except ServiceError:
                code = None
                approved = False
            await db.commit()
        if code is None:
            target = construct_redirect_uri(
                consent.redirect_uri,
                error="access_denied",
                error_description="The person did not approve this app." if not approved else None,
                state=consent.state,
            )
        else:
            target = construct_redirect_uri(consent.redirect_uri, code=code, state=consent.state)
        return RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})

    @router.get(DEVICE_PATH)
    async def device_page(request: Request) -> Response:
        code = request.query_params.get("code", "")
        async with db_sessions() as db:
            ctx = Ctx(db, services)
            found = await signed_in(ctx, request, detach=True)
            if found is None:
                return to_sign_in(request)
            caller, user = found
            pending = await devices.pending_for_code(ctx, code) if code else None
            await db.commit()
        return page(
            request,
            "device.html",
            user=user,
            csrf_token=csrf.session_token(keyring, caller.credential_id),
            code=devices.normalize_code(code) if code else "",
            pending=pending,
            account_name=caller.account_name,
            permissions=devices.granted_permissions(caller) if pending else [],
            done=None,
        )

    @router.post(DEVICE_PATH)
    async def device_decision(request: Request) -> Response:
        form = await request.form()
        code = str(form.get("code") or "")
        async with db_sessions() as db:
            ctx = Ctx(db, services)
            found = await signed_in(ctx, request, detach=True)
            if found is None:
                return to_sign_in(request)
            caller, user = found
            token = csrf.session_token(keyring, caller.credential_id)
            if not csrf.session_token_ok(
                keyring, caller.credential_id, str(form.get("csrf_token"))
            ):
                return page(request, "grant_invalid.html", 403, user=user, csrf_token=token)
            approved = form.get("decision") == "approve"
            decided = await devices.decide(ctx, caller, code, approved=approved)
            await db.commit()
        return page(
            request,
            "device.html",
            200 if decided else 400,
            user=user,
            csrf_token=token,
            code=devices.normalize_code(code),
            pending=None,
            account_name=caller.account_name,
            permissions=[],
            done=("approved" if approved else "denied") if decided else "invalid",
        )

    return router
