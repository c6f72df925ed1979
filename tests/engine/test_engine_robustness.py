"""Runs stay truthful at the edges: replay mismatches, unstorable output, lost leases,
interrupted tool calls, sessions that expire or vanish under a run or a stream."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.engine.engine_helpers import FAST, Engine, wait_status
from tests.waiting import WAIT, eventually
from tether.core.clock import ManualClock
from tether.core.errors import LeaseLost
from tether.core.memory import MemoryScope
from tether.core.status import RUN_TERMINAL, RunStatus, SessionStatus, StepStatus
from tether.runtime.agent import AgentRegistry
from tether.runtime.context_assembly import assemble_context
from tether.runtime.run_context import RunContext
from tether.runtime.tools import tool

TERMINAL = tuple(RUN_TERMINAL)


async def test_replay_refuses_a_step_other_than_the_recorded_one(db_path: Path) -> None:
    agents = AgentRegistry()
    calls = {"n": 0}

    async def fickle(ctx: RunContext) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] == 1:
            await ctx.note("first time")
        answer = await ctx.wait_for_input("go on?")
        return {"answer": answer}

    agents.register("fickle", fickle)
    async with Engine(db_path, agents=agents) as eng:
        eng.worker()
        session = await eng.service.create_session()
        run = await eng.service.create_run(session.id, "change your mind", agent="fickle")
        assert (await eng.service.wait_run(run.id, timeout=WAIT)).status is RunStatus.WAITING
        await eng.service.resume_run(run.id, "yes")
        done = await wait_status(eng.service, run.id, *TERMINAL)
    assert done.status is RunStatus.FAILED
    assert done.error is not None and done.error.type == "ReplayMismatch"
    assert "note first time was recorded there" in done.error.message


async def test_output_that_is_not_json_fails_the_run_or_the_tool_call(db_path: Path) -> None:
    agents = AgentRegistry()

    @tool
    def measure() -> float:
        """Returns NaN."""
        return float("nan")

    async def nan_tool(ctx: RunContext) -> dict[str, Any]:
        outcome = await ctx.call_tool("measure", {})
        return {"ok": outcome.ok, "error": outcome.error}

    async def nan_output(ctx: RunContext) -> dict[str, Any]:
        return {"value": float("nan")}

    agents.register("nan_tool", nan_tool, tools=[measure])
    agents.register("nan_output", nan_output)
    async with Engine(db_path, agents=agents) as eng:
        eng.worker()
        session = await eng.service.create_session()
        first = await eng.service.create_run(session.id, "tool", agent="nan_tool")
        done = await wait_status(eng.service, first.id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED
        assert done.output["ok"] is False and "not JSON" in done.output["error"]
        second = await eng.service.create_run(session.id, "output", agent="nan_output")
        failed = await wait_status(eng.service, second.id, *TERMINAL)
    assert failed.status is RunStatus.FAILED
    assert failed.error is not None and failed.error.type == "InvalidOutput"


async def test_nul_characters_in_errors_and_outputs_still_end_the_run(db_path: Path) -> None:
    """No store keeps NUL: an error quoting binary input is recorded with U+FFFD, and an
    output holding NUL fails the run, saying why; neither leaves the run running."""
    agents = AgentRegistry()

    @tool
    def parse() -> str:
        """Fails on binary input."""
        raise ValueError("cannot parse PK\x03\x04\x00")

    async def tool_then_raise(ctx: RunContext) -> None:
        outcome = await ctx.call_tool("parse", {})
        assert not outcome.ok and "\ufffd" in (outcome.error or "")
        raise ValueError("cannot parse \x00\x00")

    async def nul_output(ctx: RunContext) -> dict[str, Any]:
        return {"text": "a\x00b"}

    agents.register("tool_then_raise", tool_then_raise, tools=[parse])
    agents.register("nul_output", nul_output)
    async with Engine(db_path, agents=agents) as eng:
        eng.worker()
        session = await eng.service.create_session()
        raising = await eng.service.create_run(session.id, "raise", agent="tool_then_raise")
        raised = await wait_status(eng.service, raising.id, *TERMINAL)
        output = await eng.service.create_run(session.id, "output", agent="nul_output")
        refused = await wait_status(eng.service, output.id, *TERMINAL)
        steps = await eng.service.list_steps(raising.id)
    assert raised.status is RunStatus.FAILED and raised.error is not None
    assert raised.error.message == "cannot parse \ufffd\ufffd"
    [call] = [s for s in steps if s.name == "parse"]
    assert call.status.value == "failed" and call.error is not None
    assert "PK\x03\x04\ufffd" in call.error.message
    assert refused.status is RunStatus.FAILED and refused.error is not None
    assert refused.error.type == "InvalidOutput" and "NUL" in refused.error.message


async def test_a_lost_run_cannot_write_memory_any_more(db_path: Path) -> None:
    async with Engine(db_path) as eng:
        store, svc = eng.store, eng.service
        session = await svc.create_session()
        run = await svc.create_run(session.id, "held", agent="echo")
        clock = ManualClock()
        claimed = await store.claim_run(worker_id="w1", now=clock.now(), lease_seconds=1)
        assert claimed is not None and claimed.id == run.id
        await store.put_memory(
            scope=MemoryScope.SESSION,
            scope_id=session.id,
            key="k",
            value=1,
            owner=None,
            now=clock.now(),
            source_run_id=run.id,
            worker_id="w1",
        )
        await svc.cancel_run(run.id)
        for scope, scope_id in (
            (MemoryScope.SESSION, session.id),
            (MemoryScope.USER, "local"),
            (MemoryScope.RUN, run.id),
        ):
            try:
                await store.put_memory(
                    scope=scope,
                    scope_id=scope_id,
                    key="late",
                    value=2,
                    owner=None,
                    now=clock.now(),
                    source_run_id=run.id,
                    worker_id="w1",
                )
            except LeaseLost:
                continue
            raise AssertionError(f"a cancelled run wrote {scope.value} memory")
        assert [i.key for i in await svc.list_session_memory(session.id)] == ["k"]


async def test_a_tool_call_cut_by_a_timeout_is_in_doubt(db_path: Path, tmp_path: Path) -> None:
    agents = AgentRegistry()
    marker = tmp_path / "effect"

    @tool
    async def slow_effect() -> str:
        """Has its effect, then takes long to answer."""
        marker.write_text("done")
        await asyncio.sleep(30)
        return "answered"

    async def impatient(ctx: RunContext) -> None:
        await ctx.tool("slow_effect")

    agents.register("impatient", impatient, tools=[slow_effect])
    async with Engine(db_path, agents=agents) as eng:
        eng.worker()
        session = await eng.service.create_session()
        run = await eng.service.create_run(
            session.id, "cut short", agent="impatient", timeout_seconds=2
        )  # time for the tool to start on a loaded machine: the deadline runs from the claim
        done = await wait_status(eng.service, run.id, *TERMINAL)
        steps = await eng.service.list_steps(run.id)
    assert done.status is RunStatus.TIMED_OUT and marker.exists()
    assert [(s.name, s.status) for s in steps] == [("slow_effect", StepStatus.IN_DOUBT)]


async def test_a_session_expiring_under_a_run_cancels_it(db_path: Path) -> None:
    clock = ManualClock()
    # A lease far longer than the jump in time, so only the expiry can end the run.
    settings = replace(FAST, sweep_interval=0.05, lease_seconds=3600)
    async with Engine(db_path, settings=settings) as eng:
        eng.service.clock = clock
        eng.worker().clock = clock
        session = await eng.service.create_session(ttl_seconds=60)
        run = await eng.service.create_run(session.id, "long", agent="echo", input={"sleep": 30})
        await eventually(
            lambda: _status_is(eng, run.id, RunStatus.RUNNING), what="the run to start"
        )
        clock.advance(61)
        done = await wait_status(eng.service, run.id, *TERMINAL)
        stored = await eng.store.get_session(session.id)
    assert done.status is RunStatus.CANCELLED
    assert done.error is not None and done.error.message == "session expired"
    assert stored is not None and stored.status is SessionStatus.EXPIRED


async def _status_is(eng: Engine, run_id: str, status: RunStatus) -> bool:
    return (await eng.service.get_run(run_id)).status is status


async def test_a_run_starts_from_the_runs_before_it_only(db_path: Path) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        session = await svc.create_session()
        first = await svc.create_run(session.id, "one", agent="echo")
        second = await svc.create_run(session.id, "two", agent="echo", if_busy="enqueue")
        await svc.create_run(session.id, "three", agent="echo", if_busy="enqueue")
        eng.worker()
        for run in (first, second):
            await wait_status(svc, run.id, *TERMINAL)
        started = await svc.get_run(second.id)
        everything = await assemble_context(eng.store, session)
    assert started.context is not None
    assert [r["goal"] for r in started.context["earlier_runs"]] == ["one"]
    assert [r["goal"] for r in everything["earlier_runs"]][:2] == ["one", "two"]


async def test_streams_end_when_their_session_is_deleted(db_path: Path) -> None:
    async with Engine(db_path) as eng:
        svc = eng.service
        session = await svc.create_session()
        seen: list[str] = []

        async def follow() -> None:
            async for event in svc.stream_events(session_id=session.id):
                if event is not None:
                    seen.append(event.type)

        task = asyncio.create_task(follow())
        await eventually(lambda: seen == ["session.created"], what="the first event")
        await svc.delete_session(session.id)
        await asyncio.wait_for(task, WAIT)
    assert seen == ["session.created"]
