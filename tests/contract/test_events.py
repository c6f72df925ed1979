"""The event log: every state change appends its event in the same transaction, ids increase
in commit order, and reading after an id never skips one."""

from __future__ import annotations

import pytest

from tests.support import OWNER, WORKER, Factory
from tether.core.clock import ManualClock
from tether.core.errors import SessionBusy
from tether.core.event import TERMINAL_RUN_EVENTS, Event, EventType
from tether.core.memory import MemoryScope
from tether.core.message import NewMessage, Role
from tether.core.run import IfBusy
from tether.core.status import RunStatus, StepStatus
from tether.core.step import StepKind
from tether.store.base import Store
from tether.store.sql.store import SqlStore


async def test_a_session_story_is_told_by_its_events(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    message = await make.message(session.id, "find out why the tests fail")
    run = await make.held(session.id)
    step = await store.start_step(
        run_id=run.id,
        worker_id=WORKER,
        position=1,
        kind=StepKind.TOOL_CALL,
        name="run_command",
        input={"arguments": {"command": "pytest"}},
        now=clock.now(),
    )
    await store.finish_step(
        step.id, worker_id=WORKER, status=StepStatus.COMPLETED, now=clock.now(), output="1 failed"
    )
    await store.put_memory(
        scope=MemoryScope.RUN, scope_id=run.id, key="k", value="v", owner=None, now=clock.now()
    )
    await store.finish_run(
        run.id, worker_id=WORKER, status=RunStatus.COMPLETED, now=clock.now(), output={"ok": 1}
    )
    await store.update_session(session.id, owner=None, now=clock.now(), title="renamed")
    await store.close_session(session.id, owner=None, now=clock.now())

    events = await store.list_events(session_id=session.id)
    assert [e.type for e in events] == [
        "session.created",
        "message.added",
        "run.created",
        "run.started",
        "step.started",
        "step.completed",
        "memory.set",
        "run.completed",
        "session.updated",
        "session.closed",
    ]
    assert all(e.session_id == session.id and e.owner == "alice" for e in events)
    by_type: dict[str, Event] = {e.type: e for e in events}
    assert by_type["message.added"].data["message"]["id"] == message.id
    assert by_type["message.added"].data["message"]["content"] == "find out why the tests fail"
    assert by_type["run.completed"].data["run"]["status"] == "completed"
    assert by_type["run.completed"].data["run"]["output"] == {"ok": 1}
    assert by_type["step.completed"].data["step"]["output"] == "1 failed"
    assert by_type["session.updated"].data["changed"] == ["title"]
    assert by_type["session.closed"].data["session"]["status"] == "closed"
    run_events = await store.list_events(run_id=run.id)
    assert [e.type for e in run_events] == [
        "run.created",
        "run.started",
        "step.started",
        "step.completed",
        "memory.set",
        "run.completed",
    ]


async def test_event_ids_strictly_increase_in_commit_order(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    one, two = await make.session(), await make.session()
    for i in range(10):
        await make.message(one.id if i % 2 else two.id, f"m{i}")
    ones = await store.list_events(session_id=one.id)
    twos = await store.list_events(session_id=two.id)
    for events in (ones, twos):
        ids = [e.id for e in events]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
    merged = sorted([*ones, *twos], key=lambda e: e.id)
    contents = [e.data["message"]["content"] for e in merged if e.type == "message.added"]
    assert contents == [f"m{i}" for i in range(10)]  # commit order


@pytest.mark.parametrize("limit", [1, 3, 7])
async def test_reading_after_an_id_never_skips_one(
    store: Store, make: Factory, clock: ManualClock, limit: int
) -> None:
    session = await make.session()
    for i in range(12):
        await make.message(session.id, f"m{i}")
    everything = await store.list_events(session_id=session.id)
    seen = []
    after = 0
    while True:
        batch = await store.list_events(session_id=session.id, after_id=after, limit=limit)
        if not batch:
            break
        assert len(batch) <= limit
        seen.extend(batch)
        after = batch[-1].id
    assert seen == everything
    assert len(everything) == 13


async def test_a_refused_change_writes_no_event(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    await make.held(session.id)
    before = await store.list_events(session_id=session.id)
    with pytest.raises(SessionBusy):
        await make.run(session.id, if_busy=IfBusy.REJECT)
    assert await store.list_events(session_id=session.id) == before
    stored = await store.get_session(session.id)
    assert stored is not None and stored.run_count == 1


async def test_list_events_needs_exactly_one_target(store: Store) -> None:
    with pytest.raises(ValueError):
        await store.list_events()
    with pytest.raises(ValueError):
        await store.list_events(session_id="a", run_id="b")


async def test_an_unknown_event_type_is_refused_before_anything_is_written(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    assert isinstance(store, SqlStore)
    session = await make.session()
    with pytest.raises(ValueError, match=r"session\.renamed"):
        async with store.database.write() as tx:
            await store._event(
                tx,
                "session.renamed",  # type: ignore[arg-type]  # what a typo would write
                owner=OWNER,
                now=clock.now(),
                session_id=session.id,
            )
    events = await store.list_events(session_id=session.id)
    assert [e.type for e in events] == [EventType.SESSION_CREATED]


async def test_events_read_back_typed(store: Store, make: Factory, clock: ManualClock) -> None:
    session = await make.session()
    run = await make.held(session.id)
    await store.finish_run(
        run.id, worker_id=WORKER, status=RunStatus.FAILED, now=clock.now(), output=None
    )
    await store.update_session(session.id, owner=None, now=clock.now(), project={"dir": "x"})
    events = await store.list_events(session_id=session.id)
    assert all(isinstance(e.type, EventType) for e in events)
    failed = next(e for e in events if e.type in TERMINAL_RUN_EVENTS)
    assert failed.type is EventType.RUN_FAILED
    assert (failed.run.id, failed.run.status) == (run.id, RunStatus.FAILED)
    updated = events[-1]
    assert updated.type is EventType.SESSION_UPDATED
    assert updated.changed == ["context", "project"]  # the project, under both its names
    assert updated.session.project == {"dir": "x"}
    assert updated.data["session"]["context"] == {"dir": "x"}
    with pytest.raises(ValueError, match="carries no step"):
        _ = updated.step


async def test_an_event_id_is_never_reused_after_the_newest_events_are_deleted(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    """Event ids are stream cursors: deleting the newest events (a run's, then a session's) must
    not hand their ids out again."""
    kept = await make.session()
    gone = await make.session()
    run = await make.run(gone.id)
    await store.cancel_run(run.id, owner=None, now=clock.now(), reason="not needed")
    of_run = max(e.id for e in await store.list_events(run_id=run.id))
    await store.delete_run(run.id, owner=None)
    first = await make.message(kept.id, "after the run went")
    await make.message(gone.id, "soon deleted")
    of_session = max(e.id for e in await store.list_events(session_id=gone.id))
    await store.delete_session(gone.id, owner=None)
    second = await make.message(kept.id, "after the session went")

    added = {
        e.data["message"]["id"]: e.id
        for e in await store.list_events(session_id=kept.id)
        if e.type == EventType.MESSAGE_ADDED
    }
    assert of_run < added[first.id] < of_session < added[second.id]


async def test_a_batch_after_the_newest_events_were_deleted_takes_new_ids(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    """The same for the events of a batch append, which go in together."""
    kept = await make.session()
    gone = await make.session()
    await make.message(gone.id, "soon deleted")
    newest = max(e.id for e in await store.list_events(session_id=gone.id))
    await store.delete_session(gone.id, owner=None)
    added = await store.add_messages(
        session_id=kept.id,
        owner=None,
        messages=[NewMessage(role=Role.USER, content=f"batch {n}") for n in range(3)],
        now=clock.now(),
    )
    ids = {
        e.data["message"]["id"]: e.id
        for e in await store.list_events(session_id=kept.id)
        if e.type == EventType.MESSAGE_ADDED
    }
    assert [ids[m.id] for m in added] == sorted(ids.values())
    assert min(ids.values()) > newest
