"""PostgreSQL: runs per second with 1, 2 and 4 worker processes next to SQLite embedded; append
cost against history length as a ratio to a bare psycopg INSERT + COMMIT.

    python bench/postgres.py [--admin-url postgresql://postgres@127.0.0.1:5432/test]
                             [--runs 1000] [--sessions 100] [--processes 1,2,4]
                             [--sizes 100,10000,100000] [--iterations 400]
                             [--synchronous-commit on] [--json results.json]

Runs per second, end to end: ``--sessions`` sessions are made, then the clock starts; ``--runs``
``echo`` runs are submitted round-robin over them (``if_busy=enqueue``, 32 submissions in
flight, through the library on its own connection pool) and the clock stops when the last run of
every session has completed (waited for through the change feed, i.e. LISTEN/NOTIFY). On
PostgreSQL the runs are executed by N ``tether worker`` processes (``--concurrency 8`` each),
started before the clock; on SQLite by the embedded worker of the submitting process (the
``tether.open`` setup), on a file in a temporary folder with ``synchronous=NORMAL``. Beside
each rate: the CPU time the worker processes and the submitting process spent per run (from
/proc), a figure a busy machine does not distort the way it distorts the rate.

Append cost: one session holding H messages and a run held by a worker holding H steps (and an
event for each, bulk-loaded, not measured). Each iteration times, interleaved: a bare psycopg
``INSERT`` of a comparable row (text UUID key, unique (session, seq)) into a table pre-filled
with H rows followed by ``COMMIT``; ``store.add_message``; ``store.record_step``. Appended rows
are trimmed every 25 iterations (not timed) so the history stays at H. Everything runs with the
server's durability settings (``synchronous_commit`` as given; ``on`` waits for the WAL flush).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from rich.console import Console
from rich.table import Table

from tether.core.step import StepKind
from tether.runtime.agent import AgentRegistry
from tether.runtime.builtin import register
from tether.runtime.service import Service
from tether.runtime.worker import Worker
from tether.store.base import Store
from tether.store.factory import open_store

TABLES = "sessions, runs, steps, messages, memory, events, api_keys"
WORKER = "bench-host:1:bench/1"
BARE = """CREATE TABLE IF NOT EXISTS bare (
    id text COLLATE "C" PRIMARY KEY, session_id text COLLATE "C" NOT NULL, seq bigint NOT NULL,
    role text NOT NULL, content text NOT NULL, created_at bigint NOT NULL,
    UNIQUE (session_id, seq))"""
FILL = """
INSERT INTO messages (id, session_id, seq, role, content, metadata, created_at)
SELECT 'm-' || g, %(sid)s, g, 'user', 'message number ' || g, '{}', g
FROM generate_series(1, %(h)s) g;
INSERT INTO steps (id, run_id, session_id, seq, position, kind, name, status, input, output,
                   started_at, ended_at)
SELECT 's-' || g, %(rid)s, %(sid)s, g, g, 'note', 'note', 'completed', '{"n": 1}', '{"ok": true}',
       g, g FROM generate_series(1, %(h)s) g;
