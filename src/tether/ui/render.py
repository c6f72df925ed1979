"""Rendering: the Jinja environment, HTML responses with the UI's headers, friendly errors."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.routing import APIRoute
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from tether.core.errors import NotFound, TetherError
from tether.ui.auth import owner_of
from tether.ui.format import FILTERS, expires_in
from tether.ui.security import HEADERS, CsrfRejected, csrf_token
from tether.version import __version__

env = Environment(
    loader=PackageLoader("tether.ui", "templates"),
    autoescape=select_autoescape(default=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
env.filters.update(FILTERS)
env.globals.update(expires_in=expires_in, version=__version__)


def page(
    request: Request,
    template: str,
    *,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    """A page of the UI; every template gets the owner, the auth mode and the CSRF token."""
    html = env.get_template(template).render(
        request=request,
        owner=owner_of(request.scope),
        auth=request.app.state.ui.auth,
        local_owner=request.app.state.ui.local_owner,
        csrf=csrf_token(request),
        **context,
    )
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def not_found(request: Request, what: str = "page") -> HTMLResponse:
    """404 as a page that says where to go instead."""
    return page(request, "not_found.html", status=404, what=what)


class UiRoute(APIRoute):
    """A UI route: an unknown id (or another owner's), a refused form or a stale link answer a
    page, not a problem+json."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except NotFound as exc:
                return not_found(request, exc.kind)
            except CsrfRejected as exc:
                return page(
                    request,
                    "problem.html",
                    status=403,
                    heading="This action was refused",
                    reason=f"{exc}.",
                    advice="Reload the page and try again: actions are accepted only from this "
                    "server's own pages, so that no other site can act in your name.",
                )
            except TetherError as exc:
                return page(
                    request,
                    "problem.html",
                    status=exc.http_status,
                    heading="This page cannot be shown",
                    reason=exc.message,
                    advice="The link may be stale: start again from your sessions.",
                )

        return guarded
