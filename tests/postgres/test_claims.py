"""Claiming across connections and nodes: each run once, never two active runs per session."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime

import psycopg
import pytest

from tests.postgres.helpers import (
    check_runs_in_log,
    run,
    service,
    sql,
    waits_on_a_lock,
    with_stores,
)
from tests.waiting import eventually
from tether.core.message import Role
from tether.core.run import IfBusy
from tether.core.status import RunStatus
from tether.core.step import StepKind
from tether.store.base import Store
from tether.store.postgres.database import ConcurrentUpdate
from tether.store.postgres.store import _retried

pytestmark = pytest.mark.postgres


def now() -> datetime:
    return datetime.now(UTC)


async def _enqueue(store: Store, sessions: int, runs_each: int) -> list[str]:
    svc = service(store)
    ids = [(await svc.create_session(title=f"s{i}")).id for i in range(sessions)]
    for _ in range(runs_each):
        for sid in ids:
            await svc.create_run(sid, "work", agent="echo", if_busy=IfBusy.ENQUEUE)
    return ids


def test_many_claimers_on_many_nodes_take_each_run_once_in_session_order(pg_url: str) -> None:
    sessions, runs_each = 30, 4

    async def body(*stores: Store) -> None:
        session_ids = await _enqueue(stores[0], sessions, runs_each)
        claimed: list[str] = []

        async def claimer(store: Store, name: str) -> None:
            while len(claimed) < sessions * runs_each:  # a duplicate claim ends it early
                got = await store.claim_run(worker_id=name, now=now(), lease_seconds=30)
                if got is None:
                    await asyncio.sleep(0.01)  # a worker's poll interval
                    continue
                claimed.append(got.id)
                await asyncio.sleep(random.uniform(0, 0.005))
                await store.finish_run(
                    got.id, worker_id=name, status=RunStatus.COMPLETED, now=now(), output={}
                )

        await asyncio.gather(
            *(claimer(store, f"w{n}-{k}") for n, store in enumerate(stores) for k in range(6))
        )
        assert len(claimed) == len(set(claimed)) == sessions * runs_each
        for sid in session_ids:
            events = await stores[0].list_events(session_id=sid, limit=10_000)
            by_run = check_runs_in_log(events)
            assert len(by_run) == runs_each
            for types in by_run.values():
                assert types == ["run.created", "run.started", "run.completed"]

    run(with_stores(pg_url, 4, body))


def test_a_claim_storm_hands_out_distinct_runs(pg_url: str) -> None:
    async def body(*stores: Store) -> None:
        await _enqueue(stores[0], 40, 1)
        got = await asyncio.gather(
            *(
                stores[i % len(stores)].claim_run(worker_id=f"w{i}", now=now(), lease_seconds=30)
                for i in range(60)
            )
        )
        ids = [r.id for r in got if r is not None]
        assert len(ids) == len(set(ids)) == 40
        active = sql(
            pg_url,
            "SELECT session_id FROM runs WHERE status IN ('running', 'waiting')"
            " GROUP BY session_id HAVING count(*) > 1",
        )
        assert active == []

    run(with_stores(pg_url, 5, body))


def test_a_claim_refused_by_the_one_active_run_index_is_retried_not_raised(pg_url: str) -> None:
    """Another transaction makes a run of the session active while a claim is deciding: the
    claim's insert into the unique index waits, then fails; the store retries and sees the
    session busy."""

    async def body(store: Store) -> None:
        svc = service(store)
        session = await svc.create_session()
        ready = await svc.create_run(session.id, "first", agent="echo")
        with psycopg.connect(pg_url) as other:  # a transaction left open
            other.execute(
                "INSERT INTO runs (id, session_id, owner, seq, agent, goal, status, created_at,"
                " updated_at) SELECT 'x-' || id, session_id, owner, 99, agent, goal, 'waiting',"
                " created_at, updated_at FROM runs WHERE id = %s",
                (ready.id,),
            )
            claim = asyncio.create_task(store.claim_run(worker_id="w", now=now(), lease_seconds=30))
            await eventually(lambda: waits_on_a_lock(pg_url), what="the claim to wait")
            assert not claim.done()  # waiting on the uncommitted index entry
            other.commit()
            assert await claim is None
        assert (await svc.get_run(ready.id)).status is RunStatus.READY

    run(with_stores(pg_url, 1, body))


def test_an_operation_that_lost_a_race_runs_again() -> None:
    calls: list[int] = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConcurrentUpdate("deadlock detected")
        return "ok"

    async def retried() -> object:
        return await _retried(flaky)()

    assert run(retried()) == "ok"
    assert len(calls) == 3


@pytest.mark.parametrize("said", [False, True], ids=["steps", "steps with messages"])
def test_steps_recorded_at_once_on_one_run_get_distinct_seqs(pg_url: str, said: bool) -> None:
    async def body(a: Store, b: Store) -> None:
        svc = service(a)
        session = await svc.create_session()
        await svc.create_run(session.id, "parallel tools", agent="echo")
        held = await a.claim_run(worker_id="w", now=now(), lease_seconds=30)
        assert held is not None
        asked = [svc.add_message(session.id, "user", f"asked {n}") for n in range(5 if said else 0)]
        steps, _ = await asyncio.gather(
            asyncio.gather(
                *(
                    (a, b)[n % 2].record_step(
                        run_id=held.id,
                        worker_id="w",
                        position=n,
                        kind=StepKind.TOOL_CALL,
                        name="tool",
                        input={"n": n},
                        now=now(),
                        message=(Role.ASSISTANT, f"said {n}", {}) if said else None,
                    )
                    for n in range(20)
                )
            ),
            asyncio.gather(*asked),
        )
        assert sorted(s.seq for s in steps) == list(range(1, 21))
        assert [s.seq for s in await a.list_steps(held.id)] == list(range(1, 21))
        messages = await a.list_messages(session.id, limit=100)
        assert [m.seq for m in messages] == list(range(1, 26 if said else 1))

    run(with_stores(pg_url, 2, body))


def test_claimers_that_skip_the_look_when_told_more_take_each_run_once(pg_url: str) -> None:
    sessions, runs_each = 20, 3

    async def body(*stores: Store) -> None:
        await _enqueue(stores[0], sessions, runs_each)
        claimed: list[str] = []

        async def claimer(store: Store, name: str) -> None:
            more = False
            while len(claimed) < sessions * runs_each:
                got, more = await store.claim_next(
                    worker_id=name, now=now(), lease_seconds=30, look=not more
                )
                if got is None:
                    await asyncio.sleep(0.01)
                    continue
                claimed.append(got.id)
                await store.finish_run(
                    got.id, worker_id=name, status=RunStatus.COMPLETED, now=now(), output={}
                )

        await asyncio.gather(
            *(claimer(store, f"w{n}-{k}") for n, store in enumerate(stores) for k in range(4))
        )
        assert len(claimed) == len(set(claimed)) == sessions * runs_each

    run(with_stores(pg_url, 3, body))


def test_a_claim_counts_as_more_only_runs_another_claim_could_take(pg_url: str) -> None:
    async def body(store: Store) -> None:
        svc = service(store)
        first = await svc.create_session()
        await svc.create_run(first.id, "one", agent="echo")
        await svc.create_run(first.id, "queued behind one", agent="echo", if_busy=IfBusy.ENQUEUE)
        other = await svc.create_session()
        await svc.create_run(other.id, "another agent's", agent="coder")
        got, more = await store.claim_next(
            worker_id="w", now=now(), lease_seconds=30, agents=["echo"]
        )
        assert got is not None and got.goal == "one"
        assert more is False  # the queued run waits for "one"; the coder run is not ours
        await store.finish_run(got.id, worker_id="w", status=RunStatus.COMPLETED, now=now())
        third = await svc.create_session()
        await svc.create_run(third.id, "three", agent="echo")
        got, more = await store.claim_next(
            worker_id="w", now=now(), lease_seconds=30, agents=["echo"]
        )
        assert got is not None and got.goal == "queued behind one"
        assert more is True  # "three" can start too

    run(with_stores(pg_url, 1, body))
