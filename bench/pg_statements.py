"""Statements and round trips an ``echo`` run costs on PostgreSQL, worker and submitter apart.

    .venv/bin/python bench/pg_statements.py [--runs 50] [--sessions 1] [--admin-url …] [-v]

A database ``tether_statements_<pid>`` is made (and dropped at the end); a submitting client
(``Service``) and a worker, each on its own store (its own pool and listener, told apart by
``application_name``), run in this process. After 5 warm-up runs, ``--runs`` runs are made in
one session one after the other, each waited for (``wait_run``); with ``--sessions`` N > 1, as
bench/postgres.py submits them instead: round-robin over N sessions (``if_busy=enqueue``, 32
submissions in flight), the last run of each session waited for at the end. Every ``execute`` and
``executemany`` of psycopg is counted as a statement; a round trip is a statement sent outside
a pipeline, one pipeline (its Sync), or a wait inside a pipeline for results not yet read (a
write transaction is one pipeline that reads its statements' rows as it goes). Counts, not
times: they do not depend on the machine's load.
``-v`` lists the statements by text.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import AsyncConnection, AsyncCursor

from tether.runtime.agent import AgentRegistry
from tether.runtime.builtin import register
from tether.runtime.service import Service
from tether.runtime.worker import Worker
from tether.store.factory import open_store

statements: Counter[str] = Counter()
trips: Counter[str] = Counter()
texts: Counter[tuple[str, str]] = Counter()
pipelined: set[int] = set()
counting = False
_execute, _executemany, _pipeline, _fetch = (
    AsyncCursor.execute,
    AsyncCursor.executemany,
    AsyncConnection.pipeline,
    AsyncCursor._fetch_pipeline,
)


def _count(conn: Any, query: Any) -> None:
    if not counting:
        return
    who = str(conn.info.parameter_status("application_name"))
    statements[who] += 1
    if id(conn) not in pipelined:
        trips[who] += 1
    text = query.decode() if isinstance(query, bytes) else str(query)
    texts[(who, " ".join(text.split())[:100])] += 1


async def _counted(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
    _count(self._conn, query)
    return await _execute(self, query, *args, **kwargs)


async def _counted_many(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
    _count(self._conn, query)
    return await _executemany(self, query, *args, **kwargs)


async def _counted_fetch(self: Any) -> None:
    if counting and self._conn._pipeline and not self.pgresult:  # waits for the server
        trips[str(self._conn.info.parameter_status("application_name"))] += 1
    await _fetch(self)


@contextlib.asynccontextmanager
async def _counted_pipeline(self: Any) -> AsyncIterator[Any]:
    outer = id(self) in pipelined
    if counting and not outer:
        trips[str(self.info.parameter_status("application_name"))] += 1
    pipelined.add(id(self))
    try:
        async with _pipeline(self) as pipeline:
            yield pipeline
    finally:
        if not outer:
            pipelined.discard(id(self))


async def measure(url: str, runs: int, sessions: int) -> None:
    global counting
    submitter = open_store(f"{url}?application_name=submitter")
    executing = open_store(f"{url}?application_name=worker")
    agents = register(AgentRegistry())
    service = Service(submitter, agents=agents, owner="local")
    worker = Worker(executing, agents, worker_id="counted", reap=False)
    worker.start()
    try:
        session = await service.create_session(title="statements")
        for _ in range(5):  # pools, prepared statements, the worker's announcement
            await service.wait_run((await service.create_run(session.id, "warm up")).id)
        counting = True
        if sessions == 1:
            for n in range(runs):
                done = await service.wait_run((await service.create_run(session.id, f"{n}")).id)
                assert done.status.value == "completed", done.status
        else:
            await queued(service, runs, sessions)
        counting = False
    finally:
        await worker.stop(grace=5)
        await submitter.close()
        await executing.close()


async def queued(service: Service, runs: int, sessions: int) -> None:
    """runs echo runs round-robin over new sessions, queued behind each other in each."""
    ids = [(await service.create_session(title=f"queued {n}")).id for n in range(sessions)]
    in_flight = asyncio.Semaphore(32)
    last: dict[str, str] = {}

    async def submit(n: int) -> None:
        async with in_flight:
            run = await service.create_run(
                ids[n % sessions], f"run {n}", input={"text": f"r{n}"}, if_busy="enqueue"
            )
            last[run.session_id] = run.id

    await asyncio.gather(*(submit(n) for n in range(runs)))
    done = await asyncio.gather(*(service.wait_run(rid, timeout=600) for rid in last.values()))
    assert all(r.status.value == "completed" for r in done), "a run did not complete"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--sessions", type=int, default=1, help="> 1: runs queued in sessions")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the statements")
    args = parser.parse_args()
    name = f"tether_statements_{os.getpid()}"
    with psycopg.connect(args.admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    url = urlunsplit(urlsplit(args.admin_url)._replace(path=f"/{name}", query=""))
    AsyncCursor.execute = _counted  # type: ignore[method-assign]
    AsyncCursor.executemany = _counted_many  # type: ignore[method-assign]
    AsyncConnection.pipeline = _counted_pipeline  # type: ignore[method-assign]
    AsyncCursor._fetch_pipeline = _counted_fetch  # type: ignore[method-assign]
    try:
        asyncio.run(measure(url, args.runs, args.sessions))
    finally:
        with psycopg.connect(args.admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())
    how = (
        "one after the other in one session"
        if args.sessions == 1
        else f"queued over {args.sessions} sessions"
    )
    print(f"per echo run, {args.runs} runs {how}:")
    for who in ("worker", "submitter"):
        print(
            f"  {who:9}  statements per run {statements[who] / args.runs:6.2f}"
            f"   round trips per run {trips[who] / args.runs:6.2f}"
        )
    if args.verbose:
        for (who, text), count in sorted(texts.items(), key=lambda kv: (kv[0][0], -kv[1])):
            print(f"  {who:9} {count / args.runs:5.2f}  {text}")


if __name__ == "__main__":
    main()
