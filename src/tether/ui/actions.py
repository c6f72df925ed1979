"""The UI's actions: form POSTs (CSRF-checked) that redirect to a page when they succeed and
show the page again with the reason when they do not."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from tether.core.errors import NotFound, TetherError, UsageError
from tether.runtime.service import Service
from tether.ui import views
from tether.ui.auth import Owned, session_cookie
from tether.ui.pages import next_page
from tether.ui.render import UiRoute, page
from tether.ui.security import (
    CsrfRejected,
    check_csrf,
    check_origin,
    clear_session_cookie,
    set_session_cookie,
)

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)
_FORM = "application/x-www-form-urlencoded"


async def read_form(request: Request, *, csrf: bool = True) -> dict[str, str]:
    """The fields of a form POST from one of the UI's own pages."""
    if request.headers.get("content-type", "").split(";")[0].strip() != _FORM:
        raise CsrfRejected("only the UI's own forms can post here")
    try:
        fields = dict(
            parse_qsl((await request.body()).decode(), keep_blank_values=True, max_num_fields=20)
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise CsrfRejected("the form could not be read") from exc
    if csrf:
        check_csrf(request, fields.get("csrf"))
    else:
        check_origin(request)
    return fields


def _to(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303)


@router.post("/login")
async def login(request: Request) -> Response:
    """Check the key, start a UI session (its token goes in an http-only cookie; the key does
    not), go where the user was going."""
    form = await read_form(request, csrf=False)
    goal = next_page(form.get("next"))
    if not request.app.state.ui.auth:
        return _to(goal)
    key = form.get("key", "").strip()
    token = await request.app.state.ui_sessions.start(key) if key else None
    if token is not None:
        response = _to(goal)
        set_session_cookie(request, response, token)
        return response
    error = "That key is not valid (unknown or revoked)." if key else "Enter an API key."
    return page(request, "login.html", status=401, next=goal, error=error)


@router.post("/logout")
async def logout(request: Request) -> Response:
    """End the UI session on the server (its cookie is worth nothing after) and in the
    browser."""
    await read_form(request, csrf=False)
    token = session_cookie(request.scope)
    if token is not None and request.app.state.ui.auth:
        await request.app.state.ui_sessions.end(token)
    response = _to("/ui/login")
    clear_session_cookie(request, response)
    return response


@router.post("/sessions")
async def create_session(request: Request, svc: Owned) -> Response:
    form = await read_form(request)
    session = await svc.create_session(title=form.get("title", "").strip() or None)
    return _to(f"/ui/sessions/{session.id}")


async def _session_again(
    request: Request, svc: Service, session_id: str, form: str, error: TetherError, values: Any
) -> Response:
    context = await views.session_view(svc, session_id, {})
    return page(
        request,
        "session.html",
        status=error.http_status,
        errors={form: error.message},
        values=values,
        canonical=f"/ui/sessions/{session_id}",
        **context,
    )


@router.post("/sessions/{session_id}/close")
async def close_session(request: Request, svc: Owned, session_id: str) -> Response:
    await read_form(request)
    await svc.close_session(session_id)
    return _to(f"/ui/sessions/{session_id}")


@router.post("/sessions/{session_id}/runs")
async def start_run(request: Request, svc: Owned, session_id: str) -> Response:
    """Start a run (agent, goal, input JSON) and follow it on its page."""
    form = await read_form(request)
    try:
        run = await svc.create_run(
            session_id,
            form.get("goal", ""),
            agent=form.get("agent") or None,
            input=_json_object(form.get("input", "")),
            if_busy=form.get("if_busy") or "reject",
        )
    except TetherError as error:
        if _gone(error):
            raise
        return await _session_again(request, svc, session_id, "run", error, form)
    return _to(f"/ui/runs/{run.id}")


@router.post("/sessions/{session_id}/messages")
async def add_message(request: Request, svc: Owned, session_id: str) -> Response:
    form = await read_form(request)
    try:
        await svc.add_message(session_id, form.get("role") or "user", form.get("content", ""))
    except TetherError as error:
        if _gone(error):
            raise
        return await _session_again(request, svc, session_id, "message", error, form)
    return _to(f"/ui/sessions/{session_id}#conversation")


async def _run_again(
    request: Request,
    svc: Service,
    run_id: str,
    form: str,
    error: TetherError,
    values: dict[str, str] | None = None,
) -> Response:
    context = await views.run_view(svc, run_id)
    return page(
        request,
        "run.html",
        status=error.http_status,
        errors={form: error.message},
        values=values or {},
        canonical=f"/ui/runs/{run_id}",
        **context,
    )


@router.post("/runs/{run_id}/cancel")
async def cancel_run(request: Request, svc: Owned, run_id: str) -> Response:
    await read_form(request)
    try:
        await svc.cancel_run(run_id, reason="cancelled from the web UI")
    except TetherError as error:
        if _gone(error):
            raise
        return await _run_again(request, svc, run_id, "cancel", error)
    return _to(f"/ui/runs/{run_id}")


@router.post("/runs/{run_id}/resume")
async def resume_run(request: Request, svc: Owned, run_id: str) -> Response:
    """Give a waiting run what it asked for: the text typed, or JSON when asked to parse it."""
    form = await read_form(request)
    text = form.get("input", "")
    try:
        answer = _json(text, "input") if form.get("as_json") else text
        await svc.resume_run(run_id, answer)
    except TetherError as error:
        if _gone(error):
            raise
        return await _run_again(request, svc, run_id, "resume", error, form)
    return _to(f"/ui/runs/{run_id}")


@router.post("/runs/{run_id}/promote")
async def promote(request: Request, svc: Owned, run_id: str) -> Response:
    """Copy an item of the run's working memory into its session's memory."""
    form = await read_form(request)
    try:
        await svc.promote_memory(run_id, form.get("key", ""))
    except TetherError as error:
        if _gone(error):
            raise
        return await _run_again(request, svc, run_id, "promote", error)
    return _to(f"/ui/runs/{run_id}#memory")


def _gone(error: TetherError) -> bool:
    """True when the page itself is gone: its session or run (then the 404 page answers)."""
    return isinstance(error, NotFound) and error.kind in ("session", "run")


def _json(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{name} is not valid JSON: {exc}") from None


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.strip():
        return None
    value = _json(text, "input")
    if not isinstance(value, dict):
        raise UsageError('input must be a JSON object, such as {"steps": 3}')
    return dict(value)
