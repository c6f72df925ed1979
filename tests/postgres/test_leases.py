"""Leases and the reaper across nodes: a lost node's runs are finished by another, once."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from tests.postgres.helpers import FAST, run, service, with_stores
from tests.waiting import WAIT, eventually
from tether.core.status import RunStatus
from tether.runtime.agent import default_registry
from tether.runtime.builtin import register
from tether.runtime.worker import Worker
from tether.store.base import Store

pytestmark = pytest.mark.postgres


def test_a_run_held_by_a_lost_node_is_reaped_by_a_worker_on_another(pg_url: str) -> None:
    async def body(lost: Store, alive: Store) -> None:
        svc = service(alive)
        session = await svc.create_session()
        created = await svc.create_run(session.id, "doomed", agent="echo")
        queued = await svc.create_run(session.id, "next", agent="echo", if_busy="enqueue")
        held = await lost.claim_run(worker_id="lost-node", now=datetime.now(UTC), lease_seconds=1.0)
        assert held is not None and held.id == created.id  # and then that node goes silent
        worker = Worker(alive, register(default_registry), settings=FAST, worker_id="alive")
        worker.start()
        try:

            async def both_done() -> bool:
                runs = [await svc.get_run(r.id) for r in (created, queued)]
                return all(r.is_terminal for r in runs)

            await eventually(both_done)
        finally:
            await worker.stop(grace=1.0)
        reaped = await svc.get_run(created.id)
        assert reaped.status is RunStatus.FAILED
        assert reaped.error is not None and reaped.error.type == "worker_lost"
        assert (await svc.get_run(queued.id)).status is RunStatus.COMPLETED

    run(with_stores(pg_url, 2, body))


def test_reapers_on_many_nodes_finish_each_lost_run_once(pg_url: str) -> None:
    async def body(*stores: Store) -> None:
        svc = service(stores[0])
        now = datetime.now(UTC)
        for _ in range(30):
            session = await svc.create_session()
            await svc.create_run(session.id, "x", agent="echo", max_attempts=2)
        while await stores[0].claim_run(worker_id="gone", now=now, lease_seconds=1) is not None:
            pass
        later = now + timedelta(seconds=5)
        rounds = await asyncio.gather(
            *(store.reap_runs(now=later, limit=7) for store in stores for _ in range(3))
        )
        reaped = [r.id for batch in rounds for r in batch]
        assert len(reaped) == len(set(reaped)) == 30
        assert all(r.status is RunStatus.READY and r.attempt == 2 for b in rounds for r in b)

    run(with_stores(pg_url, 4, body))


def test_a_live_worker_keeps_its_lease_and_no_one_reaps_it(pg_url: str) -> None:
    settings = replace(FAST, lease_seconds=2.0)

    async def body(a: Store, b: Store) -> None:
        svc = service(a, settings)
        session = await svc.create_session()
        created = await svc.create_run(session.id, "slow", input={"sleep": 5})
        workers = [
            Worker(a, register(default_registry), settings=settings, worker_id="a"),
            Worker(b, register(default_registry), settings=settings, worker_id="b"),
        ]
        for worker in workers:
            worker.start()
        try:
            done = await svc.wait_run(created.id, timeout=WAIT)
        finally:
            for worker in workers:
                await worker.stop(grace=1.0)
        assert done.status is RunStatus.COMPLETED
        types: list[str] = [e.type for e in await svc.list_events(run_id=created.id)]
        assert types.count("run.started") == 1 and "run.requeued" not in types

    run(with_stores(pg_url, 2, body))
