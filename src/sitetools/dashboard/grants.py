"""Dashboard pages where a person grants access: OAuth consent and device sign-in approval.

Both show who asks, for which account and with which permissions, and act only on a POST
carrying the session's CSRF token.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter
from fastapi.templating import Jinja2Templates
from mcp.server.auth.provider import construct_redirect_uri
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from sitetools.accounts.models import User
from sitetools.auth.caller import Caller
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


@dataclass(frozen=True, slots=True)
class _Visit:
    """A signed-in person on one of these pages, in one unit of work."""

    ctx: Ctx
    caller: Caller
    user: User
    csrf_token: str


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

    @asynccontextmanager
    async def visit(request: Request) -> AsyncIterator[_Visit | None]:
        """The signed-in person (None: send them to sign in); committed when the page is done."""
        async with db_sessions() as db:
            ctx = Ctx(db, services)
            found = await signed_in(ctx, request, detach=True)
            if found is None:
                yield None
                return
            caller, user = found
            yield _Visit(ctx, caller, user, csrf.session_token(keyring, caller.credential_id))
            await db.commit()

    def forged(request: Request, person: _Visit, form: Any) -> Response | None:
        """A decision must carry the session's CSRF token."""
        submitted = str(form.get("csrf_token") or "")
        if csrf.session_token_ok(keyring, person.caller.credential_id, submitted):
            return None
        return invalid(request, person, 403)

    def invalid(request: Request, person: _Visit, status: int) -> Response:
        return page(
            request, "grant_invalid.html", status, user=person.user, csrf_token=person.csrf_token
        )

    @router.get(CONSENT_PATH)
    async def consent_page(request: Request) -> Response:
        sealed = request.query_params.get("request", "")
        async with visit(request) as person:
            if person is None:
                return to_sign_in(request)
            consent = oauth.read_consent(person.ctx, sealed)
            client = await oauth.client(person.ctx, consent.client_id) if consent else None
        if consent is None or client is None:
            return invalid(request, person, 400)
        granted = oauth.granted_permissions(person.caller, consent, services.settings.base_url)
        return page(
            request,
            "consent.html",
            user=person.user,
            csrf_token=person.csrf_token,
            client=client,
            redirect_host=urlsplit(consent.redirect_uri).netloc,
            account_name=person.caller.account_name,
            resource=consent.resource,
            permissions=sorted(p.value for p in granted),
            sealed=sealed,
        )

    @router.post(CONSENT_PATH)
    async def consent_decision(request: Request) -> Response:
        form = await request.form()
        async with visit(request) as person:
            if person is None:
                return to_sign_in(request)
            if (refused := forged(request, person, form)) is not None:
                return refused
            consent = oauth.read_consent(person.ctx, str(form.get("request") or ""))
            if consent is None:
                return invalid(request, person, 400)
            approved = form.get("decision") == "approve"
            try:
                code = await oauth.decide(person.ctx, person.caller, consent, approved=approved)
            except ServiceError:
                code, approved = None, False
        if code is None:
            target = construct_redirect_uri(
                consent.redirect_uri,
                error="access_denied",
                error_description=None if approved else "The person did not approve this app.",
                state=consent.state,
            )
        else:
            target = construct_redirect_uri(consent.redirect_uri, code=code, state=consent.state)
        return RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})

    @router.get(DEVICE_PATH)
    async def device_page(request: Request) -> Response:
        code = request.query_params.get("code", "")
        async with visit(request) as person:
            if person is None:
                return to_sign_in(request)
            pending = await devices.pending_for_code(person.ctx, code) if code else None
        return page(
            request,
            "device.html",
            user=person.user,
            csrf_token=person.csrf_token,
            code=devices.normalize_code(code) if code else "",
            pending=pending,
            account_name=person.caller.account_name,
            permissions=devices.granted_permissions(person.caller) if pending else [],
            done=None,
        )

    @router.post(DEVICE_PATH)
    async def device_decision(request: Request) -> Response:
        form = await request.form()
        code = str(form.get("code") or "")
        async with visit(request) as person:
            if person is None:
                return to_sign_in(request)
            if (refused := forged(request, person, form)) is not None:
                return refused
            approved = form.get("decision") == "approve"
            decided = await devices.decide(person.ctx, person.caller, code, approved=approved)
        return page(
            request,
            "device.html",
            200 if decided else 400,
            user=person.user,
            csrf_token=person.csrf_token,
            code=devices.normalize_code(code),
            pending=None,
            account_name=person.caller.account_name,
            permissions=[],
            done=("approved" if approved else "denied") if decided else "invalid",
        )

    return router
