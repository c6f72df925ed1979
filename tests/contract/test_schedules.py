"""Schedules on both backends: their records, and ticks that fire exactly once, whatever the
number of stores (nodes) firing at the same time, across restarts and missed ticks."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from tests.support import Backend
from tether.core.clock import ManualClock
from tether.core.errors import AgentNotFound, NotFound, SessionClosed, UsageError
from tether.runtime.schedules import fire_due_schedules
from tether.runtime.service import Service
from tether.store.base import Store

START = datetime(2026, 1, 1, tzinfo=UTC)


async def test_a_schedule_is_created_listed_updated_and_deleted(service: Service) -> None:
    made = [await service.create_schedule("*/5 * * * *", input={"text": f"{i}"}) for i in range(3)]
    first = made[0]
    assert first.agent == "echo" and first.timezone == "UTC" and first.enabled
    assert first.next_run_at == START + timedelta(minutes=5)
    assert await service.get_schedule(first.id) == first
    page = await service.list_schedules(limit=2)
    assert [s.id for s in page.data] == [made[0].id, made[1].id]
    assert page.next_cursor is not None
    rest = await service.list_schedules(limit=2, cursor=page.next_cursor)
    assert [s.id for s in rest.data] == [made[2].id] and rest.next_cursor is None

    paused = await service.update_schedule(first.id, enabled=False)
    assert not paused.enabled
    assert [s.id for s in (await service.list_schedules(enabled=False)).data] == [first.id]
    moved = await service.update_schedule(first.id, cron="0 9 * * 1-5", timezone="Europe/Berlin")
    assert moved.next_run_at == datetime(2026, 1, 1, 8, tzinfo=UTC)  # 09:00 in Berlin (UTC+1)
    await service.delete_schedule(first.id)
    with pytest.raises(NotFound):
        await service.get_schedule(first.id)
    with pytest.raises(NotFound):
        await service.for_owner("bob").get_schedule(made[1].id)


async def test_bad_schedules_are_refused(service: Service) -> None:
    with pytest.raises(UsageError, match="5 fields"):
        await service.create_schedule("* * * *")
    with pytest.raises(UsageError, match="timezone"):
        await service.create_schedule("* * * * *", timezone="Mars/Olympus")
    with pytest.raises(UsageError, match="never fires"):
        await service.create_schedule("0 0 30 2 *")
    with pytest.raises(UsageError, match="never fires"):
        await service.create_schedule("0 0 * * *", end_at=START + timedelta(hours=1))
    with pytest.raises(AgentNotFound):
        await service.create_schedule("* * * * *", agent="nobody")
    session = await service.create_session()
    await service.close_session(session.id)
    with pytest.raises(SessionClosed):
        await service.create_schedule("* * * * *", session_id=session.id)


async def test_a_tick_creates_one_run_in_the_schedules_session(
    service: Service, clock: ManualClock
) -> None:
    session = await service.create_session()
    schedule = await service.create_schedule(
        "* * * * *", session_id=session.id, input={"text": "tick"}, metadata={"k": "v"}
    )
    assert await fire_due_schedules(service.store, now=clock.now()) == []  # not due yet
    clock.advance(60)
    (run,) = await fire_due_schedules(service.store, now=clock.now())
    assert run.session_id == session.id and run.goal == "tick" and run.agent == "echo"
    assert run.metadata == {"k": "v", "schedule_id": schedule.id}
    after = await service.get_schedule(schedule.id)
    assert after.last_run_id == run.id
    assert after.next_run_at == START + timedelta(minutes=2)
    assert await fire_due_schedules(service.store, now=clock.now()) == []  # fired once


async def test_missed_ticks_fire_once(service: Service, clock: ManualClock) -> None:
    schedule = await service.create_schedule("* * * * *")
    clock.advance(3600)  # the service was down for an hour: 60 ticks missed
    fired = await fire_due_schedules(service.store, now=clock.now())
    assert len(fired) == 1
    after = await service.get_schedule(schedule.id)
    assert after.next_run_at == clock.now() + timedelta(minutes=1)


async def test_each_tick_may_make_a_new_session(service: Service, clock: ManualClock) -> None:
    schedule = await service.create_schedule("* * * * *", goal="report")
    sessions = set()
    for _ in range(3):
        clock.advance(60)
        (run,) = await fire_due_schedules(service.store, now=clock.now())
        sessions.add(run.session_id)
        session = await service.get_session(run.session_id)
        assert session.metadata == {"schedule_id": schedule.id} and session.title == "report"
    assert len(sessions) == 3


async def test_a_tick_fires_exactly_once_across_nodes(
    backend: Backend, db_url: str, service: Service, clock: ManualClock
) -> None:
    schedules = [await service.create_schedule("* * * * *") for _ in range(5)]
    nodes = [backend.open(db_url) for _ in range(3)]
    try:
        for _ in range(3):
            clock.advance(60)
            results = await asyncio.gather(
                *(fire_due_schedules(node, now=clock.now()) for node in [service.store, *nodes])
            )
            fired = [run.metadata["schedule_id"] for runs in results for run in runs]
            assert sorted(fired) == sorted(s.id for s in schedules)
    finally:
        for node in nodes:
            await node.close()


async def test_schedules_survive_a_restart(
    backend: Backend, db_url: str, store: Store, service: Service, clock: ManualClock
) -> None:
    schedule = await service.create_schedule("0 * * * *")
    reopened = backend.open(db_url)
    try:
        clock.advance(3600)
        (run,) = await fire_due_schedules(reopened, now=clock.now())
        assert run.metadata["schedule_id"] == schedule.id
    finally:
        await reopened.close()


async def test_end_at_and_paused_schedules_do_not_fire(
    service: Service, clock: ManualClock
) -> None:
    ending = await service.create_schedule("* * * * *", end_at=START + timedelta(seconds=90))
    paused = await service.create_schedule("* * * * *", enabled=False)
    assert paused.next_run_at is not None
    clock.advance(60)
    (run,) = await fire_due_schedules(service.store, now=clock.now())
    assert run.metadata["schedule_id"] == ending.id
    assert (await service.get_schedule(ending.id)).next_run_at is None  # 00:02 is past end_at
    clock.advance(600)
    assert await fire_due_schedules(service.store, now=clock.now()) == []
    resumed = await service.update_schedule(paused.id, enabled=True)
    assert resumed.next_run_at == clock.now() + timedelta(minutes=1)


async def test_a_schedule_whose_session_closed_pauses(service: Service, clock: ManualClock) -> None:
    session = await service.create_session()
    schedule = await service.create_schedule("* * * * *", session_id=session.id)
    await service.close_session(session.id)
    clock.advance(60)
    assert await fire_due_schedules(service.store, now=clock.now()) == []
    after = await service.get_schedule(schedule.id)
    assert not after.enabled and after.last_run_id is None
