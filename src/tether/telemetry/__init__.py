"""What an operator watches: OpenTelemetry traces, Prometheus metrics and structured logs.

Nothing here imports OpenTelemetry or prometheus-client until it is turned on:

* ``enable_tracing()`` reports every run, model call, tool call (and, in ``tether serve``,
  every HTTP request) as a span (extra ``tether[otel]``; ``tether serve --otel``); the HTTP
  client then sends the current trace context with each request (``trace_headers``);
* ``tether serve --metrics`` serves ``GET /metrics`` (extra ``tether[metrics]``), see
  ``tether.telemetry.metrics``;
* ``--log-format json`` writes every log line as one JSON object, see ``tether.telemetry.logs``.

Tracing sits beside the runtime: it imports the core, the store and the runtime; the HTTP
service and the CLI import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.core.errors import UsageError

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from tether.telemetry.metrics import Metrics

_tracing = False


def enable_tracing(provider: TracerProvider | None = None) -> None:
    """Report tether's work as OpenTelemetry spans (GenAI semantic conventions).

    Through provider when given; else through the tracer provider the program already set up;
    else tether sets up the SDK with an OTLP/HTTP exporter configured by the standard
    ``OTEL_*`` variables (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME``,
    ``OTEL_TRACES_SAMPLER`` …). Services and workers opened before or after report alike.
    """
    global _tracing
    try:
        from tether.telemetry import tracing
    except ImportError as exc:
        raise UsageError(
            f"tracing needs OpenTelemetry: pip install 'tether[otel]' ({exc})"
        ) from exc
    tracing.enable(provider)
    _tracing = True


def disable_tracing() -> None:
    """Stop reporting spans (those already ended are exported first)."""
    global _tracing
    if _tracing:
        from tether.telemetry import tracing

        tracing.disable()
        _tracing = False


def tracing_enabled() -> bool:
    """Whether enable_tracing() is in force."""
    return _tracing


def trace_headers() -> dict[str, str]:
    """The trace context of the current span as HTTP headers (W3C ``traceparent``, as the
    process propagates it), so the server's spans join the caller's trace; none when tracing
    is off."""
    if not _tracing:
        return {}
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def create_metrics() -> Metrics:
    """A new set of Prometheus metrics (its own registry) for one process or app."""
    try:
        from tether.telemetry.metrics import Metrics
    except ImportError as exc:
        raise UsageError(
            f"metrics need prometheus-client: pip install 'tether[metrics]' ({exc})"
        ) from exc
    return Metrics()
