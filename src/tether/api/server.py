"""Run the app on uvicorn: streams end as soon as a stop is asked for, and the server says where
it listens once it does (the real port when asked for port 0). uvicorn's own lines (its access
log included) go through the process's logging, in its format (``tether.telemetry.logs``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import socket
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

import uvicorn

from tether.api.app import create_app
from tether.api.head_timeout import with_head_timeout
from tether.api.settings import ApiSettings
from tether.core.errors import UsageError
from tether.runtime.executor import ModelResolver
from tether.store.factory import redact_url

if TYPE_CHECKING:
    from tether.api.metrics import Exposition

log = logging.getLogger("tether.server")

#: How long an idle keep-alive connection stays open.
KEEP_ALIVE_SECONDS = 65


class _Server(uvicorn.Server):
    def __init__(
        self, config: uvicorn.Config, draining: threading.Event, label: str, *, as_log: bool
    ) -> None:
        super().__init__(config)
        self._draining = draining
        self._label = label
        self._as_log = as_log

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
            text = f"tether listening on http://{shown}:{port} ({self._label})"
            if self._as_log:  # one more structured line, like every other
                log.info(text, extra={"url": f"http://{shown}:{port}"})
                return
            print(text, file=sys.stderr)
            sys.stderr.flush()


def serve(
    settings: ApiSettings,
    *,
    host: str,
    port: int,
    access_log: bool = True,
    models: ModelResolver | None = None,
    log_format: str = "plain",
) -> None:
    """Serve until SIGINT/SIGTERM; then streams end, the worker drains, the store closes. The
    listening line is plain text, or a log line when the logs are JSON."""
    app = create_app(settings, models=models)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        access_log=access_log,
        log_config=None,  # the process's logging, as tether.telemetry.logs set it up
        timeout_graceful_shutdown=math.ceil(settings.shutdown_grace) + 1,
        # Longer than clients and load balancers keep idle connections (httpx: 5 s, most
        # balancers: 60 s), so the server never closes one as a client reuses it.
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        http=with_head_timeout(settings.header_timeout),
        log_level="info",
    )
    auth = "API keys" if settings.auth else "no auth, owner 'local'"
    hosts = ", ".join(("loopback", *settings.allowed_hosts))
    redacted = "secrets redacted" if settings.redactor.enabled else "no redaction"
    label = (
        f"db {redact_url(settings.db)}, {settings.workers} worker slots, {auth}, "
        f"hosts: {hosts}, {redacted}"
    )
    listening = _listen(host, port)
    server = _Server(config, app.state.draining, label, as_log=log_format == "json")
    server.run(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound up front so a taken port is one clear error.

    It is made with protocol IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on accepted
    sockets of that protocol, and without it every response on a kept-alive connection waits
    for the client's delayed ACK (about 40 ms) under Nagle's algorithm.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(True)
    return sock


class _Embedded(uvicorn.Server):
    """A uvicorn server inside a process that handles its own signals; ``listening`` is set
    once it accepts connections."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.listening.set()


class MetricsServer:
    """GET /metrics on a port of its own, served on the running event loop (``tether worker``
    has no HTTP API to mount it on)."""

    def __init__(self, exposition: Exposition, *, host: str, port: int) -> None:
        from tether.api.metrics import metrics_app

        self._socket = _listen(host, port)
        config = uvicorn.Config(
            metrics_app(exposition), log_config=None, access_log=False, lifespan="off"
        )
        self._server = _Embedded(config)
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://{f'[{host}]' if ':' in host else host}:{port}/metrics"

    async def start(self) -> None:
        """Serve in the background; return once connections are accepted."""
        self._task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        listening = asyncio.create_task(self._server.listening.wait())
        await asyncio.wait({self._task, listening}, return_when=asyncio.FIRST_COMPLETED)
        listening.cancel()
        if self._task.done():
            self._task.result()  # it could not start: say why

    async def stop(self) -> None:
        self._server.should_exit = True
        if self._task is not None:
            await self._task
