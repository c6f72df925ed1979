"""Tool history from real runs: an agent calls tools through ``ctx.tool``; each call is one step
(call and result together); the session's history is the union of its runs' calls, filterable
and paginated; a resumed run replays recorded calls instead of repeating them."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

import pytest

from tests.waiting import WAIT
from tether.core.clock import ManualClock
from tether.core.errors import UsageError
from tether.core.run import Run
from tether.core.status import RunStatus, StepStatus
from tether.core.step import Step
from tether.runtime.agent import AgentRegistry
from tether.runtime.run_context import RunContext
from tether.runtime.service import Service
from tether.runtime.tools import ToolError, ToolRegistry, tool

pytestmark = pytest.mark.usefixtures("worker")

#: How many times each tool really ran (replayed calls do not count).
EXECUTED: Counter[str] = Counter()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    EXECUTED["add"] += 1
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    EXECUTED["shout"] += 1
    return text.upper()


@tool
def explode() -> None:
    """Always fails."""
    EXECUTED["explode"] += 1
    raise ValueError("kaboom")


async def toolbox(ctx: RunContext) -> dict[str, Any]:
    """Calls the tools listed in input.calls ([name, arguments] pairs), keeping failures."""
    ctx.tools = ToolRegistry([add, shout, explode])
    results: list[Any] = []
    for name, arguments in ctx.input.get("calls", []):
        try:
            results.append(await ctx.tool(name, **arguments))
        except ToolError as exc:
            results.append(f"error: {exc}")
        if ctx.input.get("wait_after") == len(results):
            await ctx.wait_for_input("carry on?")
    return {"results": results}


@pytest.fixture(autouse=True)
def tool_agent(agents: AgentRegistry) -> None:
    agents.register("toolbox", toolbox)
    EXECUTED.clear()


CALLS = [
    [["add", {"a": 1, "b": 2}], ["shout", {"text": "hi"}], ["explode", {}]],
    [["shout", {"text": "again"}], ["missing", {}], ["add", {"a": "x", "b": 1}]],
    [["add", {"a": 10, "b": 20}], ["add", {"a": 5, "b": 5}], ["shout", {"text": "z"}]],
]


async def _runs(service: Service) -> tuple[str, list[Run]]:
    session = await service.create_session()
    runs = []
    for calls in CALLS:
        run = await service.create_run(
            session.id, "use tools", agent="toolbox", input={"calls": calls}
        )
        runs.append(await service.wait_run(run.id, timeout=WAIT))
    assert all(r.status is RunStatus.COMPLETED for r in runs), [r.error for r in runs]
    return session.id, runs


async def _all(service: Service, **filters: Any) -> list[Step]:
    page = await service.list_tool_calls(limit=1000, **filters)
    assert page.next_cursor is None
    return page.data


async def test_each_call_is_one_step_with_its_result(service: Service) -> None:
    _, (first, second, _third) = await _runs(service)
    assert first.output == {
        "results": [3, "HI", "error: explode failed: ValueError: kaboom"],
    }
    steps = await _all(service, run_id=first.id)
    assert [(s.name, s.status) for s in steps] == [
        ("add", StepStatus.COMPLETED),
        ("shout", StepStatus.COMPLETED),
        ("explode", StepStatus.FAILED),
    ]
    assert steps[0].input == {"arguments": {"a": 1, "b": 2}, "call_id": None}
    assert steps[0].output == 3
    assert steps[1].output == "HI"
    assert steps[2].error is not None and "kaboom" in steps[2].error.message
    assert all(s.ended_at is not None for s in steps)
    # A call to an unknown tool, or with bad arguments, is a failed call on record too.
    failed = await _all(service, run_id=second.id, status=StepStatus.FAILED)
    assert [s.name for s in failed] == ["missing", "add"]
    assert failed[0].error is not None and "no tool named 'missing'" in failed[0].error.message
    assert failed[1].error is not None and "invalid arguments" in failed[1].error.message
    assert EXECUTED == {"add": 3, "shout": 3, "explode": 1}


async def test_session_history_is_the_union_of_its_runs(service: Service) -> None:
    session_id, runs = await _runs(service)
    history = await _all(service, session_id=session_id)
    per_run = [s for r in runs for s in await _all(service, run_id=r.id)]
    assert [s.id for s in history] == [s.id for s in per_run]
    assert len(history) == 9
    # Another session's calls never show up.
    other_id, _ = await _runs(service)
    assert {s.session_id for s in await _all(service, session_id=session_id)} == {session_id}
    assert len(await _all(service, session_id=other_id)) == 9


async def test_filters(service: Service) -> None:
    session_id, runs = await _runs(service)
    history = await _all(service, session_id=session_id)
    by_tool = await _all(service, session_id=session_id, tool="add")
    assert [s.id for s in by_tool] == [s.id for s in history if s.name == "add"]
    assert len(by_tool) == 4
    by_run = await _all(service, session_id=session_id, run_id=runs[2].id)
    assert [s.id for s in by_run] == [s.id for s in history if s.run_id == runs[2].id]
    failed = await _all(service, session_id=session_id, status="failed")
    assert [s.name for s in failed] == ["explode", "missing", "add"]
    completed = await _all(service, session_id=session_id, status=StepStatus.COMPLETED)
    assert len(completed) + len(failed) == len(history)
    combined = await _all(service, session_id=session_id, tool="add", status="failed")
    assert [s.run_id for s in combined] == [runs[1].id]


async def test_filter_by_time(service: Service, clock: ManualClock) -> None:
    session = await service.create_session()
    starts = []
    for calls in CALLS:
        clock.advance(60)
        starts.append(clock.now())
        run = await service.create_run(
            session.id, "use tools", agent="toolbox", input={"calls": calls}
        )
        assert (await service.wait_run(run.id, timeout=WAIT)).status is RunStatus.COMPLETED
    history = await _all(service, session_id=session.id)
    later = await _all(service, session_id=session.id, since=starts[1])
    assert [s.id for s in later] == [s.id for s in history if s.started_at >= starts[1]]
    assert len(later) == 6
    middle = await _all(service, session_id=session.id, since=starts[1], until=starts[2])
    assert len(middle) == 3 and {s.started_at for s in middle} == {starts[1]}
    with pytest.raises(UsageError, match="time zone"):
        await _all(service, session_id=session.id, since=datetime(2026, 1, 1))  # noqa: DTZ001 (naive on purpose)


@pytest.mark.parametrize("newest_first", [False, True])
@pytest.mark.parametrize("limit", [1, 2, 4])
async def test_cursor_pages_return_each_call_once(
    service: Service, newest_first: bool, limit: int
) -> None:
    session_id, _ = await _runs(service)
    expected = [s.id for s in await _all(service, session_id=session_id)]
    if newest_first:
        expected.reverse()
    seen: list[str] = []
    cursor = None
    while True:
        page = await service.list_tool_calls(
            session_id=session_id, limit=limit, cursor=cursor, newest_first=newest_first
        )
        seen.extend(s.id for s in page.data)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == expected


async def test_a_resumed_run_replays_its_recorded_tool_calls(service: Service) -> None:
    session = await service.create_session()
    calls = [["add", {"a": 1, "b": 1}], ["shout", {"text": "x"}], ["add", {"a": 2, "b": 2}]]
    run = await service.create_run(
        session.id, "tools then wait", agent="toolbox", input={"calls": calls, "wait_after": 2}
    )
    waiting = await service.wait_run(run.id, timeout=WAIT)
    assert waiting.status is RunStatus.WAITING
    assert EXECUTED == {"add": 1, "shout": 1}

    await service.resume_run(run.id, "yes")
    done = await service.wait_run(run.id, timeout=WAIT)

    assert done.status is RunStatus.COMPLETED, done.error
    assert done.output == {"results": [2, "X", 4]}
    assert EXECUTED == {"add": 2, "shout": 1}  # only the new call ran
    names = [s.name for s in await service.list_steps(run.id)]
    assert names == ["add", "shout", "wait_for_input", "add"]
    assert len(await _all(service, run_id=run.id)) == 3
