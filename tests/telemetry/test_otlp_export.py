"""End to end: ``tether serve --otel`` exports its spans over OTLP/HTTP, configured by the
standard OTEL_* variables, to a receiver this test runs on 127.0.0.1."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.serving import Served, serve
from tests.telemetry.otlp_receiver import OtlpReceiver
from tests.waiting import eventually_sync

pytestmark = pytest.mark.slow

CLIENT_TRACE, CLIENT_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    running = OtlpReceiver()
    yield running
    running.close()


def test_a_served_run_reaches_an_otlp_receiver_in_the_clients_trace(
    tmp_path: Path, receiver: OtlpReceiver
) -> None:
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_SERVICE_NAME": "tether-under-test",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
    }
    server = serve(Served, tmp_path / "t.db", "--no-auth", "--otel", env=env)
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            session = http.post("/v1/sessions", json={"title": "exported"}).json()
            answer = http.post(
                f"/v1/sessions/{session['id']}/runs",
                json={"goal": "say hi"},
                headers={"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"},
            )
            assert answer.status_code == 201, answer.text
            run = answer.json()
            assert run["traceparent"].startswith(f"00-{CLIENT_TRACE}-")
            done = http.get(f"/v1/runs/{run['id']}/wait", params={"timeout": 15}).json()
            assert done["status"] == "completed"
        executions = eventually_sync(
            lambda: receiver.named("invoke_agent echo"), what="the execution span exported"
        )
    finally:
        assert server.stop() == 0

    [execution] = executions
    assert execution.trace_id == CLIENT_TRACE
    assert execution.attributes["gen_ai.conversation.id"] == session["id"]
    assert execution.attributes["tether.run.id"] == run["id"]
    assert execution.attributes["tether.run.outcome"] == "completed"
    assert execution.resource["service.name"] == "tether-under-test"
    [created] = receiver.named("create_run echo")
    assert run["traceparent"] == f"00-{CLIENT_TRACE}-{created.span_id}-01"
    assert execution.parent_span_id == created.span_id
    [request] = receiver.named("POST /v1/sessions/{session_id}/runs")
    assert request.trace_id == CLIENT_TRACE and request.parent_span_id == CLIENT_SPAN
    assert created.parent_span_id == request.span_id
