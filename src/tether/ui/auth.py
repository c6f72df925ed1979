"""Who a UI request acts for: the owner of the UI session its cookie names.

The cookie holds a UI session's random token, never the API key (``runtime.ui_sessions``). A
page without a valid session is redirected to the login form; the UI's event streams answer 401
instead, and end once their session does (logout, expiry, the key revoked).
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Annotated
from urllib.parse import urlencode

from fastapi import Depends, Request
from starlette.requests import cookie_parser
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from tether.core.errors import TetherError
from tether.runtime.service import Service
from tether.runtime.sse import Alive
from tether.runtime.ui_sessions import UiSessions
from tether.ui.settings import UiSettings

PREFIX = "/ui"
COOKIE = "tether_session"
LOGIN = "/ui/login"
#: UI paths reachable without a session: the login form, logout and the static files.
PUBLIC_PATHS = frozenset({LOGIN, "/ui/logout"})
STATIC = "/ui/static/"
_OWNER_KEY = "tether.ui.owner"
_TOKEN_KEY = "tether.ui.token"


class UiAuthenticate:
    """ASGI middleware for the UI's paths: resolve the session cookie to an owner, or send the
    browser to the login form (401 problem for an event stream)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"] if scope["type"] == "http" else ""
        if not _is_ui(path) or path in PUBLIC_PATHS or path.startswith(STATIC):
            await self.app(scope, receive, send)
            return
        settings: UiSettings = scope["app"].state.ui
        if not settings.auth:
            scope[_OWNER_KEY] = settings.local_owner
            await self.app(scope, receive, send)
            return
        sessions: UiSessions = scope["app"].state.ui_sessions
        token = session_cookie(scope)
        try:
            owner = None if token is None else await sessions.owner_of(token)
        except TetherError as exc:  # e.g. the database is unavailable: 503, not a crash
            await _problem(exc.http_status, exc.code, exc.message)(scope, receive, send)
            return
        if owner is None:
            refusal = (
                _problem(401, "unauthorized", "log in at /ui/login: this UI session is not valid")
                if path.endswith("/events")
                else _to_login(scope)
            )
            await refusal(scope, receive, send)
            return
        scope[_OWNER_KEY] = owner
        scope[_TOKEN_KEY] = token
        await self.app(scope, receive, send)


def _is_ui(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def owner_of(scope: Scope) -> str | None:
    """The owner a UI request acts for (None on the public paths)."""
    owner: str | None = scope.get(_OWNER_KEY)
    return owner


def session_cookie(scope: Scope) -> str | None:
    """The UI session token the request's cookie holds, if any."""
    for name, value in scope["headers"]:
        if name == b"cookie":
            token = cookie_parser(value.decode("latin-1")).get(COOKIE, "").strip()
            if token:
                return token
    return None


def session_alive(request: Request) -> Alive | None:
    """What an open UI stream checks at each heartbeat: that its session still acts (None
    under --no-auth)."""
    token: str | None = request.scope.get(_TOKEN_KEY)
    if token is None:
        return None
    sessions: UiSessions = request.app.state.ui_sessions
    owner: str = request.scope[_OWNER_KEY]

    async def alive() -> bool:
        return await sessions.owner_of(token) == owner

    return alive


def _to_login(scope: Scope) -> RedirectResponse:
    """303 to the login form, which comes back to the page asked for."""
    query = scope.get("query_string", b"").decode("latin-1")
    wanted = scope["path"] + (f"?{query}" if query else "")
    login = LOGIN if scope["method"] != "GET" else f"{LOGIN}?{urlencode({'next': wanted})}"
    return RedirectResponse(login, status_code=303)


def _problem(status: int, code: str, detail: str) -> Response:
    body = {
        "type": f"urn:tether:error:{code}",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "code": code,
    }
    return Response(json.dumps(body), status_code=status, media_type="application/problem+json")


async def service(request: Request) -> Service:
    """The service acting for the UI request's owner."""
    base: Service = request.app.state.service
    return base.for_owner(request.scope[_OWNER_KEY])


#: Route parameter: ``svc: Owned`` is the service acting for the logged-in owner.
Owned = Annotated[Service, Depends(service)]
