"""Session expiry at the store, with a manual clock: exact at the TTL boundary, agreed on by
every read and write, persisted by the sweep with its event, pushed back by activity."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.support import WORKER, Factory, event_types
from tether.core.clock import ManualClock
from tether.core.errors import LeaseLost, SessionExpired
from tether.core.memory import MemoryScope
from tether.core.message import Role
from tether.core.run import IfBusy
from tether.core.session import DEFAULT_TTL_SECONDS, Session
from tether.core.status import RunStatus, SessionStatus
from tether.core.step import StepKind
from tether.store.base import Store

ACTIVE, EXPIRED, CLOSED = SessionStatus.ACTIVE, SessionStatus.EXPIRED, SessionStatus.CLOSED


async def _listed(store: Store, clock: ManualClock, status: SessionStatus) -> set[str]:
    page = await store.list_sessions(owner="alice", now=clock.now(), status=status, limit=1000)
    return {s.id for s in page.data}


async def _status(store: Store, clock: ManualClock, session: Session) -> SessionStatus:
    stored = await store.get_session(session.id)
    assert stored is not None
    return stored.as_of(clock.now()).status


async def test_expiry_is_exact_on_read(store: Store, make: Factory, clock: ManualClock) -> None:
    session = await make.session(ttl_seconds=60)
    assert session.expires_at == clock.now() + timedelta(seconds=60)
    clock.advance(59.999999)
    assert await _status(store, clock, session) is ACTIVE
    assert await _listed(store, clock, ACTIVE) == {session.id}
    assert await _listed(store, clock, EXPIRED) == set()
    clock.advance(0.000001)  # exactly the TTL
    assert await _status(store, clock, session) is EXPIRED
    assert await _listed(store, clock, ACTIVE) == set()
    assert await _listed(store, clock, EXPIRED) == {session.id}
    # Nothing was swept: the stored row is still active, there is no event yet.
    stored = await store.get_session(session.id)
    assert stored is not None and stored.status is ACTIVE
    assert await event_types(store, session_id=session.id) == ["session.created"]


async def test_writes_agree_with_reads_at_the_boundary(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session(ttl_seconds=60)
    clock.advance(59.999999)
    await make.message(session.id, "just in time")  # pushes expiry to now + 60
    clock.advance(60)
    assert await _status(store, clock, session) is EXPIRED
    with pytest.raises(SessionExpired):
        await make.message(session.id, "too late")
    with pytest.raises(SessionExpired):
        await make.run(session.id)


async def test_list_sessions_status_filter_agrees_with_get(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    short = await make.session(ttl_seconds=10)
    long = await make.session(ttl_seconds=1000)
    never = await make.session(ttl_seconds=None)
    closed = await make.session(ttl_seconds=10)
    await store.close_session(closed.id, owner=None, now=clock.now())
    swept = await make.session(ttl_seconds=5)
    other_owner = await make.session(ttl_seconds=10, owner="bob")
    clock.advance(6)
    await store.expire_sessions(now=clock.now())
    clock.advance(6)  # short is now expired as read, but not swept

    everything = [short, long, never, closed, swept]
    for status in SessionStatus:
        expected = {s.id for s in everything if await _status(store, clock, s) is status}
        assert await _listed(store, clock, status) == expected, status
    assert await _listed(store, clock, EXPIRED) == {short.id, swept.id}
    assert await _listed(store, clock, ACTIVE) == {long.id, never.id}
    assert await _listed(store, clock, CLOSED) == {closed.id}
    page = await store.list_sessions(owner="alice", now=clock.now(), limit=1000)
    assert other_owner.id not in {s.id for s in page.data}
    assert len(page.data) == 5


async def test_sweep_persists_expiry_with_an_event_and_cancels_unfinished_runs(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session(ttl_seconds=60)
    waiting = await make.waiting(session.id)
    queued = await make.run(session.id)
    survivor = await make.session(ttl_seconds=120)
    mark = (await store.list_events(session_id=session.id))[-1].id
    clock.advance(61)

    swept = await store.expire_sessions(now=clock.now())

    assert [s.id for s in swept] == [session.id]
    assert swept[0].status is EXPIRED
    stored = await store.get_session(session.id)
    assert stored is not None and stored.status is EXPIRED
    events = await store.list_events(session_id=session.id, after_id=mark)
    assert [(e.type, e.run_id) for e in events] == [
        ("run.cancelled", waiting.id),
        ("run.cancelled", queued.id),
        ("session.expired", None),
    ]
    for run_id in (waiting.id, queued.id):
        run = await store.get_run(run_id)
        assert run is not None and run.status is RunStatus.CANCELLED
        assert run.error is not None and "expired" in run.error.message
    still = await store.get_session(survivor.id)
    assert still is not None and still.status is ACTIVE
    # A second sweep finds nothing more to do.
    assert await store.expire_sessions(now=clock.now()) == []
    assert (await event_types(store, session_id=session.id)).count("session.expired") == 1


async def test_sweep_respects_its_limit(store: Store, make: Factory, clock: ManualClock) -> None:
    sessions = [await make.session(ttl_seconds=10) for _ in range(5)]
    clock.advance(10)
    first = await store.expire_sessions(now=clock.now(), limit=2)
    second = await store.expire_sessions(now=clock.now(), limit=10)
    assert len(first) == 2
    assert {s.id for s in first} | {s.id for s in second} == {s.id for s in sessions}


@pytest.mark.parametrize("activity", ["message", "run", "session_memory", "run_memory"])
async def test_activity_pushes_expiry_back(
    store: Store, make: Factory, clock: ManualClock, activity: str
) -> None:
    session = await make.session(ttl_seconds=60)
    run = await make.held(session.id) if activity == "run_memory" else None
    clock.advance(50)
    now = clock.now()
    if activity == "message":
        await make.message(session.id)
    elif activity == "run":
        await make.run(session.id)
    elif activity == "session_memory":
        await store.put_memory(
            scope=MemoryScope.SESSION, scope_id=session.id, key="k", value=1, owner=None, now=now
        )
    else:
        assert run is not None
        await store.put_memory(
            scope=MemoryScope.RUN, scope_id=run.id, key="k", value=1, owner=None, now=now
        )
    stored = await store.get_session(session.id)
    assert stored is not None
    assert stored.last_activity_at == now
    assert stored.expires_at == now + timedelta(seconds=60)
    clock.advance(50)  # 100 s after creation, 50 s after the activity
    assert await _status(store, clock, session) is ACTIVE
    assert await store.expire_sessions(now=clock.now()) == []
    clock.advance(10)
    assert await _status(store, clock, session) is EXPIRED


async def test_run_events_count_as_activity(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session(ttl_seconds=60)
    run = await make.held(session.id)
    clock.advance(50)
    await store.record_step(
        run_id=run.id,
        worker_id=WORKER,
        position=1,
        kind=StepKind.NOTE,
        name="progress",
        input=None,
        now=clock.now(),
    )
    clock.advance(50)
    await store.finish_run(run.id, worker_id=WORKER, status=RunStatus.COMPLETED, now=clock.now())
    clock.advance(50)
    assert await _status(store, clock, session) is ACTIVE


async def test_ttl_none_never_expires(store: Store, make: Factory, clock: ManualClock) -> None:
    session = await make.session(ttl_seconds=None)
    assert session.expires_at is None
    clock.advance(100 * 365 * 24 * 3600)
    assert await _status(store, clock, session) is ACTIVE
    assert await store.expire_sessions(now=clock.now()) == []
    assert await _listed(store, clock, ACTIVE) == {session.id}
    await make.message(session.id, "still here")


async def test_default_ttl_is_thirty_days(store: Store, make: Factory, clock: ManualClock) -> None:
    session = await make.session()
    assert session.ttl_seconds == DEFAULT_TTL_SECONDS == 30 * 24 * 3600
    clock.advance(DEFAULT_TTL_SECONDS - 1)
    assert await _status(store, clock, session) is ACTIVE
    clock.advance(1)
    assert await _status(store, clock, session) is EXPIRED


async def test_changing_the_ttl_to_none_keeps_a_session_forever(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session(ttl_seconds=60)
    await store.update_session(session.id, owner=None, now=clock.now(), ttl_seconds=None)
    clock.advance(10_000)
    assert await _status(store, clock, session) is ACTIVE


async def test_editing_a_session_is_not_activity(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    """DESIGN: activity is a message, a run created, a run event, a memory write."""
    session = await make.session(ttl_seconds=60)
    clock.advance(30)
    edited = await store.update_session(session.id, owner=None, now=clock.now(), title="renamed")
    assert edited.last_activity_at == session.last_activity_at
    assert edited.updated_at == clock.now()
    clock.advance(30)
    assert await _status(store, clock, session) is EXPIRED


@pytest.mark.parametrize("what", ["cancel", "finish", "step", "release"])
async def test_a_run_event_does_not_revive_an_expired_session(
    store: Store, make: Factory, clock: ManualClock, what: str
) -> None:
    """Expiry is terminal: a run event after the TTL passed (before any sweep) must not push
    the session's activity forward and bring it back to life."""
    session = await make.session(ttl_seconds=60)
    run = await make.held(session.id)
    clock.advance(61)
    assert await _status(store, clock, session) is EXPIRED
    now = clock.now()
    if what == "cancel":
        await store.cancel_run(run.id, owner=None, now=now, reason="late")
    elif what == "finish":
        await store.finish_run(run.id, worker_id=WORKER, status=RunStatus.COMPLETED, now=now)
    elif what == "step":
        await store.record_step(
            run_id=run.id,
            worker_id=WORKER,
            position=1,
            kind=StepKind.NOTE,
            name="late note",
            input=None,
            now=now,
        )
    else:
        await store.release_run(run.id, worker_id=WORKER, now=now)
    assert await _status(store, clock, session) is EXPIRED
    with pytest.raises(SessionExpired):
        await store.add_message(
            session_id=session.id, owner=None, role=Role.USER, content="x", now=clock.now()
        )
    with pytest.raises(SessionExpired):
        await make.run(session.id, if_busy=IfBusy.INTERRUPT)
    swept = await store.expire_sessions(now=clock.now())
    assert [s.id for s in swept] == [session.id]