INSERT INTO events (type, owner, session_id, run_id, data, created_at)
SELECT 'message.added', 'local', %(sid)s, NULL, '{"message": {"seq": 1}}', g
FROM generate_series(1, %(h)s) g;
INSERT INTO bare (id, session_id, seq, role, content, created_at)
SELECT 'b-' || g, %(sid)s, g, 'user', 'message number ' || g, g FROM generate_series(1, %(h)s) g;
UPDATE sessions SET message_count = %(h)s WHERE id = %(sid)s;
UPDATE runs SET step_count = %(h)s WHERE id = %(rid)s;
"""
TRIM = """
DELETE FROM messages WHERE session_id = %(sid)s AND seq > %(h)s;
DELETE FROM steps WHERE run_id = %(rid)s AND seq > %(h)s;
DELETE FROM events WHERE id > %(mark)s;
DELETE FROM bare WHERE seq > %(h)s;
UPDATE sessions SET message_count = %(h)s WHERE id = %(sid)s;
UPDATE runs SET step_count = %(h)s WHERE id = %(rid)s;
"""


def database_url(admin_url: str, name: str, synchronous_commit: str) -> str:
    parts = urlsplit(admin_url)
    query = "options=" + quote(f"-c synchronous_commit={synchronous_commit}")
    return urlunsplit(parts._replace(path=f"/{name}", query=query))


def admin(admin_url: str, statement: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(statement.encode())


def execute(url: str, script: str, **params: Any) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in filter(str.strip, script.split(";")):
            conn.execute(statement.encode() if not params else statement, params or None)


# -- runs per second ------------------------------------------------------------------------------


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user + system) the processes used so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


@dataclass
class Rate:
    """A throughput figure and the CPU it cost, per run."""

    runs_per_second: float
    worker_cpu_ms: float
    submitter_cpu_ms: float


async def workload(
    store: Store, runs: int, sessions: int, workers: list[int] | None = None
) -> Rate:
    """Submit runs over sessions and wait for all of them. Worker CPU is that of the given
    processes (None: they run in this process, counted as the submitter's)."""
    service = Service(store, owner="local")
    ids = [(await service.create_session(title=f"bench {n}")).id for n in range(sessions)]
    in_flight = asyncio.Semaphore(32)
    last: dict[str, str] = {}

    async def submit(n: int) -> None:
        async with in_flight:
            created = await service.create_run(
                ids[n % sessions],
                f"run {n}",
                agent="echo",
                input={"text": f"r{n}"},
                if_busy="enqueue",
            )
            last[created.session_id] = created.id

    cpu_before = cpu_seconds([os.getpid()]), cpu_seconds(workers or [])
    started = time.perf_counter()
    await asyncio.gather(*(submit(n) for n in range(runs)))
    done = await asyncio.gather(*(service.wait_run(rid, timeout=600) for rid in last.values()))
    elapsed = time.perf_counter() - started
    here = cpu_seconds([os.getpid()]) - cpu_before[0]
    there = cpu_seconds(workers or []) - cpu_before[1]
    assert all(r.status.value == "completed" for r in done), "a run did not complete"
    return Rate(
        round(runs / elapsed, 1), round(1000 * there / runs, 2), round(1000 * here / runs, 2)
    )


async def sqlite_embedded(runs: int, sessions: int) -> Rate:
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(os.path.join(folder, "bench.db"))
        worker = Worker(store, register(AgentRegistry()))
        worker.start()
        try:
            return await workload(store, runs, sessions)
        finally:
            await worker.stop()
            await store.close()


def start_workers(url: str, count: int) -> list[subprocess.Popen[bytes]]:
    command = [sys.executable, "-m", "tether", "worker", "--db", url, "--concurrency", "8"]
    procs = [subprocess.Popen(command, stderr=subprocess.DEVNULL) for _ in range(count)]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # every worker has its pool and its LISTEN up
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND query = 'LISTEN tether'"
            ).fetchone()
        if row and row[0] >= count:
            return procs
        time.sleep(0.1)
    raise SystemExit("the workers did not start")


async def postgres_workers(url: str, processes: int, runs: int, sessions: int) -> Rate:
    execute(url, f"TRUNCATE {TABLES} RESTART IDENTITY")
    procs = start_workers(url, processes)
    store = open_store(url)
    try:
        return await workload(store, runs, sessions, [p.pid for p in procs])
    finally:
        await store.close()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


# -- append cost ----------------------------------------------------------------------------------


def summary(samples: list[float]) -> tuple[float, float]:
    """(median, p95) in microseconds."""
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e6, ordered[int(len(ordered) * 0.95)] * 1e6


