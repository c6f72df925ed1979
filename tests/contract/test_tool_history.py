"""Tool history at the store: the session's tool calls are the union of its runs' tool calls,
filterable by tool, run, status and time, and cursor pages return each call exactly once."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.support import WORKER, Factory
from tether.core.clock import ManualClock
from tether.core.run import ErrorInfo
from tether.core.status import RunStatus, StepStatus
from tether.core.step import Step, StepKind
from tether.store.base import Store

TOOLS = ("read_file", "run_command", "write_file")


@dataclass
class History:
    session_id: str
    run_ids: list[str]
    #: every tool_call step written, in the order written
    calls: list[Step]


async def _history(store: Store, make: Factory, clock: ManualClock, runs: int = 3) -> History:
    """A session whose runs made tool calls (and other steps), plus a noisy second session."""
    session = await make.session()
    calls: list[Step] = []
    run_ids = []
    for r in range(runs):
        run = await make.held(session.id)
        run_ids.append(run.id)
        position = 0
        for i in range(4 + r):
            position += 1
            clock.advance(1)
            tool = TOOLS[(i + r) % len(TOOLS)]
            failed = (i + r) % 4 == 3
            calls.append(
                await store.record_step(
                    run_id=run.id,
                    worker_id=WORKER,
                    position=position,
                    kind=StepKind.TOOL_CALL,
                    name=tool,
                    input={"arguments": {"i": i}},
                    now=clock.now(),
                    status=StepStatus.FAILED if failed else StepStatus.COMPLETED,
                    output=None if failed else {"ok": i},
                    error=ErrorInfo("ToolError", "nope") if failed else None,
                )
            )
            position += 1
            await store.record_step(  # not a tool call: never in the history
                run_id=run.id,
                worker_id=WORKER,
                position=position,
                kind=StepKind.NOTE,
                name=tool,
                input=None,
                now=clock.now(),
            )
        await store.finish_run(
            run.id, worker_id=WORKER, status=RunStatus.COMPLETED, now=clock.now()
        )
    # Another session's tool calls must never leak in.
    other = await make.session()
    other_run = await make.held(other.id)
    await store.record_step(
        run_id=other_run.id,
        worker_id=WORKER,
        position=1,
        kind=StepKind.TOOL_CALL,
        name="read_file",
        input={"arguments": {}},
        now=clock.now(),
    )
    return History(session.id, run_ids, calls)


async def _all(store: Store, limit: int = 1000, **filters: object) -> list[Step]:
    page = await store.list_tool_calls(limit=limit, **filters)  # type: ignore[arg-type]
    assert page.next_cursor is None
    return page.data


async def test_session_tool_calls_are_the_union_of_its_runs(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    h = await _history(store, make, clock)
    session_calls = await _all(store, session_id=h.session_id)
    per_run: list[Step] = []
    for run_id in h.run_ids:
        run_calls = await _all(store, run_id=run_id)
        assert run_calls, "every run made tool calls"
        assert {c.run_id for c in run_calls} == {run_id}
        per_run.extend(run_calls)
    assert sorted(c.id for c in session_calls) == sorted(c.id for c in per_run)
    assert [c.id for c in session_calls] == [c.id for c in h.calls]  # oldest first
    assert all(c.kind is StepKind.TOOL_CALL for c in session_calls)
    assert {c.session_id for c in session_calls} == {h.session_id}
    # The call and its result live in one step.
    for call, written in zip(session_calls, h.calls, strict=True):
        assert call == written


@pytest.mark.parametrize("tool", TOOLS)
async def test_filter_by_tool(store: Store, make: Factory, clock: ManualClock, tool: str) -> None:
    h = await _history(store, make, clock)
    found = await _all(store, session_id=h.session_id, tool=tool)
    assert [c.id for c in found] == [c.id for c in h.calls if c.name == tool]
    assert found
    in_run = await _all(store, run_id=h.run_ids[1], tool=tool)
    assert [c.id for c in in_run] == [
        c.id for c in h.calls if c.name == tool and c.run_id == h.run_ids[1]
    ]


async def test_filter_by_run_and_status(store: Store, make: Factory, clock: ManualClock) -> None:
    h = await _history(store, make, clock)
    for run_id in h.run_ids:
        found = await _all(store, session_id=h.session_id, run_id=run_id)
        assert [c.id for c in found] == [c.id for c in h.calls if c.run_id == run_id]
    for status in (StepStatus.COMPLETED, StepStatus.FAILED):
        found = await _all(store, session_id=h.session_id, status=status)
        expected = [c.id for c in h.calls if c.status is status]
        assert expected
        assert [c.id for c in found] == expected
    both = await _all(
        store,
        session_id=h.session_id,
        run_id=h.run_ids[2],
        tool="run_command",
        status=StepStatus.FAILED,
    )
    assert [c.id for c in both] == [
        c.id
        for c in h.calls
        if c.run_id == h.run_ids[2] and c.name == "run_command" and c.status is StepStatus.FAILED
    ]


async def test_filter_by_time(store: Store, make: Factory, clock: ManualClock) -> None:
    h = await _history(store, make, clock)
    since, until = h.calls[3].started_at, h.calls[8].started_at
    found = await _all(store, session_id=h.session_id, since=since, until=until)
    assert [c.id for c in found] == [c.id for c in h.calls if since <= c.started_at < until]
    assert len(found) == 5


@pytest.mark.parametrize("newest_first", [False, True], ids=["oldest-first", "newest-first"])
@pytest.mark.parametrize("limit", [1, 2, 5, 17])
@pytest.mark.parametrize("tool", [None, "run_command"])
async def test_pagination_returns_each_call_exactly_once(
    store: Store,
    make: Factory,
    clock: ManualClock,
    newest_first: bool,
    limit: int,
    tool: str | None,
) -> None:
    h = await _history(store, make, clock)
    for scope in ({"session_id": h.session_id}, {"run_id": h.run_ids[2]}):
        expected = [
            c.id
            for c in h.calls
            if (tool is None or c.name == tool)
            and ("run_id" not in scope or c.run_id == scope["run_id"])
        ]
        if newest_first:
            expected.reverse()
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            page = await store.list_tool_calls(
                session_id=scope.get("session_id"),
                run_id=scope.get("run_id"),
                tool=tool,
                limit=limit,
                cursor=cursor,
                newest_first=newest_first,
            )
            pages += 1
            assert len(page.data) <= limit
            seen.extend(c.id for c in page.data)
            if page.next_cursor is None:
                break
            assert len(page.data) == limit
            cursor = page.next_cursor
            assert pages <= len(expected) + 1, "pagination does not end"
        assert seen == expected
        assert len(set(seen)) == len(seen)


async def test_a_call_made_while_paging_shows_up_once_on_a_later_page(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    run = await make.held(session.id)

    async def call(position: int) -> Step:
        clock.advance(1)
        return await store.record_step(
            run_id=run.id,
            worker_id=WORKER,
            position=position,
            kind=StepKind.TOOL_CALL,
            name="list_files",
            input={"arguments": {}},
            now=clock.now(),
        )

    first = [await call(1), await call(2)]
    page = await store.list_tool_calls(session_id=session.id, limit=1)
    assert [c.id for c in page.data] == [first[0].id]
    later = await call(3)  # written while the client pages through
    seen = [c.id for c in page.data]
    cursor = page.next_cursor
    while cursor is not None:
        page = await store.list_tool_calls(session_id=session.id, limit=1, cursor=cursor)
        seen.extend(c.id for c in page.data)
        cursor = page.next_cursor
    assert seen == [first[0].id, first[1].id, later.id]


async def test_in_doubt_tool_calls_are_in_the_history(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    """A tool call cut off by a worker shutting down is kept, as in_doubt."""
    session = await make.session()
    run = await make.held(session.id)
    step = await store.start_step(
        run_id=run.id,
        worker_id=WORKER,
        position=1,
        kind=StepKind.TOOL_CALL,
        name="write_file",
        input={"arguments": {"path": "a"}},
        now=clock.now(),
    )
    running = await _all(store, session_id=session.id, status=StepStatus.RUNNING)
    assert [c.id for c in running] == [step.id]
    await store.release_run(run.id, worker_id=WORKER, now=clock.now())
    (in_doubt,) = await _all(store, session_id=session.id, status=StepStatus.IN_DOUBT)
    assert in_doubt.id == step.id
    assert in_doubt.ended_at == clock.now()
