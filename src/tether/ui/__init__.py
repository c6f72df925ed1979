"""The web UI of ``tether serve`` at ``/ui``: server-rendered pages (Jinja2) and a little plain
JavaScript, over the same owner-scoped Service as the HTTP API, with sessions of its own.

An edge layer: it imports the runtime and core, never the HTTP API; the app factory composes
both, giving the UI its settings.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from tether.ui.settings import UiSettings

__all__ = ["UiSettings", "install"]


def install(app: FastAPI, settings: UiSettings) -> None:
    """Serve the UI's pages, actions, static files and event streams under /ui (and the API
    docs at /docs unless settings.docs is false); the app's
    state must hold ``service``, ``ui_sessions`` and ``draining`` once it starts."""
    from tether.ui import actions, docs, pages, streams
    from tether.ui.auth import UiAuthenticate

    app.state.ui = settings
    if settings.docs:
        app.include_router(docs.router)
    app.include_router(streams.router)
    app.include_router(actions.router)
    app.mount("/ui/static", StaticFiles(packages=[("tether.ui", "static")]), name="ui-static")
    app.include_router(pages.router)  # last: its catch-all answers the friendly 404
    app.add_middleware(UiAuthenticate)
