"""Run the app on uvicorn: streams end as soon as a stop is asked for, and the server says where
it listens once it does (the real port when asked for port 0)."""

from __future__ import annotations

import math
import socket
import sys
import threading
from types import FrameType

import uvicorn

from tether.api.app import create_app
from tether.api.head_timeout import with_head_timeout
from tether.api.settings import ApiSettings
from tether.core.errors import UsageError
from tether.runtime.executor import ModelResolver
from tether.store.factory import redact_url

#: How long an idle keep-alive connection stays open.
KEEP_ALIVE_SECONDS = 65


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, draining: threading.Event, label: str) -> None:
        super().__init__(config)
        self._draining = draining
        self._label = label

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._draining.set()
        super().handle_exit(sig, frame)
        # A requested stop is a clean exit (status 0): uvicorn would re-raise the signal once
        # shut down, which makes the process die of it instead.
        captured = getattr(self, "_captured_signals", None)
        if isinstance(captured, list):
            captured.clear()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.servers and self.servers[0].sockets:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            print(f"tether listening on http://{shown}:{port} ({self._label})", file=sys.stderr)
            sys.stderr.flush()


def serve(
    settings: ApiSettings,
    *,
    host: str,
    port: int,
    access_log: bool = True,
    models: ModelResolver | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM; then streams end, the worker drains, the store closes."""
    app = create_app(settings, models=models)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        access_log=access_log,
        timeout_graceful_shutdown=math.ceil(settings.shutdown_grace) + 1,
        # Longer than clients and load balancers keep idle connections (httpx: 5 s, most
        # balancers: 60 s), so the server never closes one as a client reuses it.
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        http=with_head_timeout(settings.header_timeout),
        log_level="info",
    )
    auth = "API keys" if settings.auth else "no auth, owner 'local'"
    hosts = ", ".join(("loopback", *settings.allowed_hosts))
    label = f"db {redact_url(settings.db)}, {settings.workers} worker slots, {auth}, hosts: {hosts}"
    listening = _listen(host, port)
    _Server(config, app.state.draining, label).run(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound up front so a taken port is one clear error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(True)
    return sock
