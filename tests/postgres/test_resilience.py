"""Losing database connections (a PostgreSQL restart, a killed backend) is survived."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial

import psycopg
import pytest

from tests.postgres.helpers import FAST, run, service, sql, with_stores
from tests.waiting import eventually
from tether.core.errors import StoreUnavailable
from tether.core.message import Role
from tether.core.status import RunStatus
from tether.runtime.agent import default_registry
from tether.runtime.builtin import register
from tether.runtime.worker import Worker
from tether.store.base import Store

pytestmark = pytest.mark.postgres

KILL_ALL = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


def test_connections_killed_while_idle_are_replaced_transparently(pg_url: str) -> None:
    async def body(store: Store) -> None:
        svc = service(store)
        session = await svc.create_session()
        await asyncio.gather(*(svc.get_session(session.id) for _ in range(5)))  # a few in the pool
        assert sql(pg_url, KILL_ALL)
        assert (await svc.get_session(session.id)).id == session.id  # a read
        await svc.add_message(session.id, Role.USER, "still here")  # a write
        assert len((await svc.list_messages(session.id)).data) == 1

    run(with_stores(pg_url, 1, body))


def test_a_claim_and_a_finish_replace_connections_killed_while_idle(pg_url: str) -> None:
    # Each is one statement committed on its own (commit_one), not a pipelined transaction:
    # it still gets a live connection first.
    async def body(store: Store) -> None:
        svc = service(store)
        session = await svc.create_session()
        created = await svc.create_run(session.id, "survives")
        await asyncio.gather(*(svc.get_session(session.id) for _ in range(5)))  # a few in the pool
        await _kill_all_and_wait(pg_url)
        now = datetime.now(UTC)
        claimed = await store.claim_run(worker_id="w1", now=now, lease_seconds=60)
        assert claimed is not None and claimed.id == created.id
        await _kill_all_and_wait(pg_url)
        done = await store.finish_run(
            created.id, worker_id="w1", status=RunStatus.COMPLETED, now=now, output={"ok": 1}
        )
        assert done.status is RunStatus.COMPLETED

    run(with_stores(pg_url, 1, body))


async def _kill_all_and_wait(url: str) -> None:
    """KILL_ALL, then wait until the killed backends are gone (their connections closed)."""
    killed = {pid for (pid,) in sql(url, KILL_ALL.replace("pg_terminate_backend(pid)", "pid"))}
    assert sql(url, KILL_ALL)

    def gone() -> bool:
        alive = {pid for (pid,) in sql(url, "SELECT pid FROM pg_stat_activity")}
        return not killed & alive

    await eventually(gone, what="the killed backends to exit")


def test_a_call_in_flight_when_its_connection_dies_fails_as_retryable(pg_url: str) -> None:
    async def body(store: Store) -> None:
        svc = service(store)
        session = await svc.create_session()
        with psycopg.connect(pg_url) as blocker:  # holds the session row: the write will wait
            blocker.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (session.id,))
            writing = asyncio.create_task(svc.add_message(session.id, Role.USER, "blocked"))

            async def waiting_on_the_lock() -> bool:
                return bool(
                    sql(
                        pg_url,
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE datname = current_database() AND wait_event_type = 'Lock'",
                    )
                )

            await eventually(waiting_on_the_lock)
            with pytest.raises(StoreUnavailable) as raised:
                await writing
            assert raised.value.retryable and raised.value.http_status == 503
        await svc.add_message(session.id, Role.USER, "retried")
        assert [m.content for m in (await svc.list_messages(session.id)).data] == ["retried"]

    run(with_stores(pg_url, 1, body))


def test_workers_carry_on_through_lost_connections_and_every_run_ends(pg_url: str) -> None:
    settings = replace(FAST, lease_seconds=1.5, concurrency=4)

    async def body(api: Store, worker_store: Store, other_store: Store) -> None:
        agents = register(default_registry)
        workers = [
            Worker(worker_store, agents, settings=settings, worker_id="one"),
            Worker(other_store, agents, settings=settings, worker_id="two"),
        ]
        for worker in workers:
            worker.start()
        try:
            svc = service(api, settings)
            runs = []
            for _ in range(6):
                session = await svc.create_session()
                for _ in range(4):
                    runs.append(
                        await svc.create_run(
                            session.id, "x", input={"steps": 3, "sleep": 0.1}, if_busy="enqueue"
                        )
                    )
            done = 0
            for _ in range(4):  # each time some work was done since the last cut
                done = await eventually(partial(_steps_done, pg_url, done), what="more steps")
                sql(pg_url, KILL_ALL)

            async def all_ended() -> bool:
                try:
                    states = [(await svc.get_run(r.id)).status for r in runs]
                except StoreUnavailable:
                    return False
                return all(s not in (RunStatus.READY, RunStatus.RUNNING) for s in states)

            await eventually(all_ended, timeout=60, every=0.2, what="every run to end")
            final = [await svc.get_run(r.id) for r in runs]
            assert sum(r.status is RunStatus.COMPLETED for r in final) >= len(runs) // 2
            for ended in final:  # a run whose connection died mid-step failed, and said why
                if ended.status is not RunStatus.COMPLETED:
                    assert ended.error is not None
                    assert ended.error.type in ("StoreUnavailable", "worker_lost")
        finally:
            for worker in workers:
                await worker.stop(grace=1.0)

    run(with_stores(pg_url, 3, body))


def test_prepared_statements_survive_a_schema_change_made_by_another_node(pg_url: str) -> None:
    async def body(store: Store) -> None:
        svc = service(store)
        session = await svc.create_session()
        created = await svc.create_run(session.id, "x")
        for _ in range(8):  # psycopg prepares a statement from its fifth use
            await svc.get_run(created.id)
            await store.update_session(session.id, owner=None, now=svc.clock.now(), title="t")
        sql(pg_url, "ALTER TABLE runs ADD COLUMN added_later text")
        sql(pg_url, "ALTER TABLE sessions ADD COLUMN added_later text")
        assert (await svc.get_run(created.id)).id == created.id
        await store.update_session(session.id, owner=None, now=svc.clock.now(), title="u")
        assert (await svc.get_session(session.id)).title == "u"

    run(with_stores(pg_url, 1, body))


def _steps_done(url: str, more_than: int) -> int:
    """How many steps completed, once more than more_than have (else 0)."""
    done = sql(url, "SELECT count(*) FROM steps WHERE status = 'completed'")[0][0]
    return int(done) if done > more_than else 0
