"""Store.run_start: what a claimed run starts from, in one read, is what the separate reads give."""

from __future__ import annotations

from tests.support import WORKER, Factory
from tether.core.clock import ManualClock
from tether.core.ids import new_id
from tether.core.memory import MemoryScope
from tether.core.message import Role
from tether.core.run import ErrorInfo
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus
from tether.core.step import StepKind
from tether.store.base import Store
from tether.store.cursors import encode_cursor
from tether.store.run_start import SourceLimits


async def test_run_start_reads_the_session_memory_steps_and_context_sources(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    now = clock.now()
    session = await store.create_session(
        Session(
            id=new_id(),
            owner=make.owner,
            title="shop",
            status=SessionStatus.ACTIVE,
            created_at=now,
            updated_at=now,
            last_activity_at=now,
            app="shop",
        )
    )
    for n in range(3):  # earlier runs, each with a tool call and a message
        clock.advance(1)
        earlier = await make.held(session.id, goal=f"earlier {n}")
        await store.record_step(
            run_id=earlier.id,
            worker_id=WORKER,
            position=None,
            kind=StepKind.TOOL_CALL,
            name="search",
            input={"q": n},
            output={"hits": n},
            now=clock.now(),
            message=(Role.ASSISTANT, f"answer {n}", {}),
        )
        if n == 1:  # a failed run's summary carries its error
            await store.finish_run(
                earlier.id,
                worker_id=WORKER,
                status=RunStatus.FAILED,
                now=clock.now(),
                error=ErrorInfo("ValueError", "boom"),
            )
        else:
            await store.finish_run(
                earlier.id, worker_id=WORKER, status=RunStatus.COMPLETED, now=clock.now(), output=n
            )
    run = await make.held(session.id, goal="now")
    await store.record_step(
        run_id=run.id,
        worker_id=WORKER,
        position=None,
        kind=StepKind.NOTE,
        name="replayed",
        input={},
        now=clock.now(),
    )
    queued = await make.run(session.id, goal="after")  # not an earlier run of `run`
    for scope, scope_id in (
        (MemoryScope.RUN, run.id),
        (MemoryScope.SESSION, session.id),
        (MemoryScope.USER, make.owner),
        (MemoryScope.APP, "shop"),
    ):
        clock.advance(1)
        await store.put_memory(
            scope=scope, scope_id=scope_id, key="k", value=1, owner=make.owner, now=clock.now()
        )

    start = await store.run_start(run, sources=SourceLimits(runs=2, tool_calls=2, messages=2))
    assert start is not None and start.sources is not None
    assert start.session == await store.get_session(session.id)
    assert start.memory == await store.memory_of_run(run, app="shop")
    assert [len(items) for items in start.memory.values()] == [1, 1, 1, 1]
    assert start.steps == await store.list_steps(run.id)
    runs = await store.list_runs(
        session_id=session.id,
        limit=2,
        newest_first=True,
        cursor=encode_cursor(run.seq),
        with_context=False,
    )
    assert start.sources.runs == [r.summary() for r in runs.data]
    assert [r.goal for r in start.sources.runs] == ["earlier 2", "earlier 1"]
    assert start.sources.runs[1].error == ErrorInfo("ValueError", "boom")
    assert queued.id not in [r.id for r in start.sources.runs]
    calls = await store.list_tool_calls(session_id=session.id, limit=2, newest_first=True)
    assert start.sources.tool_calls == calls.data
    assert [s.input for s in start.sources.tool_calls] == [{"q": 2}, {"q": 1}]
    messages = await store.list_messages(session.id, limit=2, newest_first=True)
    assert start.sources.messages == messages
    assert [m.content for m in messages] == ["answer 2", "answer 1"]

    alone = await store.run_start(run)
    assert alone is not None and alone.sources is None
    assert (alone.session, alone.memory, alone.steps) == (start.session, start.memory, start.steps)


async def test_run_start_of_a_session_without_app_or_row(store: Store, make: Factory) -> None:
    session = await make.session()
    run = await make.held(session.id)
    start = await store.run_start(run)
    assert start is not None
    assert set(start.memory) == {MemoryScope.RUN, MemoryScope.SESSION, MemoryScope.USER}
    assert await store.run_start(make.run_record(new_id())) is None
