"""The web UI of ``tether serve`` at ``/ui``: server-rendered pages (Jinja2) and a little plain
JavaScript, over the same owner-scoped Service and API keys as the HTTP API.

An edge layer: it imports the runtime, core and the API's helpers; nothing imports it but the app.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from starlette.staticfiles import StaticFiles

from tether.api.routes import events

__all__ = ["install"]


def install(app: FastAPI) -> None:
    """Serve the UI's pages, actions, static files and event streams under /ui."""
    from tether.ui import actions, pages

    streams = APIRouter(prefix="/ui", include_in_schema=False)
    streams.add_api_route("/runs/{run_id}/events", events.run_events, methods=["GET"])
    app.include_router(streams)
    app.include_router(actions.router)
    app.mount("/ui/static", StaticFiles(packages=[("tether.ui", "static")]), name="ui-static")
    app.include_router(pages.router)  # last: its catch-all answers the friendly 404
