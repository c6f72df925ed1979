"""GET /metrics: what a scraper reads (parsed by prometheus_client's own parsers), who may read
it, and which numbers come from the database (the same on every node) or from the process."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import TEST_SETTINGS, WORKER, Factory
from tests.telemetry.agents import chat
from tests.telemetry.conftest import in_process
from tests.telemetry.scrape import OPENMETRICS, Samples, parse
from tests.waiting import WAIT, eventually
from tether.api import create_app
from tether.api.settings import ApiSettings
from tether.core.clock import ManualClock, SystemClock
from tether.core.status import RunStatus, StepStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.runtime import builtin
from tether.runtime.agent import AgentRegistry
from tether.runtime.instruments import Chain
from tether.runtime.models import ModelResponse, ScriptedModel, ToolCall
from tether.runtime.run_context import RunContext
from tether.runtime.service import Service
from tether.runtime.worker import Worker
from tether.store.base import Store
from tether.store.factory import open_store
from tether.telemetry import create_metrics
from tether.telemetry.metrics import MAX_TOOLS, OTHER_TOOL

TOKEN = "scrape-me-4f1c"


async def _scrape(http: httpx.AsyncClient, **headers: str) -> Samples:
    answer = await http.get("/metrics", headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse(answer.text)


async def _run(http: httpx.AsyncClient, session_id: str, **body: Any) -> dict[str, Any]:
    answer = await http.post(f"/v1/sessions/{session_id}/runs", json={"goal": "g", **body})
    assert answer.status_code == 201, answer.text
    run = answer.json()
    waited = await http.get(f"/v1/runs/{run['id']}/wait", params={"timeout": WAIT})
    result: dict[str, Any] = waited.json()
    return result


async def _session(http: httpx.AsyncClient) -> str:
    answer = await http.post("/v1/sessions", json={"title": "measured"})
    assert answer.status_code == 201, answer.text
    session_id: str = answer.json()["id"]
    return session_id


async def test_a_scrape_counts_runs_steps_and_store_operations(tmp_path: Path) -> None:
    app = create_app(ApiSettings(db=str(tmp_path / "t.db"), auth=False, metrics=True))
    async with in_process(app) as http:
        first, second = await _session(http), await _session(http)
        assert (await _run(http, first))["status"] == "completed"
        assert (await _run(http, first, input={"steps": 2}))["status"] == "completed"
        assert (await _run(http, first, input={"fail": True}))["status"] == "failed"
        assert (await _run(http, second, input={"wait": "more?"}))["status"] == "waiting"
        before = await _scrape(http)
        # Closing the session cancels its waiting run: a write of the store, counted too.
        assert (await http.post(f"/v1/sessions/{second}/close")).status_code == 200
        after = await _scrape(http)

    assert before.get("tether_runs_created_total", agent="echo") == 4
    assert before.get("tether_runs_finished_total", agent="echo", status="completed") == 2
    assert before.get("tether_runs_finished_total", agent="echo", status="failed") == 1
    assert before.get("tether_runs_current", agent="echo", status="waiting") == 1
    assert before.get("tether_runs_current", agent="echo", status="ready") == 0
    assert before.get("tether_runs_current", agent="coder", status="running") == 0
    assert before.get("tether_sessions_active") == 2
    assert before.get("tether_database_up") == 1
    assert before.get("tether_steps_total", kind="note", outcome="completed") == 2
    assert before.get("tether_steps_total", kind="message", outcome="completed") == 2
    assert before.get("tether_steps_total", kind="message", outcome="failed") is None
    assert before.get("tether_run_queue_wait_seconds_count", agent="echo") == 4
    duration = before.get("tether_run_duration_seconds_count", agent="echo", status="completed")
    assert duration == 2
    assert before.total("tether_store_operation_seconds_count", operation="create_run") == 4
    assert before.total("tether_store_operation_seconds_count", operation="claim_next") >= 4
    assert before.get("tether_worker_slots") == 8
    assert before.get("tether_sse_connections") == 0
    assert before.get("tether_build_info", version=tether_version()) == 1
    assert before.types["tether_run_duration_seconds"] == "histogram"
    assert before.types["tether_runs_created"] == "counter"

    assert after.get("tether_runs_finished_total", agent="echo", status="cancelled") == 1
    # ... and closes the step it waited in.
    assert after.get("tether_steps_total", kind="message", outcome="failed") == 1
    assert after.get("tether_runs_current", agent="echo", status="waiting") == 0
    assert after.get("tether_sessions_active") == 1
    # A run cancelled before it ever ran has no duration; this one had started.
    assert after.get("tether_run_duration_seconds_count", agent="echo", status="cancelled") == 1


def tether_version() -> str:
    from tether.version import __version__

    return __version__


async def test_openmetrics_is_served_to_a_scraper_that_asks_for_it(tmp_path: Path) -> None:
    app = create_app(ApiSettings(db=str(tmp_path / "t.db"), auth=False, metrics=True))
    async with in_process(app) as http:
        await _run(http, await _session(http))
        answer = await http.get("/metrics", headers={"Accept": OPENMETRICS})
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/openmetrics-text")
    assert answer.text.endswith("# EOF\n")
    samples = parse(answer.text, openmetrics=True)
    assert samples.get("tether_runs_created_total", agent="echo") == 1


async def test_tool_calls_and_tokens_are_counted_by_tool_model_and_outcome(
    tmp_path: Path,
) -> None:
    agents = builtin.register(AgentRegistry())
    agents.register("chat", chat)
    model = ScriptedModel(
        [
            ModelResponse(
                tool_calls=[ToolCall("c1", "lookup", {"term": "x"}), ToolCall("c2", "nope", {})],
                usage=Usage(20, 4, 1),
            ),
            ModelResponse(content="done", usage=Usage(30, 5, 1)),
        ]
    )
    app = create_app(
        ApiSettings(db=str(tmp_path / "t.db"), auth=False, metrics=True),
        agents=agents,
        models=lambda run: model,
    )
    async with in_process(app) as http:
        run = await _run(http, await _session(http), agent="chat")
        assert run["status"] == "completed", run
        samples = await _scrape(http)
    assert samples.get("tether_tool_calls_total", tool="lookup", outcome="completed") == 1
    assert samples.get("tether_tool_calls_total", tool="nope", outcome="failed") == 1
    assert samples.get("tether_steps_total", kind="tool_call", outcome="failed") == 1
    assert samples.get("tether_steps_total", kind="model_call", outcome="completed") == 2
    assert samples.get("tether_model_tokens_total", model="scripted", type="input") == 50
    assert samples.get("tether_model_tokens_total", model="scripted", type="output") == 9
    assert samples.get("tether_runs_current", agent="chat", status="running") == 0


@pytest.mark.parametrize("client", ["10.1.2.3", "192.168.0.7", "::ffff:10.0.0.1"])
async def test_without_a_token_only_loopback_clients_are_answered(
    tmp_path: Path, client: str
) -> None:
    app = create_app(ApiSettings(db=str(tmp_path / "t.db"), auth=False, metrics=True))
    async with in_process(app, client=(client, 4000)) as remote:
        refused = await remote.get("/metrics")
    assert refused.status_code == 403
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "forbidden"
    async with in_process(app, client=("::1", 4000)) as local:
        assert (await local.get("/metrics")).status_code == 200


async def test_a_token_is_required_when_set_and_api_keys_do_not_replace_it(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "t.db")
    from tether.runtime.api_keys import ApiKeys

    store = open_store(db)
    try:
        _, api_key = await ApiKeys(store).create("alice")
    finally:
        await store.close()
    app = create_app(ApiSettings(db=db, metrics=True, metrics_token=TOKEN))
    async with in_process(app, client=("10.1.2.3", 4000)) as http:
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": f"Bearer {api_key}"},
            {"x-api-key": TOKEN},
            {"Authorization": f"Basic {TOKEN}"},
        ):
            refused = await http.get("/metrics", headers=headers)
            assert refused.status_code == 401, headers
            assert refused.json()["code"] == "unauthorized"
            assert refused.headers["www-authenticate"] == "Bearer"
        samples = await _scrape(http, Authorization=f"Bearer {TOKEN}")
        assert samples.get("tether_database_up") == 1
        # The token opens /metrics only: the API still wants an API key.
        api = await http.get("/v1/sessions", headers={"Authorization": f"Bearer {TOKEN}"})
        assert api.status_code == 401


async def test_metrics_are_off_unless_asked_for(tmp_path: Path) -> None:
    app = create_app(ApiSettings(db=str(tmp_path / "t.db"), auth=False))
    async with in_process(app) as http:
        answer = await http.get("/metrics")
    assert answer.status_code == 404 and answer.json()["code"] == "not_found"


async def test_database_gauges_are_the_same_whichever_node_is_scraped(db_url: str) -> None:
    """Two processes on one database (here two apps, each with its own metrics): the gauges
    read from the database agree; the counters are each process's own."""
    runs = create_app(ApiSettings(db=db_url, auth=False, metrics=True))
    api_only = create_app(ApiSettings(db=db_url, auth=False, metrics=True, workers=0))
    async with in_process(runs) as one, in_process(api_only) as other:
        session = await _session(one)
        assert (await _run(one, session, input={"wait": "?"}))["status"] == "waiting"
        later = {"goal": "later", "after_seconds": 3600}
        queued = await other.post(f"/v1/sessions/{await _session(other)}/runs", json=later)
        assert queued.status_code == 201
        seen = [await _scrape(one), await _scrape(other)]
    for samples in seen:
        assert samples.get("tether_runs_current", agent="echo", status="waiting") == 1
        assert samples.get("tether_runs_current", agent="echo", status="ready") == 1
        assert samples.get("tether_sessions_active") == 2
        assert samples.get("tether_runs_unroutable", agent="echo") == 0  # a worker has echo
    assert seen[0].get("tether_runs_created_total", agent="echo") == 1
    assert seen[1].get("tether_runs_created_total", agent="echo") == 1
    assert seen[0].get("tether_worker_slots") == 8
    assert seen[1].get("tether_worker_slots") == 0


