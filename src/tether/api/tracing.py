"""Server spans: every HTTP request is an OpenTelemetry span of kind SERVER, named after its
route (``POST /v1/sessions/{session_id}/runs``), continuing the trace of the W3C
``traceparent`` header a client sent (as propagated by the process's propagators). A run the
request creates stores that trace, so its executions belong to it too.

Loaded only when tracing is turned on (it imports OpenTelemetry).
"""

from __future__ import annotations

from opentelemetry import propagate
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class ServerSpans:
    """ASGI middleware: one server span per HTTP request."""

    def __init__(self, app: ASGIApp, *, tracer: Tracer) -> None:
        self.app = app
        self.tracer = tracer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        carrier = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope["headers"]
        }
        method = scope["method"]
        attributes: dict[str, AttributeValue] = {
            "http.request.method": method,
            "url.path": scope["path"],
            "url.scheme": scope.get("scheme", "http"),
            "network.protocol.version": scope.get("http_version", "1.1"),
        }
        client = scope.get("client")
        if client:
            attributes["client.address"] = client[0]
        with self.tracer.start_as_current_span(
            method,
            context=propagate.extract(carrier),
            kind=SpanKind.SERVER,
            attributes=attributes,
        ) as span:

            async def traced(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status = message["status"]
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        span.set_attribute("error.type", str(status))
                        span.set_status(Status(StatusCode.ERROR))
                await send(message)

            try:
                await self.app(scope, receive, traced)
            finally:
                route = getattr(scope.get("route"), "path", None)
                if isinstance(route, str):
                    span.update_name(f"{method} {route}")
                    span.set_attribute("http.route", route)
