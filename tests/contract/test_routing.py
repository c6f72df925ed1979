"""Agent routing on both backends: a claim takes only runs of the agents the worker has, workers
announce their agents, and a ready run whose agent no live worker has is counted, listed and,
after the grace period, failed with agent_not_found."""

from __future__ import annotations

from datetime import timedelta

from tests.support import LEASE_SECONDS, OWNER, WORKER, Factory, event_types
from tether.core.clock import ManualClock
from tether.core.event import EventType
from tether.core.status import RunStatus
from tether.store.base import Store


async def _announce(store: Store, clock: ManualClock, worker: str, *agents: str) -> None:
    now = clock.now()
    await store.announce_worker(
        worker, agents=agents, now=now, expires_at=now + timedelta(seconds=60)
    )


async def test_a_claim_takes_only_runs_of_the_agents_given(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    coder = await make.run((await make.session()).id, agent="coder")
    echo = await make.run((await make.session()).id, agent="echo")
    taken = await store.claim_run(
        worker_id=WORKER, agents=["echo"], now=clock.now(), lease_seconds=LEASE_SECONDS
    )
    assert taken is not None and taken.id == echo.id  # the older coder run is left alone
    assert (
        await store.claim_run(
            worker_id=WORKER, agents=["echo"], now=clock.now(), lease_seconds=LEASE_SECONDS
        )
        is None
    )
    assert (
        await store.claim_run(
            worker_id=WORKER, agents=[], now=clock.now(), lease_seconds=LEASE_SECONDS
        )
        is None
    )
    taken = await store.claim_run(
        worker_id=WORKER, agents=["coder", "echo"], now=clock.now(), lease_seconds=LEASE_SECONDS
    )
    assert taken is not None and taken.id == coder.id


async def test_a_resumed_run_is_claimed_only_by_a_worker_with_its_agent(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    waiting = await make.waiting((await make.session()).id, agent="coder")
    await store.resume_run(waiting.id, owner=None, now=clock.now(), input="go on")
    assert (
        await store.claim_run(
            worker_id=WORKER, agents=["echo"], now=clock.now(), lease_seconds=LEASE_SECONDS
        )
        is None
    )
    taken = await store.claim_run(
        worker_id=WORKER, agents=["coder"], now=clock.now(), lease_seconds=LEASE_SECONDS
    )
    assert taken is not None and taken.id == waiting.id


async def test_live_agents_are_those_of_unexpired_announcements(
    store: Store, clock: ManualClock
) -> None:
    assert await store.live_agents(now=clock.now()) == set()
    await _announce(store, clock, "w1", "echo")
    await _announce(store, clock, "w2", "coder", "echo")
    assert await store.live_agents(now=clock.now()) == {"echo", "coder"}
    await store.retire_worker("w2")
    assert await store.live_agents(now=clock.now()) == {"echo"}
    clock.advance(61)
    assert await store.live_agents(now=clock.now()) == set()
    await _announce(store, clock, "w1", "echo")  # announcing again renews it
    assert await store.live_agents(now=clock.now()) == {"echo"}


async def test_ready_runs_of_agents_no_live_worker_has_are_counted_and_listed_as_stuck(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    await _announce(store, clock, "w1", "echo")
    running = await make.held((await make.session()).id, agent="coder")
    stuck = await make.run((await make.session()).id, agent="coder")
    await make.run((await make.session()).id, agent="echo")
    assert await store.count_unroutable_runs(now=clock.now()) == [("coder", 1)]
    page = await store.list_owner_runs(owner=OWNER, now=clock.now(), stuck=True)
    assert [r.id for r in page.data] == [stuck.id]
    assert running.id not in [r.id for r in page.data]  # running: not stuck
    ready = await store.list_owner_runs(owner=OWNER, now=clock.now(), status=RunStatus.READY)
    assert len(ready.data) == 2 and running.id not in [r.id for r in ready.data]
    one = await store.list_owner_runs(owner=OWNER, now=clock.now(), status=RunStatus.READY, limit=1)
    assert one.next_cursor is not None
    rest = await store.list_owner_runs(
        owner=OWNER, now=clock.now(), status=RunStatus.READY, cursor=one.next_cursor
    )
    assert [r.id for r in one.data + rest.data] == [r.id for r in ready.data]
    await _announce(store, clock, "w2", "coder")
    assert await store.count_unroutable_runs(now=clock.now()) == []


async def test_an_unroutable_run_fails_with_agent_not_found_only_after_the_grace_period(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    await _announce(store, clock, "w1", "echo")
    session = await make.session()
    run = await make.run(session.id, agent="coder")
    routable = await make.run((await make.session()).id, agent="echo")
    grace = timedelta(seconds=30)
    clock.advance(20)
    now = clock.now()
    assert await store.fail_unroutable_runs(now=now, ready_since=now - grace) == []
    clock.advance(20)
    await _announce(store, clock, "w1", "echo")
    now = clock.now()
    (failed,) = await store.fail_unroutable_runs(now=now, ready_since=now - grace)
    assert failed.id == run.id and failed.status is RunStatus.FAILED
    assert failed.error is not None and failed.error.type == "agent_not_found"
    assert "coder" in failed.error.message
    assert failed.ended_at == now
    assert EventType.RUN_FAILED.value in await event_types(store, session_id=session.id)
    again = await store.get_run(routable.id)
    assert again is not None and again.status is RunStatus.READY
    assert await store.fail_unroutable_runs(now=now, ready_since=now - grace) == []


async def test_a_delayed_run_waits_its_grace_period_from_its_not_before(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    later = clock.now() + timedelta(seconds=100)
    await make.run((await make.session()).id, agent="coder", not_before=later)
    clock.advance(110)
    now = clock.now()
    assert await store.fail_unroutable_runs(now=now, ready_since=now - timedelta(seconds=30)) == []
    clock.advance(30)
    now = clock.now()
    failed = await store.fail_unroutable_runs(now=now, ready_since=now - timedelta(seconds=30))
    assert len(failed) == 1