async def test_a_scrape_while_the_database_is_unreadable_still_answers(tmp_path: Path) -> None:
    store = open_store(tmp_path / "t.db")
    app = create_app(ApiSettings(auth=False, metrics=True, workers=0), store=store)
    async with in_process(app) as http:
        await _session(http)
        assert (await _scrape(http)).get("tether_sessions_active") == 1
        await store.close()
        samples = await _scrape(http)
    assert samples.get("tether_database_up") == 0
    assert "tether_sessions_active" not in samples.names()
    assert samples.get("tether_runs_created_total", agent="echo") is None  # nothing created
    assert samples.total("tether_store_operation_seconds_count", operation="create_session") == 1


# -- the worker's own numbers ------------------------------------------------------------------


@pytest.fixture
def measured(
    store: Store, clock: ManualClock, loop: asyncio.AbstractEventLoop
) -> Iterator[tuple[Service, Worker, Any]]:
    """A service and a worker reporting to one set of metrics, on a 30 s lease (renewed on the
    event loop's clock, judged on the manual one a test moves)."""
    metrics = create_metrics()
    timed = metrics.watch(store)
    agents = builtin.register(AgentRegistry())
    agents.register("blocker", _blocker)
    settings = replace(TEST_SETTINGS, lease_seconds=30.0)
    instruments = Chain(metrics)
    service = Service(timed, agents=agents, clock=clock, settings=settings, instruments=instruments)
    worker = Worker(timed, agents, clock=clock, settings=settings, instruments=instruments)
    metrics.watch_worker(settings.concurrency, lambda: worker.active_runs)

    async def start() -> None:
        worker.start()

    loop.run_until_complete(start())
    yield service, worker, metrics
    loop.run_until_complete(worker.stop(grace=2.0))


