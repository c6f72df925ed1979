"""GET /metrics: the Prometheus exposition of this process (see ``tether.telemetry.metrics``).

It answers a client sending the metrics token (``Authorization: Bearer <token>``), or, when no
token is configured, loopback clients only; API keys play no part (no owner's data is in it).
``tether serve`` mounts it beside the API; ``tether worker --metrics-port`` serves it alone
(``metrics_app``). Open Server-Sent Events streams are counted by ``CountStreams``.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from fastapi import APIRouter, FastAPI, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tether.api import errors
from tether.api.errors import problem
from tether.api.native_telemetry import without_native_tracing
from tether.core.clock import Clock
from tether.store.base import Store
from tether.telemetry.metrics import Metrics

router = APIRouter()


@dataclass(frozen=True, slots=True)
class Exposition:
    """What GET /metrics serves (``app.state.exposition``)."""

    metrics: Metrics
    #: The store the database gauges are read from.
    store: Store
    clock: Clock
    #: The agents this process knows: each gets its gauges, at zero when it has no runs.
    agents: Iterable[str]
    #: The Bearer token scrapers must send; None = loopback clients only.
    token: str | None


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    """Counters, histograms and gauges in the Prometheus text format (or OpenMetrics)."""
    served: Exposition = request.app.state.exposition
    refused = _refused(request, served.token)
    if refused is not None:
        return refused
    body, content_type = await served.metrics.render(
        served.store,
        now=served.clock.now(),
        agents=served.agents,
        accept=request.headers.get("accept"),
    )
    return Response(body, headers={"Content-Type": content_type})


def metrics_app(exposition: Exposition) -> FastAPI:
    """An app serving GET /metrics alone (for a process without the HTTP API)."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None, **without_native_tracing())
    app.state.exposition = exposition
    app.include_router(router)
    errors.install(app)
    return app


def _refused(request: Request, token: str | None) -> Response | None:
    if token is None:
        host = request.client.host if request.client else ""
        if _is_loopback(host):
            return None
        return problem(
            403,
            "forbidden",
            "metrics are served to loopback clients only: configure a metrics token "
            "(--metrics-token) to scrape from elsewhere",
        )
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
        return None
    return problem(
        401,
        "unauthorized",
        "metrics need the metrics token: send Authorization: Bearer <token>",
        headers={"WWW-Authenticate": "Bearer"},
    )


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class CountStreams:
    """ASGI middleware: counts the Server-Sent Events streams being served."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self.gauge = metrics.sse_connections

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        streaming = False

        async def watched(message: Message) -> None:
            nonlocal streaming
            if message["type"] == "http.response.start" and _is_event_stream(message):
                streaming = True
                self.gauge.inc()
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            if streaming:
                self.gauge.dec()


def _is_event_stream(start: Message) -> bool:
    return any(
        name.lower() == b"content-type" and value.startswith(b"text/event-stream")
        for name, value in start.get("headers", ())
    )