async def test_a_ready_run_of_an_expired_session_never_starts(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session(ttl_seconds=60)
    queued = await make.run(session.id)
    alive = await make.session(ttl_seconds=None)
    other = await make.run(alive.id)
    clock.advance(60)

    claimed = await store.claim_run(worker_id=WORKER, now=clock.now(), lease_seconds=30)

    assert claimed is not None and claimed.id == other.id  # older, but its session expired
    assert await store.claim_run(worker_id=WORKER, now=clock.now(), lease_seconds=30) is None
    still = await store.get_run(queued.id)
    assert still is not None and still.status is RunStatus.READY
    await store.expire_sessions(now=clock.now())
    cancelled = await store.get_run(queued.id)
    assert cancelled is not None and cancelled.status is RunStatus.CANCELLED
    assert cancelled.started_at is None


async def test_a_step_with_a_message_tells_an_expired_session_from_a_lost_run(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session(ttl_seconds=60)
    run = await make.held(session.id)

    async def say(worker_id: str) -> None:
        await store.record_step(
            run_id=run.id,
            worker_id=worker_id,
            position=None,
            kind=StepKind.MESSAGE,
            name="say",
            input=None,
            now=clock.now(),
            message=(Role.ASSISTANT, "hello", {}),
        )

    with pytest.raises(LeaseLost):  # not held by this worker: its guard says so first
        await say("another worker")
    clock.advance(61)
    with pytest.raises(SessionExpired):  # held, but its session takes no writes
        await say(WORKER)
    assert await store.list_steps(run.id) == []
    assert await store.list_messages(session.id) == []