async def _blocker(ctx: RunContext) -> None:
    await asyncio.Event().wait()


async def _render(metrics: Any, service: Service) -> Samples:
    body, _ = await metrics.render(
        service.store, now=service.clock.now(), agents=service.agents, accept=None
    )
    return parse(body.decode())


async def test_a_run_taken_from_its_worker_is_a_lease_loss_and_a_reaped_run(
    measured: tuple[Service, Worker, Any], clock: ManualClock
) -> None:
    service, worker, metrics = measured
    session = await service.create_session(title="lost")
    run = await service.create_run(session.id, "block", agent="blocker")
    await eventually(lambda: worker.active_runs == 1, timeout=WAIT, what="the run to start")
    assert (await _render(metrics, service)).get("tether_worker_slots_in_use") == 1
    clock.advance(60)  # the lease (30 s) expires; the reaper takes the run back
    done = await service.wait_run(run.id, timeout=WAIT)
    assert done.status is RunStatus.FAILED and done.error is not None
    assert done.error.type == "worker_lost"
    await eventually(lambda: worker.active_runs == 0, timeout=WAIT, what="the execution to end")

    async def reaped_counted() -> Samples | None:
        # The reaper counts after its commit, which wait_run may see first.
        samples = await _render(metrics, service)
        return samples if samples.get("tether_runs_reaped_total", status="failed") else None

    samples = await eventually(reaped_counted, timeout=WAIT, what="the reaped run counted")
    assert samples.get("tether_lease_losses_total") == 1
    assert samples.get("tether_runs_reaped_total", status="failed") == 1
    assert samples.get("tether_runs_finished_total", agent="blocker", status="failed") == 1
    assert samples.get("tether_worker_slots_in_use") == 0


