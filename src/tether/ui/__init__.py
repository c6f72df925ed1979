"""The web UI of ``tether serve`` at ``/ui``: server-rendered pages (Jinja2) and a little plain
JavaScript, over the same owner-scoped Service as the HTTP API, with sessions of its own.

An edge layer: it imports the runtime and core, never the HTTP API; the app factory composes
both, giving the UI its settings.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from tether.core.errors import MissingExtra
from tether.ui.settings import UiSettings

__all__ = ["UiSettings", "install"]

logger = logging.getLogger(__name__)


def install(app: FastAPI, settings: UiSettings) -> None:
    """Serve the UI's pages, actions, static files and event streams under /ui (and the API
    docs at /docs unless settings.docs is false); the app's state must hold ``service``,
    ``ui_sessions`` and ``draining`` once it starts. Without the UI's packages (``tether[ui]``),
    /ui answers which extra to install and the API still runs."""
    from tether.ui import docs, streams
    from tether.ui.auth import UiAuthenticate

    app.state.ui = settings
    if settings.docs:
        app.include_router(docs.router)
    try:
        from tether.ui import actions, pages
    except ModuleNotFoundError as exc:
        missing = exc.name
        logger.warning("%s", MissingExtra("the web UI", "ui", missing))

        async def not_installed(path: str = "") -> None:
            raise MissingExtra("the web UI", "ui", missing)

        app.add_api_route("/ui{path:path}", not_installed, methods=["GET"], include_in_schema=False)
        return

    app.include_router(streams.router)
    app.include_router(actions.router)
    app.mount("/ui/static", StaticFiles(packages=[("tether.ui", "static")]), name="ui-static")
    app.include_router(pages.router)  # last: its catch-all answers the friendly 404
    app.add_middleware(UiAuthenticate)
