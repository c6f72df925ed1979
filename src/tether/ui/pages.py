"""The UI's pages: sessions, the overview, a session, runs across sessions, a run, schedules,
the assistants, the login form, and a friendly 404."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from tether.ui import views
from tether.ui.auth import Owned, session_cookie
from tether.ui.render import UiRoute, not_found, page
from tether.ui.security import clear_session_cookie

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)


@router.get("")
async def sessions_page(request: Request, svc: Owned) -> Response:
    """Every session of the owner, newest activity first."""
    context = await views.sessions_view(svc, request.query_params)
    return page(request, "sessions.html", **context)


@router.get("/overview")
async def overview_page(request: Request, svc: Owned) -> Response:
    """Charts of the owner's runs over the last 24 h or 7 d, with their numbers."""
    context = await views.overview_view(svc, request.query_params)
    return page(request, "overview.html", **context)


@router.get("/sessions/{session_id}")
async def session_page(request: Request, svc: Owned, session_id: str) -> Response:
    context = await views.session_view(svc, session_id, request.query_params)
    return page(request, "session.html", errors={}, values={}, **context)


@router.get("/runs")
async def runs_page(request: Request, svc: Owned) -> Response:
    """Every run of the owner across sessions, newest first."""
    context = await views.runs_view(svc, request.query_params)
    return page(request, "runs.html", **context)


@router.get("/schedules")
async def schedules_page(request: Request, svc: Owned) -> Response:
    """Every schedule of the owner, oldest first."""
    context = await views.schedules_view(svc, request.query_params)
    return page(request, "schedules.html", **context)


@router.get("/assistants")
async def assistants_page(request: Request, svc: Owned) -> Response:
    """The owner's assistants, and the registered agents."""
    context = await views.assistants_view(svc)
    return page(request, "assistants.html", **context)


@router.get("/runs/{run_id}")
async def run_page(request: Request, svc: Owned, run_id: str) -> Response:
    context = await views.run_view(svc, run_id)
    return page(request, "run.html", errors={}, values={}, **context)


@router.get("/login")
async def login_page(request: Request) -> Response:
    """The login form (a browser already logged in goes on); under --no-auth, a note that no
    key is needed."""
    goal = next_page(request.query_params.get("next"))
    held = session_cookie(request.scope) if request.app.state.ui.auth else None
    if held is not None and await request.app.state.ui_sessions.owner_of(held) is not None:
        return RedirectResponse(goal, status_code=303)
    error = None if held is None else "Your session has ended: log in again."
    response = page(request, "login.html", next=goal, error=error)
    if held is not None:
        clear_session_cookie(request, response)
    return response


@router.get("/{rest:path}")
async def unknown_page(request: Request, rest: str) -> Response:
    """A friendly 404 for any other /ui path (after authentication, like every page)."""
    if not rest:
        return RedirectResponse("/ui", status_code=308)
    return not_found(request)


def next_page(wanted: str | None) -> str:
    """Where to go after logging in: a UI page, never another site."""
    if wanted and wanted.startswith("/ui") and "\\" not in wanted and "\n" not in wanted:
        return wanted
    return "/ui"