async def test_a_cancelled_run_is_not_a_lease_loss(
    measured: tuple[Service, Worker, Any],
) -> None:
    service, worker, metrics = measured
    session = await service.create_session(title="cancelled")
    run = await service.create_run(session.id, "block", agent="blocker")
    await eventually(lambda: worker.active_runs == 1, timeout=WAIT, what="the run to start")
    await service.cancel_run(run.id)
    await eventually(lambda: worker.active_runs == 0, timeout=WAIT, what="the execution to end")
    samples = await _render(metrics, service)
    assert samples.get("tether_lease_losses_total") == 0
    assert samples.get("tether_runs_finished_total", agent="blocker", status="cancelled") == 1
    assert samples.total("tether_runs_reaped_total") == 0


async def test_tool_names_a_model_invents_cannot_grow_the_series_without_bound(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    metrics = create_metrics()
    timed = metrics.watch(store)
    run = await make.held((await make.session()).id)
    for position in range(1, MAX_TOOLS + 6):
        await timed.record_step(
            run_id=run.id,
            worker_id=WORKER,
            position=position,
            kind=StepKind.TOOL_CALL,
            name=f"invented_{position}",
            input={},
            now=clock.now(),
            status=StepStatus.FAILED,
        )
    service = Service(timed, clock=clock)
    samples = await _render(metrics, service)
    tools = {
        dict(labels)["tool"] for name, labels in samples.values if name == "tether_tool_calls_total"
    }
    assert len(tools) == MAX_TOOLS + 1 and OTHER_TOOL in tools
    assert samples.get("tether_tool_calls_total", tool=OTHER_TOOL, outcome="failed") == 5
    assert samples.total("tether_tool_calls_total") == MAX_TOOLS + 5


async def test_ready_runs_no_running_worker_can_take_are_a_gauge(tmp_path: Path) -> None:
    """An API node without a worker accepts a coder run; while the only worker (echo alone)
    runs, that run is unroutable, and it is counted per agent on every scrape."""
    db = str(tmp_path / "t.db")
    only_echo = AgentRegistry()
    builtin.register(only_echo)
    app = create_app(ApiSettings(db=db, auth=False, metrics=True, workers=0))
    async with in_process(app) as http:
        stuck = await http.post(
            f"/v1/sessions/{await _session(http)}/runs", json={"goal": "g", "agent": "coder"}
        )
        assert stuck.status_code == 201
        assert (await _scrape(http)).get("tether_runs_unroutable", agent="coder") == 1
        store = open_store(db)
        echo_only = AgentRegistry()
        echo_only.register("echo", only_echo.get("echo"))
        worker = Worker(store, echo_only, settings=TEST_SETTINGS, worker_id="echo-only")
        worker.start()
        try:
            await eventually(
                lambda: store.live_agents(now=SystemClock().now()), what="the worker's agents"
            )
            samples = await _scrape(http)
            assert samples.get("tether_runs_unroutable", agent="coder") == 1
            assert samples.get("tether_runs_current", agent="coder", status="ready") == 1
            found = await http.get("/v1/runs", params={"stuck": "true"})
            assert [r["id"] for r in found.json()["data"]] == [stuck.json()["id"]]
        finally:
            await worker.stop(grace=1.0)
            await store.close()
