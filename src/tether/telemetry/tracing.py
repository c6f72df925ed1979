"""Runs as OpenTelemetry spans, named and described by the GenAI semantic conventions.

* creating a run: ``create_run <agent>`` (under the HTTP request's span when there is one); its
  W3C ``traceparent`` is stored on the run;
* each execution of the run: ``invoke_agent <agent>``, a child of that span, so a run resumed
  after waiting or retried after a crash continues the same trace;
* each model call: ``chat <model>``, with the request and response model, token usage and
  finish reasons; each tool call: ``execute_tool <tool>``, with the tool's name and call id.

Every span carries ``gen_ai.conversation.id`` (the session id), ``tether.run.id`` and
``tether.session.id``. This module imports OpenTelemetry: it is loaded only when tracing is
turned on (``tether.telemetry.enable_tracing``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

from tether.core.run import Run
from tether.core.status import RunStatus
from tether.runtime.instruments import (
    LOST,
    UNRECORDED,
    Ending,
    Instruments,
    ModelCall,
    ToolInvocation,
    install,
    uninstall,
)
from tether.version import __version__

#: The trace context a run stores: W3C Trace Context, whatever the process propagates.
_W3C = TraceContextTextMapPropagator()
#: Endings of an execution that are errors, with the error.type they get when the run has none.
_FAILED = {
    RunStatus.FAILED.value: "failed",
    RunStatus.TIMED_OUT.value: "timeout",
    LOST: "lease_lost",
    UNRECORDED: "unrecorded",
}

_current: Tracing | None = None


class Tracing(Instruments):
    """Reports the runtime's work as spans of one tracer provider."""

    def __init__(self, provider: trace.TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("tether", __version__)

    @contextmanager
    def creating_run(self, run: Run) -> Iterator[str | None]:
        attributes = {**_about(run), "gen_ai.agent.name": run.agent}
        with self.tracer.start_as_current_span(f"create_run {run.agent}", attributes=attributes):
            carrier: dict[str, str] = {}
            _W3C.inject(carrier)
            yield carrier.get("traceparent")

    @contextmanager
    def execution(self, run: Run, ending: Ending) -> Iterator[None]:
        # A run created while tracing was off has no trace yet: its execution starts one
        # (never the ambient context of whoever started the worker).
        parent = _W3C.extract({"traceparent": run.traceparent}) if run.traceparent else Context()
        attributes: dict[str, AttributeValue] = {
            **_about(run),
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": run.agent,
            "tether.run.attempt": run.attempt,
        }
        with self.tracer.start_as_current_span(
            f"invoke_agent {run.agent}",
            context=parent,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield
            finally:
                span.set_attribute("tether.run.outcome", ending.status)
                if ending.status in _FAILED:
                    error = ending.error
                    span.set_attribute(
                        "error.type", error.type if error else _FAILED[ending.status]
                    )
                    span.set_status(Status(StatusCode.ERROR, error.message if error else None))

    @contextmanager
    def model_call(self, run: Run, call: ModelCall) -> Iterator[None]:
        attributes = {
            **_about(run),
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": call.model,
        }
        with self.tracer.start_as_current_span(
            f"chat {call.model}", kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            try:
                yield
            except Exception as exc:
                span.set_attribute("error.type", type(exc).__name__)
                raise
            response = call.response
            if response is not None:
                span.set_attributes(
                    {
                        "gen_ai.response.model": response.model or call.model,
                        "gen_ai.usage.input_tokens": response.usage.input_tokens,
                        "gen_ai.usage.output_tokens": response.usage.output_tokens,
                        "gen_ai.response.finish_reasons": (
                            [response.finish_reason] if response.finish_reason else []
                        ),
                    }
                )

    @contextmanager
    def tool_call(self, run: Run, call: ToolInvocation) -> Iterator[None]:
        attributes = {
            **_about(run),
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.tool,
            "gen_ai.tool.call.id": call.call_id,
            "gen_ai.tool.type": "function",
        }
        with self.tracer.start_as_current_span(
            f"execute_tool {call.tool}", attributes=attributes
        ) as span:
            try:
                yield
            except Exception as exc:
                span.set_attribute("error.type", type(exc).__name__)
                raise
            if call.error is not None:
                span.set_attribute("error.type", "ToolError")
                span.set_status(Status(StatusCode.ERROR, call.error))


def _about(run: Run) -> dict[str, AttributeValue]:
    return {
        "gen_ai.conversation.id": run.session_id,
        "tether.run.id": run.id,
        "tether.session.id": run.session_id,
    }


def enable(provider: trace.TracerProvider | None = None) -> Tracing:
    """Report through provider; without one, through the tracer provider the program set up,
    else a new SDK provider exporting over OTLP/HTTP as the ``OTEL_*`` variables say."""
    global _current
    disable()
    if provider is None:
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):  # nothing set up yet: tether does it
            provider = _otlp_provider()
            trace.set_tracer_provider(provider)
    _current = Tracing(provider)
    install(_current)
    return _current


def disable() -> None:
    """Stop reporting spans, after exporting those that ended."""
    global _current
    if _current is None:
        return
    uninstall(_current)
    if isinstance(_current.provider, TracerProvider):
        _current.provider.force_flush()
    _current = None


def current() -> Tracing | None:
    """The tracing turned on in this process, if any."""
    return _current


def _otlp_provider() -> TracerProvider:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "tether"}))
    if SERVICE_VERSION not in resource.attributes:
        resource = resource.merge(Resource({SERVICE_VERSION: __version__}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider
