"""Runs as OpenTelemetry spans: one trace per run however often it executes, model and tool calls
as its children, the GenAI attributes and tether's ids on every span (SDK in-memory exporter)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from tests.support import TEST_SETTINGS
from tests.telemetry.agents import chat
from tests.telemetry.conftest import Spans, in_process
from tests.waiting import WAIT, eventually
from tether.api import create_app
from tether.api.settings import ApiSettings
from tether.core.clock import ManualClock
from tether.core.run import Run
from tether.core.status import RunStatus
from tether.core.usage import Usage
from tether.runtime.agent import AgentRegistry
from tether.runtime.models import ModelResponse, ScriptedModel, ToolCall
from tether.runtime.service import Service
from tether.runtime.worker import Worker


def _hex(span: ReadableSpan) -> tuple[str, str]:
    context = span.get_span_context()
    assert context is not None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def _traceparent(span: ReadableSpan) -> str:
    """The W3C traceparent of span."""
    context = span.get_span_context()
    assert context is not None
    trace_id, span_id = _hex(span)
    return f"00-{trace_id}-{span_id}-{int(context.trace_flags):02x}"


def _parent(span: ReadableSpan) -> str | None:
    return None if span.parent is None else f"{span.parent.span_id:016x}"


def _about(span: ReadableSpan, run: Run) -> None:
    """The ids every span of a run carries."""
    attributes = span.attributes or {}
    assert attributes["gen_ai.conversation.id"] == run.session_id
    assert attributes["tether.session.id"] == run.session_id
    assert attributes["tether.run.id"] == run.id


async def _finished(spans: Spans, name: str, count: int) -> list[ReadableSpan]:
    """The spans called name, once count of them have ended (a span ends just after the store
    write a waiting test sees)."""
    await eventually(lambda: len(spans.named(name)) >= count, timeout=WAIT, what=f"{count} {name}")
    return spans.named(name)


async def test_a_run_that_waits_and_resumes_stays_in_the_trace_that_created_it(
    service: Service, worker: Worker, spans: Spans
) -> None:
    session = await service.create_session(title="traced")
    run = await service.create_run(session.id, "ask first", input={"wait": "go on?"})
    [created] = spans.named("create_run echo")
    trace_id, span_id = _hex(created)
    assert run.traceparent == _traceparent(created)
    assert (await service.get_run(run.id)).traceparent == run.traceparent  # stored
    _about(created, run)

    assert (await service.wait_run(run.id, timeout=WAIT)).status is RunStatus.WAITING
    await service.resume_run(run.id, "yes")
    assert (await service.wait_run(run.id, timeout=WAIT)).status is RunStatus.COMPLETED

    executions = await _finished(spans, "invoke_agent echo", 2)
    assert [(s.attributes or {})["tether.run.outcome"] for s in executions] == [
        "waiting",
        "completed",
    ]
    for execution in executions:
        assert _hex(execution)[0] == trace_id
        assert _parent(execution) == span_id
        assert execution.kind is SpanKind.INTERNAL
        assert execution.status.status_code is StatusCode.UNSET
        _about(execution, run)
        attributes = execution.attributes or {}
        assert attributes["gen_ai.operation.name"] == "invoke_agent"
        assert attributes["gen_ai.agent.name"] == "echo"


async def test_a_failed_run_is_an_error_span_naming_its_error(
    service: Service, worker: Worker, spans: Spans
) -> None:
    session = await service.create_session(title="failing")
    run = await service.create_run(session.id, "fail", input={"fail": "no luck"})
    assert (await service.wait_run(run.id, timeout=WAIT)).status is RunStatus.FAILED
    [execution] = await _finished(spans, "invoke_agent echo", 1)
    assert execution.status.status_code is StatusCode.ERROR
    assert execution.status.description == "no luck"
    assert (execution.attributes or {})["error.type"] == "ValueError"
    assert (execution.attributes or {})["tether.run.outcome"] == "failed"


async def test_a_run_retried_after_its_worker_died_continues_its_trace(
    service: Service, clock: ManualClock, spans: Spans
) -> None:
    """A worker claims the run and is never heard of again; once its lease expires the reaper
    requeues the run and another worker executes it as attempt 2, in the same trace."""
    session = await service.create_session(title="retried")
    run = await service.create_run(session.id, "survive", max_attempts=2)
    [created] = spans.named("create_run echo")
    doomed = await service.store.claim_run(worker_id="doomed", now=clock.now(), lease_seconds=5)
    assert doomed is not None and doomed.id == run.id
    clock.advance(10)
    worker = Worker(service.store, service.agents, clock=clock, settings=TEST_SETTINGS)
    worker.start()
    try:
        done = await service.wait_run(run.id, timeout=WAIT)
        assert done.status is RunStatus.COMPLETED and done.attempt == 2
        [execution] = await _finished(spans, "invoke_agent echo", 1)
    finally:
        await worker.stop(grace=2.0)
    assert _hex(execution)[0] == _hex(created)[0]
    assert _parent(execution) == _hex(created)[1]
    assert (execution.attributes or {})["tether.run.attempt"] == 2


async def test_model_and_tool_calls_are_children_of_the_execution(
    service: Service, agents: AgentRegistry, clock: ManualClock, spans: Spans
) -> None:
    agents.register("chat", chat)
    model = ScriptedModel(
        [
            ModelResponse(
                tool_calls=[ToolCall("c1", "lookup", {"term": "x"}), ToolCall("c2", "nope", {})],
                usage=Usage(20, 4, 1),
                model="scripted-1",
                finish_reason="tool_calls",
            ),
            ModelResponse(content="done", usage=Usage(30, 5, 1), finish_reason="stop"),
        ]
    )
    worker = Worker(
        service.store, agents, clock=clock, settings=TEST_SETTINGS, models=lambda run: model
    )
    worker.start()
    try:
        session = await service.create_session(title="chat")
        run = await service.create_run(session.id, "find x", agent="chat")
        done = await service.wait_run(run.id, timeout=WAIT)
        assert done.status is RunStatus.COMPLETED, done.error
        [execution] = await _finished(spans, "invoke_agent chat", 1)
    finally:
        await worker.stop(grace=2.0)
    model.assert_consumed()
    trace_id, execution_id = _hex(execution)

    chats = spans.named("chat scripted")
    assert len(chats) == 2
    for span in chats:
        assert _hex(span)[0] == trace_id and _parent(span) == execution_id
        assert span.kind is SpanKind.CLIENT
        _about(span, run)
    first, second = (dict(s.attributes or {}) for s in chats)
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == "scripted"
    assert first["gen_ai.response.model"] == "scripted-1"
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (20, 4)
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert (second["gen_ai.usage.input_tokens"], second["gen_ai.usage.output_tokens"]) == (30, 5)
    assert second["gen_ai.response.finish_reasons"] == ("stop",)

    [found] = spans.named("execute_tool lookup")
    [missing] = spans.named("execute_tool nope")
    for span in (found, missing):
        assert _hex(span)[0] == trace_id and _parent(span) == execution_id
        assert (span.attributes or {})["gen_ai.operation.name"] == "execute_tool"
        _about(span, run)
    assert (found.attributes or {})["gen_ai.tool.name"] == "lookup"
    assert (found.attributes or {})["gen_ai.tool.call.id"] == "c1"
    assert found.status.status_code is StatusCode.UNSET
    assert (missing.attributes or {})["gen_ai.tool.call.id"] == "c2"
    assert missing.status.status_code is StatusCode.ERROR
    assert "no tool named 'nope'" in (missing.status.description or "")


async def test_a_run_created_while_tracing_was_off_starts_its_own_trace(
    service: Service, worker: Worker, spans: Spans
) -> None:
    """No stored trace context: the execution is a root span, not a child of whatever span
    happened to be current where the worker was started."""
    from tether import telemetry

    telemetry.disable_tracing()
    session = await service.create_session(title="untraced")
    run = await service.create_run(session.id, "quietly", input={"wait": "go on?"})
    assert run.traceparent is None
    assert (await service.wait_run(run.id, timeout=WAIT)).status is RunStatus.WAITING
    telemetry.enable_tracing(spans.provider)
    await service.resume_run(run.id, "yes")
    [execution] = await _finished(spans, "invoke_agent echo", 1)
    assert execution.parent is None
    assert spans.named("create_run echo") == []


@pytest.mark.parametrize("traced", [True, False])
async def test_idempotent_creation_returns_the_stored_trace_context(
    service: Service, spans: Spans, traced: bool
) -> None:
    """The second create_run with the same key gets the run as first stored, traceparent and
    all."""
    session = await service.create_session(title="twice")
    first = await service.create_run(session.id, "once", idempotency_key="k")
    if not traced:
        from tether import telemetry

        telemetry.disable_tracing()
    again = await service.create_run(session.id, "once", idempotency_key="k")
    assert again.id == first.id and again.traceparent == first.traceparent is not None


async def test_a_clients_traceparent_is_honoured_and_stored_on_the_run_it_creates(
    tmp_path: Path, spans: Spans
) -> None:
    client_trace, client_span = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    app = create_app(ApiSettings(db=str(tmp_path / "t.db"), auth=False))
    async with in_process(app) as http:
        session = (await http.post("/v1/sessions", json={"title": "traced"})).json()
        answer = await http.post(
            f"/v1/sessions/{session['id']}/runs",
            json={"goal": "hi"},
            headers={"traceparent": f"00-{client_trace}-{client_span}-01"},
        )
        assert answer.status_code == 201, answer.text
        run = answer.json()
        waited = await http.get(f"/v1/runs/{run['id']}/wait", params={"timeout": WAIT})
        assert waited.json()["status"] == "completed"
        assert (await http.get(f"/v1/runs/{run['id']}")).json()["traceparent"] == run["traceparent"]
        await _finished(spans, "invoke_agent echo", 1)

    [request] = spans.named("POST /v1/sessions/{session_id}/runs")
    assert request.kind is SpanKind.SERVER
    assert _hex(request)[0] == client_trace and _parent(request) == client_span
    attributes = request.attributes or {}
    assert attributes["http.route"] == "/v1/sessions/{session_id}/runs"
    assert attributes["http.request.method"] == "POST"
    assert attributes["http.response.status_code"] == 201
    [created] = spans.named("create_run echo")
    assert _parent(created) == _hex(request)[1]
    assert run["traceparent"] == _traceparent(created)
    [execution] = spans.named("invoke_agent echo")
    assert _hex(execution)[0] == client_trace and _parent(execution) == _hex(created)[1]
    # A request without a traceparent starts a trace of its own.
    [listing] = spans.named("POST /v1/sessions")
    assert listing.parent is None and _hex(listing)[0] != client_trace


async def test_a_refused_request_is_a_server_span_too(tmp_path: Path, spans: Spans) -> None:
    """Refused before routing (no key, no route): named by its method only, as the HTTP
    conventions say of a request whose route is unknown."""
    app = create_app(ApiSettings(db=str(tmp_path / "t.db")))
    async with in_process(app) as http:
        assert (await http.get("/v1/sessions")).status_code == 401
        assert (await http.get("/nowhere")).status_code == 404
    refused = {(s.attributes or {})["url.path"]: s for s in spans.named("GET")}
    assert (refused["/v1/sessions"].attributes or {})["http.response.status_code"] == 401
    assert (refused["/nowhere"].attributes or {})["http.response.status_code"] == 404
    assert all(s.kind is SpanKind.SERVER for s in refused.values())


async def test_the_http_client_carries_the_callers_trace_to_the_server(
    tmp_path: Path, spans: Spans
) -> None:
    """A program's span around tether.connect's calls: the request spans and the run join it."""
    from opentelemetry import trace

    from tether.client import AsyncClient

    app = create_app(ApiSettings(db=str(tmp_path / "t.db"), auth=False))
    tracer = spans.provider.get_tracer("a program")
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
        async with AsyncClient("http://127.0.0.1", transport=transport) as client:
            with tracer.start_as_current_span("the program's work") as work:
                session = await client.create_session(title="over HTTP")
                run = await client.create_run(session.id, "hello")
            done = await client.wait_run(run.id, timeout=WAIT)
            assert done.status is RunStatus.COMPLETED
            await _finished(spans, "invoke_agent echo", 1)
    program_trace = f"{work.get_span_context().trace_id:032x}"
    assert run.traceparent is not None and run.traceparent.split("-")[1] == program_trace
    [request] = spans.named("POST /v1/sessions/{session_id}/runs")
    assert _hex(request)[0] == program_trace
    assert _parent(request) == f"{work.get_span_context().span_id:016x}"
    [execution] = spans.named("invoke_agent echo")
    assert _hex(execution)[0] == program_trace
    assert trace.get_current_span().get_span_context().is_valid is False
