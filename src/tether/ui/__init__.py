"""The web UI of ``tether serve`` at ``/ui``: server-rendered pages (Jinja2) and a little plain
JavaScript, over the same owner-scoped Service and API keys as the HTTP API.

An edge layer: it imports the runtime, core and the API's helpers; nothing imports it but the app.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, FastAPI
from starlette.staticfiles import StaticFiles

from tether.api.routes import events
from tether.core.errors import MissingExtra

__all__ = ["install"]

logger = logging.getLogger(__name__)


def install(app: FastAPI) -> None:
    """Serve the UI's pages, actions, static files and event streams under /ui; without the
    UI's packages (``tether[ui]``), /ui answers which extra to install and the API still runs."""
    try:
        from tether.ui import actions, pages
    except ModuleNotFoundError as exc:
        missing = exc.name
        logger.warning("%s", MissingExtra("the web UI", "ui", missing))

        async def not_installed(path: str = "") -> None:
            raise MissingExtra("the web UI", "ui", missing)

        app.add_api_route("/ui{path:path}", not_installed, methods=["GET"], include_in_schema=False)
        return

    streams = APIRouter(prefix="/ui", include_in_schema=False)
    streams.add_api_route("/runs/{run_id}/events", events.run_events, methods=["GET"])
    app.include_router(streams)
    app.include_router(actions.router)
    app.mount("/ui/static", StaticFiles(packages=[("tether.ui", "static")]), name="ui-static")
    app.include_router(pages.router)  # last: its catch-all answers the friendly 404
