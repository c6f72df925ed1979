"""LISTEN/NOTIFY: what one node commits wakes waiters, workers and streams on another."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from tests.postgres.helpers import FAST, run, service, sql, with_stores
from tests.waiting import eventually
from tether.core.message import Role
from tether.runtime.agent import default_registry
from tether.runtime.builtin import register
from tether.runtime.worker import Worker
from tether.store.base import Store
from tether.store.changes import RUNS_TOPIC, session_topic

pytestmark = pytest.mark.postgres

#: Polling so slow that only a notification can explain a prompt wake-up.
NO_POLLING = replace(FAST, poll_interval=60.0, watch_interval=60.0)


async def _woken(store: Store, topic: str, since: int) -> bool:
    """Whether a publish of topic after cursor since reaches store's feed. On PostgreSQL a
    commit made through another store reaches it only by NOTIFY (or a listener's reconnection):
    the feed itself never polls."""
    return await store.changes.wait([topic], 30.0, since=since)


def test_a_commit_on_one_node_wakes_a_waiter_on_another(pg_url: str) -> None:
    async def body(a: Store, b: Store) -> None:
        session = await service(b).create_session()
        await a.get_session(session.id)  # a's pool and listener are up
        since = a.changes.cursor()
        await service(b).add_message(session.id, Role.USER, "hello")
        assert await _woken(a, session_topic(session.id), since)
        since = a.changes.cursor()
        await service(b).create_run(session.id, "go", agent="echo")
        assert await _woken(a, RUNS_TOPIC, since)

    run(with_stores(pg_url, 2, body))


def test_the_listener_reconnects_and_wakes_everyone_after_losing_its_connection(
    pg_url: str,
) -> None:
    async def body(a: Store, b: Store) -> None:
        session = await service(b).create_session()
        await a.get_session(session.id)
        since = a.changes.cursor()
        killed = sql(
            pg_url,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND query = 'LISTEN tether'",
        )
        assert len(killed) == 2  # one listener per store
        assert await _woken(a, session_topic(session.id), since)  # by the reconnection itself
        await eventually(lambda: _listeners(pg_url, 2), what="both listeners back")
        since = a.changes.cursor()
        await service(b).add_message(session.id, Role.USER, "after the reconnection")
        assert await _woken(a, session_topic(session.id), since)

    run(with_stores(pg_url, 2, body))


async def _listeners(url: str, count: int) -> bool:
    rows = sql(
        url,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND query = 'LISTEN tether' AND state = 'idle'",
    )
    return bool(rows[0][0] == count)


def test_a_worker_wakes_on_a_run_created_elsewhere_and_a_stream_elsewhere_sees_it_all(
    pg_url: str,
) -> None:
    async def body(api_a: Store, api_b: Store, worker_store: Store) -> None:
        agents = register(default_registry)
        worker = Worker(worker_store, agents, settings=NO_POLLING, worker_id="far")
        worker.start()
        try:
            await worker_store.get_run("none")  # its pool and listener are up
            svc_a, svc_b = service(api_a, NO_POLLING), service(api_b, NO_POLLING)
            session = await svc_a.create_session()
            created = await svc_a.create_run(
                session.id, "stream me", agent="echo", input={"text": "hi", "steps": 3}
            )
            loop = asyncio.get_running_loop()
            started = loop.time()
            types: list[str] = []
            async for event in svc_b.stream_events(run_id=created.id):
                assert event is not None
                types.append(event.type)
            assert loop.time() - started < 30.0  # polling alone would take 60 s
            assert types[0] == "run.created" and types[-1] == "run.completed"
            assert types.count("step.completed") == 4  # 3 notes and the reply message
            events = await svc_b.list_events(run_id=created.id)
            assert [e.type for e in events] == types
            resumed = [
                e.type
                async for e in svc_a.stream_events(run_id=created.id, after_id=events[2].id)
                if e is not None
            ]
            assert resumed == types[3:]
        finally:
            await worker.stop(grace=1.0)

    run(with_stores(pg_url, 3, body))
