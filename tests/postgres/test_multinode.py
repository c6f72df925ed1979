"""Several nodes on one PostgreSQL: two ``tether serve`` and two ``tether worker`` processes on
loopback share a database. Runs submitted through both servers are each executed exactly once,
in order per session, never two at a time in a session; a run is streamed from the server it
was not submitted to; a SIGKILLed worker's run is reaped by the other; and a database outage
mid-load (every connection killed, connections refused for a few seconds) leaves every run in
a terminal state.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from psycopg import sql as pgsql

from tests.pg import Databases, admin
from tests.postgres.helpers import check_runs_in_log, run, sql
from tests.postgres.nodes import Server, WorkerNode
from tests.waiting import eventually
from tether.client import AsyncClient
from tether.core.run import Run
from tether.core.status import RunStatus
from tether.store.factory import open_store

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

UNFINISHED = "SELECT count(*) FROM runs WHERE status IN ('ready', 'running')"
COMPLETED_OF = "SELECT count(*) FROM runs WHERE id = ANY(%s) AND status = 'completed'"


@dataclass
class Cluster:
    url: str
    name: str
    servers: list[Server]
    workers: list[WorkerNode]
    logs: Path

    def clients(self) -> list[AsyncClient]:
        return [AsyncClient(s.url, timeout=60) for s in self.servers]

    async def settled(self, timeout: float = 180.0) -> None:
        """Wait until no run is ready or running."""

        async def none_left() -> bool:
            return not (await asyncio.to_thread(sql, self.url, UNFINISHED))[0][0]

        try:
            await eventually(none_left, timeout=timeout, every=0.2, what="every run to end")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.dump()}") from exc

    def dump(self) -> str:
        return "\n".join(f"--- {n.name}\n{n.output()[-3000:]}" for n in self.servers + self.workers)


@pytest.fixture(scope="module")
def cluster(pg_databases: Databases, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    url = pg_databases.new_url()
    logs = tmp_path_factory.mktemp("nodes")
    servers = [Server(f"server-{n}", url, logs) for n in "ab"]
    workers = [WorkerNode(f"worker-{n}", url, logs) for n in (1, 2)]
    made = Cluster(url, url.rsplit("/", 1)[1].split("?")[0], servers, workers, logs)
    try:
        yield made
    finally:
        for node in made.servers + made.workers:
            node.stop()
        pg_databases.drop_made()


def test_runs_through_both_servers_complete_exactly_once_in_session_order(
    cluster: Cluster,
) -> None:
    sessions, runs_each = 50, 10

    async def main() -> None:
        clients = cluster.clients()
        try:
            made = await asyncio.gather(
                *(clients[n % 2].create_session(title=f"s{n}") for n in range(sessions))
            )
            limit = asyncio.Semaphore(16)

            async def submit(n: int) -> str:
                async with limit:
                    created = await clients[n % 2].create_run(
                        made[n % sessions].id,
                        f"run {n}",
                        agent="echo",
                        input={"text": f"r{n}", "steps": 1},
                        if_busy="enqueue",
                    )
                    return created.id

            run_ids = await asyncio.gather(*(submit(n) for n in range(sessions * runs_each)))
            await cluster.settled()
        finally:
            for client in clients:
                await client.close()
        store = open_store(cluster.url)
        try:
            for session in made:
                events = await store.list_events(session_id=session.id, limit=10_000)
                by_run = check_runs_in_log(events)  # one at a time, in seq order
                assert len(by_run) == runs_each
                replies = Counter(
                    e.run_id
                    for e in events
                    if e.type == "message.added" and e.data["message"]["role"] == "assistant"
                )
                for run_id, types in by_run.items():
                    assert types == ["run.created", "run.started", "run.completed"], run_id
                    assert replies[run_id] == 1  # the agent ran once
            states = sql(cluster.url, "SELECT status, count(*) FROM runs GROUP BY 1")
            assert states == [("completed", len(run_ids))]
        finally:
            await store.close()

    run(main(), timeout=300)


def test_a_run_submitted_to_one_server_streams_complete_from_the_other(cluster: Cluster) -> None:
    async def main() -> None:
        a, b = cluster.clients()
        try:
            session = await a.create_session(title="streamed")
            created = await a.create_run(
                session.id, "slow", agent="echo", input={"text": "x", "steps": 3, "sleep": 0.5}
            )
            seen = [e async for e in b.stream_events(run_id=created.id) if e is not None]
            assert seen[0].type == "run.created"
            assert seen[-1].type == "run.completed"
            assert [e.id for e in seen] == sorted(e.id for e in seen)
            assert seen == await a.list_events(run_id=created.id)
            resumed = [
                e
                async for e in b.stream_events(run_id=created.id, after_id=seen[2].id)
                if e is not None
            ]
            assert resumed == seen[3:]
        finally:
            await a.close()
            await b.close()

    run(main())


def test_a_worker_killed_mid_run_is_reaped_by_the_other(cluster: Cluster) -> None:
    async def main() -> None:
        a, _ = clients = cluster.clients()
        try:
            session = await a.create_session(title="doomed")
            created = await a.create_run(
                session.id, "long", agent="echo", input={"sleep": 3, "steps": 1}, max_attempts=2
            )

            async def running() -> Run | None:
                held = await a.get_run(created.id)
                return held if held.status is RunStatus.RUNNING else None

            held = await eventually(running, what="the run to start")
            victim = next(w for w in cluster.workers if w.holds(held.worker_id))
            survivor = next(w for w in cluster.workers if w is not victim)
            victim.kill()
            done = await a.wait_run(created.id, timeout=60)
            assert done.status is RunStatus.COMPLETED, done
            assert done.attempt == 2
            events = await a.list_events(run_id=created.id)
            starts = [e.data["run"]["worker_id"] for e in events if e.type == "run.started"]
            assert len(starts) == 2
            assert victim.holds(starts[0]) and survivor.holds(starts[1])
            requeued = [e for e in events if e.type == "run.requeued"]
            assert [e.data["reason"] for e in requeued] == ["worker_lost"]
            cluster.workers[cluster.workers.index(victim)] = WorkerNode(
                f"{victim.name}-again", cluster.url, cluster.logs
            )
        finally:
            for client in clients:
                await client.close()

    run(main())


def test_a_database_outage_mid_load_leaves_every_run_terminal(cluster: Cluster) -> None:
    async def main() -> None:
        a, b = clients = cluster.clients()
        try:
            sessions = [await (a, b)[n % 2].create_session(title=f"o{n}") for n in range(20)]
            run_ids = [
                (
                    await (a, b)[n % 2].create_run(
                        sessions[n % 20].id,
                        f"o{n}",
                        agent="echo",
                        input={"steps": 2, "sleep": 0.05},
                        if_busy="enqueue",
                    )
                ).id
                for n in range(120)
            ]

            def some_done() -> bool:  # mid-load: some runs ended, most have not
                return bool(sql(cluster.url, COMPLETED_OF, run_ids)[0][0] >= 10)

            await eventually(some_done, what="the first runs to complete")
            await asyncio.to_thread(outage, cluster.name, seconds=3.0)
            await cluster.settled()
            ended = Counter(
                status
                for (status,) in sql(
                    cluster.url, "SELECT status FROM runs WHERE id = ANY(%s)", run_ids
                )
            )
            assert set(ended) <= {"completed", "failed"}, ended
            assert ended["completed"] >= len(run_ids) // 2, ended
        finally:
            for client in clients:
                await client.close()
        store = open_store(cluster.url)
        try:
            for session in sessions:
                events = await store.list_events(session_id=session.id, limit=10_000)
                for types in check_runs_in_log(events).values():
                    assert types.count("run.started") <= 1
                    assert sum(t in ("run.completed", "run.failed") for t in types) == 1
        finally:
            await store.close()
        for node in cluster.servers + cluster.workers:
            assert node.proc.poll() is None, node.output()  # every node carried on

    run(main(), timeout=300)


def outage(database: str, *, seconds: float) -> None:
    """What clients see of a restart: every connection cut, new ones refused for a while."""
    name = pgsql.Identifier(database)
    admin(pgsql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(name))
    try:
        admin(
            pgsql.SQL(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = {}"
            ).format(pgsql.Literal(database))
        )
        time.sleep(seconds)
    finally:
        admin(pgsql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(name))
