"""What every Dashboard page about one person's job or grant shares: the way to sign-in and a
private answer (never cached, no referrer leaking its token-bearing URL)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi.templating import Jinja2Templates
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

__all__ = ["private_page", "to_sign_in"]


def to_sign_in(request: Request) -> Response:
    """Sign in first, then come back to this very URL."""
    target = quote(request.url.path + (f"?{request.url.query}" if request.url.query else ""))
    return RedirectResponse(f"/dashboard/sign-in?next={target}", status_code=303)


def private_page(
    templates: Jinja2Templates, request: Request, name: str, status: int = 200, **context: Any
) -> Response:
    response = templates.TemplateResponse(request, name, context, status_code=status)
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
