"""Dashboard pages of jobs: the watch page, and the protected answer page where the job's
person types answers (website passwords and codes only ever here)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.templating import Jinja2Templates
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from sitetools.core.context import AppServices, Ctx
from sitetools.core.errors import ServiceError
from sitetools.dashboard import csrf
from sitetools.dashboard.identity import signed_in
from sitetools.dashboard.pages import private_page, to_sign_in
from sitetools.jobs import service as jobs

__all__ = ["job_routes"]

_REASONS = {
    "missing_answer": "Please answer this question.",
    "malformed": "This answer is not in the expected form.",
    "password_required": "Please enter the password.",
    "too_long": "This answer is too long.",
    "selection_bounds": "Choose a number of options within the limits.",
    "unoffered_option": "Choose one of the options.",
    "other_not_allowed": "Choose one of the options.",
    "username_not_allowed": "This sign-in does not take a username.",
}


def form_answers(questions: list[dict[str, Any]], form: FormData) -> dict[str, Any]:
    """The answers a form holds, shaped as ``check_answers`` expects them."""
    answers: dict[str, Any] = {}
    for question in questions:
        qid, kind = question["id"], question["type"]
        if kind == "secret" and question.get("secret") == "login":
            answers[qid] = {
                name: str(form.get(f"{qid}.{name}") or "") for name in question["fields"]
            }
        elif kind == "confirm":
            value = form.get(qid)
            answers[qid] = None if value is None else value == "yes"
        elif kind == "choice":
            picked: list[Any] = [str(v) for v in form.getlist(qid)]
            other = str(form.get(f"{qid}.other") or "").strip()
            picked = [v for v in picked if v != "__other__"]
            if other:
                picked.append({"other": other})
            answers[qid] = picked if question["multiple"] else (picked[0] if picked else None)
        else:
            value = form.get(qid)
            answers[qid] = None if value is None else str(value)
    return answers


def job_routes(
    services: AppServices,
    db_sessions: async_sessionmaker[AsyncSession],
    templates: Jinja2Templates,
) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        return private_page(templates, request, name, status, **context)

    @router.get("/dashboard/jobs/{job_id}")
    async def watch(request: Request, job_id: str) -> Response:
        async with db_sessions() as db:
            ctx = Ctx(db, services)
            found = await signed_in(ctx, request, detach=True)
            if found is None:
                return to_sign_in(request)
            caller, user = found
            try:
                job = await jobs.job_for_person(ctx, caller, job_id)
            except ServiceError:
                return page(request, "job_missing.html", 404, user=user, csrf_token="")
            await db.commit()
        return page(
            request,
            "job.html",
            job=job,
            user=user,
            csrf_token=csrf.session_token(services.keyring, caller.credential_id),
        )

    async def answer_page(
        request: Request, job_id: str, answers: dict[str, Any] | None
    ) -> Response:
        token = request.query_params.get("token", "")
        async with db_sessions() as db:
            ctx = Ctx(db, services)
            found = await signed_in(ctx, request, detach=True)
            if found is None:
                return to_sign_in(request)
            caller, user = found
            csrf_token = csrf.session_token(services.keyring, caller.credential_id)
            common: dict[str, Any] = {"user": user, "csrf_token": csrf_token, "job_id": job_id}
            try:
                job, input_request = await jobs.protected_request(ctx, caller, job_id, token)
            except ServiceError as error:
                await db.rollback()
                return page(request, "answer_closed.html", error.status, code=error.code, **common)
            shown = {
                "job": {"id": job.id, "tool_name": job.tool_name, "site_name": job.site_name},
                "questions": list(input_request.questions),
                "expires_at": input_request.expires_at,
            }
            error_text, error_for = None, None
            if answers is not None:
                try:
                    await jobs.answer_protected(ctx, caller, job_id, token, answers)
                    await ctx.commit()
                    return page(request, "answer_done.html", **common)
                except ServiceError as error:
                    error_for = error.details.get("question_id")
                    error_text = _REASONS.get(
                        str(error.details.get("reason")), "That answer does not fit."
                    )
            await db.rollback()
        return page(
            request,
            "answer.html",
            400 if error_text else 200,
            token=token,
            error_text=error_text,
            error_for=error_for,
            **shown,
            **common,
        )

    @router.get("/dashboard/jobs/{job_id}/answer")
    async def answer_form(request: Request, job_id: str) -> Response:
        return await answer_page(request, job_id, None)

    @router.post("/dashboard/jobs/{job_id}/answer")
    async def answer_submit(request: Request, job_id: str) -> Response:
        form = await request.form()
        async with db_sessions() as db:
            ctx = Ctx(db, services)
            found = await signed_in(ctx, request, detach=True)
            await db.rollback()
        if found is None:
            return to_sign_in(request)
        caller, _ = found
        if not csrf.session_token_ok(
            services.keyring, caller.credential_id, str(form.get("csrf_token") or "")
        ):
            return Response("The form expired; reload the page.", status_code=403)
        token = request.query_params.get("token", "")
        async with db_sessions() as db:
            ctx = Ctx(db, services)
            try:
                _, input_request = await jobs.protected_request(ctx, caller, job_id, token)
                questions = input_request.questions
            except ServiceError:
                questions = []
            await db.rollback()
        return await answer_page(request, job_id, form_answers(questions, form))

    return router
