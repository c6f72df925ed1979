"""Event ids increase in commit order within a session, whatever writes concurrently.

A trigger sleeps a little after every event insert, widening the gap between allocating an id
and committing it: without per-session serialisation, a transaction would commit id N+1 while
N is still in flight, and a reader resuming after N+1 would never see N.
"""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime

import pytest

from tests.postgres.helpers import run, service, sql, with_stores
from tether.core.memory import MemoryScope
from tether.core.run import IfBusy
from tether.core.step import StepKind
from tether.store.base import Store

pytestmark = pytest.mark.postgres

SLOW_COMMITS = """
CREATE FUNCTION slow_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(random() * 0.004); RETURN NULL; END $$;
CREATE TRIGGER slow_event AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION slow_event();
"""


def now() -> datetime:
    return datetime.now(UTC)


def test_a_reader_resuming_after_any_id_never_skips_an_event(pg_url: str) -> None:
    sql(pg_url, SLOW_COMMITS)

    async def body(*stores: Store) -> None:
        svc = service(stores[0])
        session = await svc.create_session()
        first = await svc.create_run(session.id, "held", agent="echo")
        held = await stores[0].claim_run(worker_id="w", now=now(), lease_seconds=60)
        assert held is not None and held.id == first.id
        writing = True

        async def steps(store: Store) -> None:  # locks the run row only
            for position in range(40):
                await store.record_step(
                    run_id=held.id,
                    worker_id="w",
                    position=position,
                    kind=StepKind.NOTE,
                    name="note",
                    input={"n": position},
                    now=now(),
                )

        async def runs(store: Store) -> None:  # locks the session row
            for _ in range(20):
                await service(store).create_run(session.id, "queued", if_busy=IfBusy.ENQUEUE)

        async def memory(store: Store) -> None:  # the run's working memory
            for n in range(20):
                await store.put_memory(
                    scope=MemoryScope.RUN,
                    scope_id=held.id,
                    key=f"k{n % 3}",
                    value=n,
                    owner=None,
                    now=now(),
                )

        async def tail(store: Store) -> list[int]:
            seen: list[int] = []
            while True:
                done = not writing
                events = await store.list_events(
                    session_id=session.id, after_id=seen[-1] if seen else 0
                )
                seen.extend(e.id for e in events)
                if done and not events:
                    return seen
                await asyncio.sleep(random.uniform(0, 0.002))

        tails = [asyncio.create_task(tail(store)) for store in stores]
        await asyncio.gather(steps(stores[0]), runs(stores[1]), memory(stores[2]), runs(stores[0]))
        writing = False
        everything = [e.id for e in await stores[0].list_events(session_id=session.id)]
        assert len(everything) > 100
        for seen in await asyncio.gather(*tails):
            assert seen == everything

    run(with_stores(pg_url, 3, body))


def test_user_memory_events_of_one_owner_are_ordered_too(pg_url: str) -> None:
    sql(pg_url, SLOW_COMMITS)

    async def body(*stores: Store) -> None:
        writing = True

        async def write(store: Store, n: int) -> None:
            for i in range(25):
                await store.put_memory(
                    scope=MemoryScope.USER,
                    scope_id="alice",
                    key=f"k{n}-{i}",
                    value=i,
                    owner="alice",
                    now=now(),
                )

        async def tail() -> list[int]:
            seen: list[int] = []
            while True:
                done = not writing
                rows = await asyncio.to_thread(
                    sql,
                    pg_url,
                    "SELECT id FROM events WHERE owner = 'alice' AND id > %s ORDER BY id",
                    seen[-1] if seen else 0,
                )
                seen.extend(r[0] for r in rows)
                if done and not rows:
                    return seen
                await asyncio.sleep(0.001)

        tailing = asyncio.create_task(tail())
        await asyncio.gather(*(write(stores[n % 3], n) for n in range(6)))
        writing = False
        everything = [r[0] for r in sql(pg_url, "SELECT id FROM events ORDER BY id")]
        assert await tailing == everything

    run(with_stores(pg_url, 3, body))
