"""How many statements an ``echo`` run costs on PostgreSQL (submitter and worker together): a
count, not a time, so it cannot flake with the machine's load; it guards the batching (a write
transaction is one pipeline committed by its Sync, without BEGIN or COMMIT; events, their locks,
notifications and the statements left for later in one statement; a claim in one statement that
says whether another run waits, with its event; a run's start read in one round trip)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from psycopg import AsyncCursor

from tests.postgres.helpers import run, service, with_stores
from tether.runtime.settings import RuntimeSettings
from tether.runtime.worker import Worker
from tether.store.base import Store

pytestmark = pytest.mark.postgres

#: No timer fires during a run (lease renewals, watch and poll timeouts): only wake-ups count.
QUIET = RuntimeSettings(poll_interval=60, watch_interval=60, reap_interval=60, lease_seconds=180)
RUNS = 20
#: Statements per run: 56 before any batching (13 to create and wait, 43 to execute), then 43
#: (10 and 33), then 27 (8 and 19), then 25 (8 and 17), now 22 (8 and 14: a claim's and a
#: finish's run events in their own statements); the margin is for an empty claim attempt
#: more or less, which depends on the order the claim loop's wake-ups come in.
MOST = 24


def test_an_echo_run_costs_at_most_24_statements(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: Counter[str] = Counter()
    execute, executemany = AsyncCursor.execute, AsyncCursor.executemany

    async def counted(self: AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        sent["statements"] += 1
        return await execute(self, query, *args, **kwargs)

    async def counted_many(self: AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        sent["statements"] += 1
        return await executemany(self, query, *args, **kwargs)

    async def body(store: Store) -> float:
        svc = service(store, QUIET)
        worker = Worker(store, svc.agents, settings=QUIET, worker_id="counted", reap=False)
        worker.start()
        try:
            session = await svc.create_session()
            for _ in range(3):  # pools, prepared statements, the worker's announcement
                await svc.wait_run((await svc.create_run(session.id, "warm up")).id)
            monkeypatch.setattr(AsyncCursor, "execute", counted)
            monkeypatch.setattr(AsyncCursor, "executemany", counted_many)
            for n in range(RUNS):
                done = await svc.wait_run((await svc.create_run(session.id, f"run {n}")).id)
                assert done.status.value == "completed"
            monkeypatch.undo()
        finally:
            await worker.stop(grace=5)
        return sent["statements"] / RUNS

    per_run = run(with_stores(pg_url, 1, body))
    assert per_run <= MOST, f"{per_run:.1f} statements per echo run (at most {MOST})"