async def append_costs(url: str, h: int, iterations: int) -> dict[str, Any]:
    execute(url, f"TRUNCATE {TABLES} RESTART IDENTITY")
    execute(url, "DROP TABLE IF EXISTS bare")
    execute(url, BARE)
    store = open_store(url)
    service = Service(store, owner="local")
    session = await service.create_session(title=f"history {h}")
    created = await service.create_run(session.id, "held", agent="echo")
    claimed = await store.claim_run(worker_id=WORKER, now=datetime.now(UTC), lease_seconds=3600)
    assert claimed is not None and claimed.id == created.id
    ids = {"sid": session.id, "rid": created.id, "h": h}
    execute(url, FILL, **ids)
    execute(url, "ANALYZE")
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT max(id) FROM events").fetchone()
        mark = int(row[0]) if row and row[0] else 0
    bare = await psycopg.AsyncConnection.connect(url)
    timings: dict[str, list[float]] = {"bare": [], "message": [], "step": []}
    seq = h

    async def bare_insert() -> None:
        await bare.execute(
            "INSERT INTO bare (id, session_id, seq, role, content, created_at)"
            " VALUES (%s, %s, %s, 'user', %s, %s)",
            (f"x-{seq}", session.id, seq, "a new message of a typical length", seq),
        )
        await bare.commit()

    async def message() -> None:
        await service.add_message(session.id, "user", "a new message of a typical length")

    async def step() -> None:
        await store.record_step(
            run_id=created.id,
            worker_id=WORKER,
            position=seq,
            kind=StepKind.NOTE,
            name="note",
            input={"n": seq},
            now=datetime.now(UTC),
        )

    calls: dict[str, Callable[[], Coroutine[Any, Any, None]]] = {
        "bare": bare_insert,
        "message": message,
        "step": step,
    }
    try:
        for n in range(iterations):
            if n % 25 == 0:
                execute(url, TRIM, mark=mark, **ids)
                seq = h
            seq += 1
            for name, call in calls.items():
                started = time.perf_counter()
                await call()
                timings[name].append(time.perf_counter() - started)
    finally:
        await bare.close()
        await store.close()
    base = summary(timings["bare"])[0]
    result: dict[str, Any] = {"h": h}
    for name, samples in timings.items():
        median, p95 = summary(samples)
        result[name] = {
            "median_us": round(median),
            "p95_us": round(p95),
            "ratio": round(median / base, 2),
        }
    return result


# -- main -----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--processes", default="1,2,4")
    parser.add_argument("--sizes", default="100,10000,100000")
    parser.add_argument("--iterations", type=int, default=400)
    parser.add_argument("--synchronous-commit", default="on", choices=["on", "off"])
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    name = f"tether_bench_{os.getpid()}"
    admin(args.admin_url, f"CREATE DATABASE {name}")
    url = database_url(args.admin_url, name, args.synchronous_commit)
    console = Console()
    try:
        open_store(url)  # migrate
        results: dict[str, Any] = {
            "machine": f"{os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}",
            "synchronous_commit": args.synchronous_commit,
            "runs_per_second": {
                "sqlite embedded": asdict(asyncio.run(sqlite_embedded(args.runs, args.sessions)))
            },
            "append": [],
        }
        for count in map(int, args.processes.split(",")):
            rate = asyncio.run(postgres_workers(url, count, args.runs, args.sessions))
            results["runs_per_second"][f"postgres, {count} worker processes"] = asdict(rate)
        for h in map(int, args.sizes.split(",")):
            results["append"].append(asyncio.run(append_costs(url, h, args.iterations)))
    finally:
        admin(args.admin_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    report(console, args, results)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


def report(console: Console, args: argparse.Namespace, results: dict[str, Any]) -> None:
    console.print(f"{results['machine']}; synchronous_commit={results['synchronous_commit']}")
    rates = Table(
        title=f"runs per second, end to end ({args.runs} echo runs, {args.sessions} sessions)"
    )
    for column in ("setup", "runs / s", "worker CPU ms / run", "submitter CPU ms / run"):
        rates.add_column(column, justify="left" if column == "setup" else "right")
    for setup, rate in results["runs_per_second"].items():
        cells = (rate["runs_per_second"], rate["worker_cpu_ms"], rate["submitter_cpu_ms"])
        rates.add_row(setup, *(f"{cell:.1f}" for cell in cells))
    console.print(rates)
    costs = Table(
        title=f"append cost on PostgreSQL (median µs, p95, ratio to bare "
        f"INSERT + COMMIT; {args.iterations} iterations)"
    )
    for column in ("history H", "bare INSERT+COMMIT", "add_message", "record_step"):
        costs.add_column(column, justify="right")
    for row in results["append"]:
        shown = [
            f"{row[k]['median_us']} / {row[k]['p95_us']} ({row[k]['ratio']}x)"
            for k in ("bare", "message", "step")
        ]
        costs.add_row(f"{row['h']:,}", *shown)
    console.print(costs)


if __name__ == "__main__":
    main()
