"""Who is signed in to the Dashboard: the session cookie's person, or nobody."""

from __future__ import annotations

from starlette.requests import Request

from sitetools.accounts.models import User
from sitetools.auth.caller import Caller
from sitetools.auth.resolve import resolve_caller
from sitetools.core.context import Ctx
from sitetools.core.errors import ServiceError
from sitetools.operations.rest import SESSION_COOKIE

__all__ = ["signed_in"]


async def signed_in(
    ctx: Ctx, request: Request, *, detach: bool = False
) -> tuple[Caller, User] | None:
    """The Dashboard session's caller and user; None without a usable session cookie.
    ``detach`` keeps the user readable after the caller's unit of work ends."""
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        return None
    try:
        caller = await resolve_caller(ctx, token)
    except ServiceError:
        return None
    if caller.kind != "session":
        return None
    user = await ctx.db.get(User, caller.user_id)
    if user is None:
        return None
    if detach:
        ctx.db.expunge(user)
    return caller, user
