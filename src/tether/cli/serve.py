"""``tether serve``: the HTTP service on uvicorn, with the embedded worker."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import sys
import threading
from types import FrameType
from typing import Annotated

import typer
import uvicorn

from tether.api import ApiSettings, create_app
from tether.api.body_limit import DEFAULT_MAX_BODY_BYTES
from tether.cli.app import DbOption, fail, handles_errors
from tether.runtime.api_keys import ApiKeys
from tether.store.factory import DEFAULT_DB, open_store


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def _has_keys(db: str) -> bool:
    store = open_store(db)
    try:
        return await ApiKeys(store).any_active()
    finally:
        await store.close()


class _Server(uvicorn.Server):
    """uvicorn, telling the app to end its streams as soon as a stop is asked for, and saying
    where it listens once it does (the real port when given port 0)."""

    def __init__(self, config: uvicorn.Config, draining: threading.Event, label: str) -> None:
        super().__init__(config)
        self._draining = draining
        self._label = label

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._draining.set()
        super().handle_exit(sig, frame)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.servers and self.servers[0].sockets:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            print(f"tether listening on http://{shown}:{port} ({self._label})", file=sys.stderr)
            sys.stderr.flush()


@handles_errors
def serve(
    host: Annotated[
        str, typer.Option(envvar="TETHER_HOST", help="Address to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(envvar="TETHER_PORT", min=0, max=65535, help="Port (0 = any free).")
    ] = 8080,
    db: DbOption = DEFAULT_DB,
    workers: Annotated[
        int,
        typer.Option(
            envvar="TETHER_WORKERS",
            min=0,
            help="Runs the embedded worker executes at once; 0 = none (use `tether worker`).",
        ),
    ] = 8,
    no_auth: Annotated[
        bool,
        typer.Option(
            "--no-auth",
            envvar="TETHER_NO_AUTH",
            help="No API keys: every request acts for the owner 'local' (loopback only).",
        ),
    ] = False,
    max_body_bytes: Annotated[
        int,
        typer.Option(envvar="TETHER_MAX_BODY_BYTES", min=1, help="Larger bodies get 413."),
    ] = DEFAULT_MAX_BODY_BYTES,
    access_log: Annotated[bool, typer.Option(help="Log every request.")] = True,
) -> None:
    """Serve the HTTP API (/v1, SSE streams, /docs) with an embedded worker."""
    loopback = is_loopback(host)
    if no_auth and not loopback:
        fail(f"--no-auth is only allowed on a loopback address (127.0.0.1, ::1), not {host}")
    if not no_auth and not asyncio.run(_has_keys(db)):
        if not loopback:
            fail(
                f"refusing to serve on {host} without API keys: create one with "
                f"`tether keys create --owner NAME --db {db}`, or bind 127.0.0.1"
            )
        print(
            "no API keys yet: every request will get 401 until you run "
            f"`tether keys create --owner NAME --db {db}` (or serve with --no-auth)",
            file=sys.stderr,
        )
    settings = ApiSettings(db=db, workers=workers, auth=not no_auth, max_body_bytes=max_body_bytes)
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        access_log=access_log,
        timeout_graceful_shutdown=int(settings.shutdown_grace) + 1,
        log_level="info",
    )
    auth = "no auth, owner 'local'" if no_auth else "API keys"
    label = f"db {db}, {workers} worker slots, {auth}"
    _Server(config, app.state.draining, label).run()
