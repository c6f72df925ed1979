"""The seed rules of DESIGN.md §1, at the store: run outcomes never touch the session's status,
closed and expired sessions are read-only yet readable, closing cancels unfinished runs, at most
one active run per session, close is idempotent."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.support import LEASE_SECONDS, WORKER, Backend, Factory, event_types
from tether.core.clock import ManualClock
from tether.core.errors import (
    Conflict,
    IdempotencyConflict,
    SessionBusy,
    SessionClosed,
    SessionExpired,
)
from tether.core.memory import MemoryScope
from tether.core.message import Role
from tether.core.run import ErrorInfo, IfBusy, Run
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.store.base import Store

R = RunStatus


async def _end_run(store: Store, clock: ManualClock, run: Run, outcome: RunStatus) -> Run:
    if outcome is R.CANCELLED:
        return await store.cancel_run(run.id, owner=None, now=clock.now(), reason="test")
    if outcome is R.TIMED_OUT:
        # through the reaper: the run's own deadline passes
        clock.advance(11)
        (reaped,) = await store.reap_runs(now=clock.now())
        return reaped
    return await store.finish_run(
        run.id,
        worker_id=WORKER,
        status=outcome,
        now=clock.now(),
        output={"ok": True},
        error=ErrorInfo("ValueError", "boom") if outcome is R.FAILED else None,
    )


@pytest.mark.parametrize("outcome", [R.COMPLETED, R.FAILED, R.CANCELLED, R.TIMED_OUT])
@pytest.mark.parametrize("ttl", [None, 3600])
async def test_a_run_outcome_never_changes_the_session_status(
    store: Store, make: Factory, clock: ManualClock, outcome: RunStatus, ttl: int | None
) -> None:
    session = await make.session(ttl_seconds=ttl)
    run = await make.held(session.id, timeout_seconds=10)
    await store.start_step(
        run_id=run.id,
        worker_id=WORKER,
        position=1,
        kind=StepKind.TOOL_CALL,
        name="run_command",
        input={"arguments": {}},
        now=clock.now(),
    )

    ended = await _end_run(store, clock, run, outcome)

    assert ended.status is outcome
    assert ended.ended_at is not None
    after = await store.get_session(session.id)
    assert after is not None
    assert after.status is SessionStatus.ACTIVE
    assert after.as_of(clock.now()).status is SessionStatus.ACTIVE
    assert after.closed_at is None
    types = await event_types(store, session_id=session.id)
    assert [t for t in types if t.startswith("session.")] == ["session.created"]
    # …and the session takes the next run right away.
    nxt = await make.run(session.id, if_busy=IfBusy.REJECT)
    assert nxt.seq == 2


@pytest.mark.parametrize("how", ["closed", "expired-as-read", "expired-swept"])
async def test_closed_or_expired_session_refuses_writes_and_stays_readable(
    store: Store, make: Factory, clock: ManualClock, how: str
) -> None:
    error: type[Conflict] = SessionClosed if how == "closed" else SessionExpired
    session = await make.session(ttl_seconds=60)
    # Something to read back afterwards: a message, a finished run with a step, memory.
    await make.message(session.id, "before")
    run = await make.held(session.id)
    await store.record_step(
        run_id=run.id,
        worker_id=WORKER,
        position=1,
        kind=StepKind.TOOL_CALL,
        name="read_file",
        input={"arguments": {"path": "a"}},
        output="text",
        now=clock.now(),
    )
    await store.put_memory(
        scope=MemoryScope.RUN, scope_id=run.id, key="k", value=1, owner=None, now=clock.now()
    )
    await store.finish_run(run.id, worker_id=WORKER, status=R.COMPLETED, now=clock.now())
    await store.put_memory(
        scope=MemoryScope.SESSION,
        scope_id=session.id,
        key="python",
        value="3.9",
        owner=None,
        now=clock.now(),
    )
    if how == "closed":
        await store.close_session(session.id, owner=None, now=clock.now())
    else:
        clock.advance(60)  # exactly the TTL: expired from this instant
        if how == "expired-swept":
            await store.expire_sessions(now=clock.now())
    events_before = await event_types(store, session_id=session.id)
    now = clock.now()

    refusals: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        (
            "create_run",
            lambda: store.create_run(
                make.run_record(session.id), owner=None, if_busy=IfBusy.ENQUEUE, now=now
            ),
        ),
        (
            "add_message",
            lambda: store.add_message(
                session_id=session.id, owner=None, role=Role.USER, content="hi", now=now
            ),
        ),
        (
            "put_memory",
            lambda: store.put_memory(
                scope=MemoryScope.SESSION,
                scope_id=session.id,
                key="k",
                value=2,
                owner=None,
                now=now,
            ),
        ),
        (
            "delete_memory",
            lambda: store.delete_memory(
                scope=MemoryScope.SESSION, scope_id=session.id, key="python", owner=None, now=now
            ),
        ),
        (
            "promote_memory",
            lambda: store.promote_memory(run_id=run.id, key="k", owner=None, now=now),
        ),
        (
            "update_session",
            lambda: store.update_session(session.id, owner=None, now=now, title="x"),
        ),
    ]
    for name, write in refusals:
        with pytest.raises(error) as caught:
            await write()
        assert session.id in str(caught.value), name
        assert caught.value.http_status == 409, name

    # Nothing was written…
    assert await event_types(store, session_id=session.id) == events_before
    stored = await store.get_session(session.id)
    assert stored is not None
    expected = SessionStatus.CLOSED if how == "closed" else SessionStatus.EXPIRED
    assert stored.as_of(clock.now()).status is expected
    assert stored.status is (SessionStatus.ACTIVE if how == "expired-as-read" else expected)
    # …and everything stays readable.
    assert [m.content for m in await store.list_messages(session.id)] == ["before"]
    runs = (await store.list_runs(session_id=session.id)).data
    assert [r.id for r in runs] == [run.id]
    assert [s.name for s in await store.list_steps(run.id)] == ["read_file"]
    tools = await store.list_tool_calls(session_id=session.id)
    assert [s.name for s in tools.data] == ["read_file"]
    run_memory = await store.list_memory(scope=MemoryScope.RUN, scope_id=run.id)
    assert [(i.key, i.value) for i in run_memory] == [("k", 1)]
    session_memory = await store.list_memory(scope=MemoryScope.SESSION, scope_id=session.id)
    assert [(i.key, i.value) for i in session_memory] == [("python", "3.9")]
    assert "run.completed" in events_before


async def test_closing_cancels_unfinished_runs_with_events(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    done = await make.held(session.id)
    await store.finish_run(done.id, worker_id=WORKER, status=R.COMPLETED, now=clock.now())
    waiting = await make.waiting(session.id)
    ready = await make.run(session.id)  # queued behind the waiting one
    mark = (await store.list_events(session_id=session.id))[-1].id

    clock.advance(5)
    closed = await store.close_session(session.id, owner=None, now=clock.now())

    assert closed.status is SessionStatus.CLOSED
    assert closed.closed_at == clock.now()
    for run_id in (waiting.id, ready.id):
        run = await store.get_run(run_id)
        assert run is not None
        assert run.status is R.CANCELLED
        assert run.ended_at == clock.now()
        assert run.error is not None and run.error.type == "cancelled"
        assert "session closed" in run.error.message
    untouched = await store.get_run(done.id)
    assert untouched is not None and untouched.status is R.COMPLETED
    events = await store.list_events(session_id=session.id, after_id=mark)
    assert [(e.type, e.run_id) for e in events] == [
        ("run.cancelled", waiting.id),
        ("run.cancelled", ready.id),
        ("session.closed", None),
    ]


async def test_closing_cancels_a_running_run_and_closes_its_open_steps(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    run = await make.held(session.id)
    step = await store.start_step(
        run_id=run.id,
        worker_id=WORKER,
        position=1,
        kind=StepKind.NOTE,
        name="thinking",
        input=None,
        now=clock.now(),
    )
    await store.close_session(session.id, owner=None, now=clock.now())
    after = await store.get_run(run.id)
    assert after is not None and after.status is R.CANCELLED
    (closed_step,) = await store.list_steps(run.id)
    assert closed_step.id == step.id
    assert closed_step.status is StepStatus.FAILED
    assert closed_step.error is not None and closed_step.error.type == "cancelled"
    types = await event_types(store, run_id=run.id)
    assert types[-2:] == ["step.failed", "run.cancelled"]


async def test_close_is_idempotent(store: Store, make: Factory, clock: ManualClock) -> None:
    session = await make.session()
    first = await store.close_session(session.id, owner=None, now=clock.now())
    events = await event_types(store, session_id=session.id)
    clock.advance(100)
    second = await store.close_session(session.id, owner=None, now=clock.now())
    assert second == first
    assert second.closed_at == first.closed_at
    assert await event_types(store, session_id=session.id) == events
    assert events.count("session.closed") == 1


async def test_closing_an_expired_session_keeps_it_expired(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session(ttl_seconds=60)
    run = await make.run(session.id)
    clock.advance(61)
    result = await store.close_session(session.id, owner=None, now=clock.now())
    assert result.status is SessionStatus.EXPIRED
    assert result.closed_at is None
    again = await store.close_session(session.id, owner=None, now=clock.now())
    assert again.status is SessionStatus.EXPIRED
    types = await event_types(store, session_id=session.id)
    assert types.count("session.expired") == 1
    assert "session.closed" not in types
    cancelled = await store.get_run(run.id)
    assert cancelled is not None and cancelled.status is R.CANCELLED


# -- one active run per session --------------------------------------------------------------


async def test_second_run_is_rejected_naming_the_active_run(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    active = await make.held(session.id)
    before = await event_types(store, session_id=session.id)
    with pytest.raises(SessionBusy) as caught:
        await make.run(session.id, if_busy=IfBusy.REJECT)
    assert caught.value.active_run_id == active.id
    assert active.id in str(caught.value)
    assert "running" in str(caught.value)
    assert caught.value.http_status == 409
    assert await event_types(store, session_id=session.id) == before
    assert len((await store.list_runs(session_id=session.id)).data) == 1
    stored = await store.get_session(session.id)
    assert stored is not None and stored.run_count == 1


async def test_a_waiting_run_also_makes_the_session_busy(store: Store, make: Factory) -> None:
    session = await make.session()
    waiting = await make.waiting(session.id)
    with pytest.raises(SessionBusy) as caught:
        await make.run(session.id, if_busy=IfBusy.REJECT)
    assert caught.value.active_run_id == waiting.id
    assert "waiting" in str(caught.value)


async def test_enqueued_runs_wait_their_turn(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    first = await make.held(session.id)
    second = await make.run(session.id, if_busy=IfBusy.ENQUEUE)
    third = await make.run(session.id, if_busy=IfBusy.ENQUEUE)
    assert (second.status, third.status) == (R.READY, R.READY)
    assert [first.seq, second.seq, third.seq] == [1, 2, 3]

    async def claim() -> Run | None:
        return await store.claim_run(worker_id=WORKER, now=clock.now(), lease_seconds=LEASE_SECONDS)

    assert await claim() is None  # the session is busy
    await store.suspend_run(first.id, worker_id=WORKER, now=clock.now(), waiting_for={})
    assert await claim() is None  # waiting still counts as active
    await store.resume_run(first.id, owner=None, now=clock.now(), input=None)
    resumed = await claim()
    assert resumed is not None and resumed.id == first.id
    await store.finish_run(first.id, worker_id=WORKER, status=R.COMPLETED, now=clock.now())
    nxt = await claim()
    assert nxt is not None and nxt.id == second.id  # in submission order
    assert await claim() is None
    await store.finish_run(second.id, worker_id=WORKER, status=R.FAILED, now=clock.now())
    last = await claim()
    assert last is not None and last.id == third.id


async def test_interrupt_cancels_the_active_run(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    active = await make.held(session.id)
    queued = await make.run(session.id)
    newcomer = await make.run(session.id, if_busy=IfBusy.INTERRUPT)
    for run_id in (active.id, queued.id):
        run = await store.get_run(run_id)
        assert run is not None and run.status is R.CANCELLED
        assert run.error is not None and newcomer.id in run.error.message
    claimed = await make.claim()
    assert claimed.id == newcomer.id
    types = await event_types(store, session_id=session.id)
    assert types[-4:] == ["run.cancelled", "run.cancelled", "run.created", "run.started"]
    after = await store.get_session(session.id)
    assert after is not None and after.status is SessionStatus.ACTIVE


async def test_interrupt_on_an_idle_session_just_creates(store: Store, make: Factory) -> None:
    session = await make.session()
    run = await make.run(session.id, if_busy=IfBusy.INTERRUPT)
    assert run.status is R.READY
    assert await event_types(store, session_id=session.id) == ["session.created", "run.created"]


async def test_only_one_run_per_session_is_claimed_even_across_store_instances(
    store: Store, make: Factory, clock: ManualClock, backend: Backend, db_url: str
) -> None:
    """Two stores on the same database (two processes' view): still one active run."""
    other = backend.open(db_url)
    try:
        session = await make.session()
        runs = [await make.run(session.id) for _ in range(3)]
        claims = [
            await s.claim_run(worker_id=f"w{i}", now=clock.now(), lease_seconds=LEASE_SECONDS)
            for i, s in enumerate([store, other, store, other])
        ]
        claimed = [c for c in claims if c is not None]
        assert [c.id for c in claimed] == [runs[0].id]
        page = await other.list_runs(session_id=session.id, status=R.RUNNING)
        assert len(page.data) == 1
    finally:
        await other.close()


async def test_idempotency_key_returns_the_same_run(store: Store, make: Factory) -> None:
    session = await make.session()
    record = make.run_record(session.id, idempotency_key="k-1")
    first, created = await store.create_run(
        record, owner=None, if_busy=IfBusy.REJECT, now=make.clock.now()
    )
    again, created_again = await store.create_run(
        make.run_record(session.id, idempotency_key="k-1"),
        owner=None,
        if_busy=IfBusy.REJECT,
        now=make.clock.now(),
    )
    assert created and not created_again
    assert again.id == first.id
    assert len((await store.list_runs(session_id=session.id)).data) == 1


async def test_idempotency_key_reused_for_another_request_is_refused(
    store: Store, make: Factory
) -> None:
    session = await make.session()
    first, _ = await store.create_run(
        make.run_record(session.id, goal="deploy", idempotency_key="k-2"),
        owner=None,
        if_busy=IfBusy.REJECT,
        now=make.clock.now(),
    )
    with pytest.raises(IdempotencyConflict) as refused:
        await store.create_run(
            make.run_record(session.id, goal="something else", idempotency_key="k-2"),
            owner=None,
            if_busy=IfBusy.ENQUEUE,
            now=make.clock.now(),
        )
    assert first.id in str(refused.value)
    assert [r.id for r in (await store.list_runs(session_id=session.id)).data] == [first.id]


async def test_deleting_a_run_takes_it_out_of_its_sessions_count_and_usage(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    runs = []
    for tokens in (100, 40):
        run = await make.held(session.id)
        await store.record_step(
            run_id=run.id,
            worker_id=WORKER,
            position=1,
            kind=StepKind.MODEL_CALL,
            name="model",
            input={},
            now=clock.now(),
            usage=Usage(tokens, tokens // 10, 1),
        )
        runs.append(
            await store.finish_run(
                run.id, worker_id=WORKER, status=RunStatus.COMPLETED, now=clock.now()
            )
        )
    before = await store.get_session(session.id)
    assert before is not None
    assert (before.run_count, before.usage) == (2, Usage(140, 14, 2))

    await store.delete_run(runs[0].id, owner=None)
    after = await store.get_session(session.id)
    assert after is not None
    assert (after.run_count, after.usage) == (1, Usage(40, 4, 1))
    # a deleted run's number is not given to the next run
    third = await make.run(session.id)
    assert third.seq == 3
    listed = await store.get_session(session.id)
    assert listed is not None and listed.run_count == 2


async def test_a_close_that_read_the_clock_before_a_committed_write_is_dated_after_it(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    # Two nodes: the close reads the clock, then a run is created (read later, committed first).
    session = await make.session()
    read_by_close = clock.now()
    clock.advance(2)
    run = await make.run(session.id)
    closed = await store.close_session(session.id, owner=None, now=read_by_close)
    assert closed.closed_at == run.created_at == closed.last_activity_at
    cancelled = await store.get_run(run.id)
    assert cancelled is not None and cancelled.status is RunStatus.CANCELLED
    assert cancelled.ended_at is not None and cancelled.ended_at >= cancelled.created_at


async def test_a_cancel_that_read_the_clock_before_a_claim_ends_after_the_start(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    run = await make.run(session.id)
    read_by_cancel = clock.now()
    clock.advance(0.5)
    started = await make.claim(run)
    cancelled = await store.cancel_run(run.id, owner=None, now=read_by_cancel, reason="stop")
    assert started.started_at is not None and cancelled.ended_at is not None
    assert cancelled.ended_at >= started.started_at
