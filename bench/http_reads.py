"""Reading a conversation over HTTP (``/v1``), beside bare SQL in process and over a minimal app.

    .venv/bin/python bench/http_reads.py
    .venv/bin/python bench/http_reads.py --history 1000 --rounds 50

One SQLite file (durability ``normal``) holds a session of H messages (default 10,000) of about
200 characters, written with ``add_many``. ``tether serve --no-auth --workers 0`` serves it from
its own process; beside it, in another process, a minimal FastAPI app under plain uvicorn serves
the same bare indexed read (the columns tether's own query selects, each row a JSON object keyed
by column, through ``JSONResponse``): the HTTP stack's floor, as goal 1 of issue 13 compares
against a minimal FastAPI app. This process times, call for call in the same rounds, each on one
kept-alive ``httpx.Client``:

* the newest N (default 50): ``GET /v1/sessions/{id}/messages?order=desc&limit=N``;
* the N before a message in the middle: the same with ``&before=SEQ``;
* the whole conversation, paged as a client reads it (``limit=1000``, then each ``next_cursor``);
* the same three through the Python client (``tether.connect(url)``: ``messages.tail(N)``,
  ``tail(N, before=SEQ)``, ``messages.list()``);
* listing 1,000 sessions (``--sessions``, the owner's newest activity first):
  ``GET /v1/sessions?limit=1000`` and ``sessions.list(limit=1000)``, the bare read
  ``SELECT <tether's columns> FROM sessions WHERE owner = ? ORDER BY <tether's order> LIMIT
  1001`` (as tether's own query: its select list, its index);
* ``GET /healthz`` beside the minimal app's ``GET /static`` (an empty request's floor);

and, in this process, the bare ``sqlite3`` read each HTTP read is measured against (the issue's
literal baseline: a tail read within 3x it, the whole conversation within 2x, listing 1,000
sessions within 10x). Each figure is the
median of the rounds; every ratio is of two medians of the same run.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from random import Random
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

import tether
from conversation import Timed, _message, measure, read_columns
from http_load import cpu_seconds, start_minimal, start_server
from tether.store.sql.queries import load_queries

#: The minimal app's routes: the same SQL as the bare read, rows as JSON objects.
MINIMAL_READS = """

import os
import sqlite3

from starlette.responses import JSONResponse

_db = sqlite3.connect(os.environ["BENCH_DB"], check_same_thread=False)
_COLUMNS = os.environ["BENCH_COLUMNS"]
_WHERE = "FROM messages WHERE session_id = ? AND seq"
_TAIL = f"SELECT {_COLUMNS} {_WHERE} < ? ORDER BY seq DESC LIMIT ?"
_FORWARD = f"SELECT {_COLUMNS} {_WHERE} > ? ORDER BY seq LIMIT ?"
_SESSIONS = os.environ["BENCH_SESSIONS_SQL"]


def _page(rows: list[dict[str, object]], limit: int) -> JSONResponse:
    more = len(rows) > limit
    cursor = str(rows[limit - 1]["seq"]) if more else None
    return JSONResponse({"data": rows[:limit], "next_cursor": cursor})


def _rows(sql: str, *args: object) -> list[dict[str, object]]:
    cursor = _db.execute(sql, args)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


@app.get("/tail")
async def tail(session_id: str, limit: int, before: int = 2**62) -> JSONResponse:
    return _page(_rows(_TAIL, session_id, before, limit + 1), limit)


@app.get("/sessions")
async def sessions(owner: str, limit: int) -> JSONResponse:
    return _page(_rows(_SESSIONS, owner, limit + 1), limit)


@app.get("/forward")
async def forward(session_id: str, limit: int, after: int = 0) -> JSONResponse:
    return _page(_rows(_FORWARD, session_id, after, limit + 1), limit)
"""


def sessions_sql() -> str:
    """The bare read of an owner's sessions: tether's own select list and order
    (list_sessions_first), which the bare read selects too."""
    query = " ".join(load_queries("sqlite")["list_sessions_first"].split())
    columns = query.removeprefix("SELECT ").split(" FROM sessions ", 1)[0]
    return (
        f"SELECT {columns} FROM sessions WHERE owner = ?"
        " ORDER BY activity_second DESC, last_activity_at DESC, id DESC LIMIT ?"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=10_000, help="messages in the session")
    parser.add_argument("--tail", type=int, default=50, help="messages a tail read takes")
    parser.add_argument("--rounds", type=int, default=200, help="timed rounds")
    parser.add_argument("--whole-rounds", type=int, default=20, help="rounds reading it whole")
    parser.add_argument("--sessions", type=int, default=1000, help="sessions listed")
    parser.add_argument("--list-rounds", type=int, default=50, help="rounds listing them")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--dir", help="where the database file goes (default: a temp dir)")
    args = parser.parse_args()
    sizes = (args.history, args.tail, args.rounds, args.whole_rounds, args.warmup)
    if min(*sizes, args.sessions, args.list_rounds) < 1:
        parser.error("sizes and rounds must be >= 1")
    if args.tail > 1000 or args.sessions > 1000:
        parser.error("--tail and --sessions are at most 1000")
    console = Console(width=160 if not sys.stdout.isatty() else None)
    folder = Path(tempfile.mkdtemp(prefix="tether-http-reads-", dir=args.dir))
    path = folder / "bench.db"
    servers = []
    try:
        console.print(f"filling a session with {args.history:,} messages in {folder} …")
        with tether.open(path, worker=False) as tt:
            session_id = tt.sessions.create(title="bench").id
            for start in range(0, args.history, 1000):
                size = min(1000, args.history - start)
                tt.sessions.get(session_id).messages.add_many(
                    [_message(Random(start + n)) for n in range(size)]
                )
            for n in range(args.sessions - 1):
                tt.sessions.create(title=f"listed {n}", metadata={"n": n})
        server, url = start_server(folder, workers=0)
        servers.append(server)
        columns = read_columns()
        env = {
            "BENCH_DB": str(path),
            "BENCH_COLUMNS": columns,
            "BENCH_SESSIONS_SQL": sessions_sql(),
        }
        minimal, minimal_url = start_minimal(folder, extra=MINIMAL_READS, env=env)
        servers.append(minimal)
        console.print(f"timing {args.rounds} rounds ({args.whole_rounds} for whole reads) …")
        with (
            httpx.Client(base_url=url) as http,
            httpx.Client(base_url=minimal_url) as plain,
            tether.connect(url) as client,
        ):
            reads = Reads(args, sqlite3.connect(path), session_id, http, plain, client)
            measure(reads.tails, args.rounds, args.warmup)
            measure([reads.whole], args.whole_rounds, 1)
            measure([reads.listed], args.list_rounds, 1)
            cpu = server_cpu(reads, server.pid, minimal.pid, args)
        report(console, args, reads, cpu)
    finally:
        for server in servers:
            server.terminate()
            server.wait(10)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def _count(expected: int) -> Callable[[Any], Any]:
    def check(got: Any) -> Any:
        if len(got) != expected:
            raise AssertionError(f"read {len(got)} messages, expected {expected}")
        return got

    return check


class Reads:
    """Each read five ways: bare SQL in process, the minimal app, tether over HTTP, tether's
    Python client; and an empty request on both servers."""

    def __init__(
        self,
        args: argparse.Namespace,
        bare: sqlite3.Connection,
        sid: str,
        http: httpx.Client,
        plain: httpx.Client,
        client: Any,
    ) -> None:
        n, middle = args.tail, args.history // 2 + 1
        columns = read_columns()
        tail_sql = (
            f"SELECT {columns} FROM messages"
            " WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?"
        )
        whole_sql = f"SELECT {columns} FROM messages WHERE session_id = ? ORDER BY seq"
        newest, before = _count(n), _count(min(n, middle - 1))
        everything = _count(args.history)
        session = client.sessions.get(sid)
        tail, query = session.messages.tail, bare.execute
        path = f"/v1/sessions/{sid}/messages"

        def get(on: httpx.Client, url: str, **params: Any) -> list[Any]:
            answer = on.get(url, params=params)
            answer.raise_for_status()
            return list(answer.json()["data"])

        def paged(on: httpx.Client, url: str, after: str, **params: Any) -> list[Any]:
            data: list[Any] = []
            while True:
                answer = on.get(url, params=params)
                answer.raise_for_status()
                body = answer.json()
                data += body["data"]
                if body["next_cursor"] is None:
                    return data
                params[after] = body["next_cursor"]

        self.empty = [
            Timed("minimal", lambda: plain.get("/static").raise_for_status()),
            Timed("tether", lambda: http.get("/healthz").raise_for_status()),
        ]
        self.tails = [
            self.empty,
            [
                Timed("bare", lambda: newest(query(tail_sql, (sid, 2**62, n)).fetchall())),
                Timed("minimal", lambda: newest(get(plain, "/tail", session_id=sid, limit=n))),
                Timed("tether", lambda: newest(get(http, path, order="desc", limit=n))),
                Timed("client", lambda: newest(tail(n))),
            ],
            [
                Timed("bare", lambda: before(query(tail_sql, (sid, middle, n)).fetchall())),
                Timed(
                    "minimal",
                    lambda: before(get(plain, "/tail", session_id=sid, limit=n, before=middle)),
                ),
                Timed(
                    "tether",
                    lambda: before(get(http, path, order="desc", limit=n, before=middle)),
                ),
                Timed("client", lambda: before(tail(n, before=middle))),
            ],
        ]
        self.whole = [
            Timed("bare", lambda: everything(query(whole_sql, (sid,)).fetchall())),
            Timed(
                "minimal",
                lambda: everything(paged(plain, "/forward", "after", session_id=sid, limit=1000)),
            ),
            Timed("tether", lambda: everything(paged(http, path, "cursor", limit=1000))),
            Timed("client", lambda: everything(session.messages.list())),
        ]
        owner, listed, sessions = "local", _count(args.sessions), sessions_sql()
        self.listed = [
            Timed("bare", lambda: listed(query(sessions, (owner, args.sessions + 1)).fetchall())),
            Timed(
                "minimal",
                lambda: listed(get(plain, "/sessions", owner=owner, limit=args.sessions)),
            ),
            Timed("tether", lambda: listed(get(http, "/v1/sessions", limit=args.sessions))),
            Timed("client", lambda: listed(client.sessions.list(limit=args.sessions))),
        ]


def server_cpu(
    reads: Reads, tether_pid: int, minimal_pid: int, args: argparse.Namespace
) -> list[tuple[float, float]]:
    """The servers' own CPU ms per read (tether's, the minimal app's), from /proc: each read
    on both, call for call, in rounds of their own (a process's CPU time is counted in ticks of
    10 ms: many calls make it exact)."""
    spent = []
    groups = (reads.tails[1], reads.tails[2], reads.whole, reads.listed)
    for index, group in enumerate(groups):
        minimal, tether_op = group[1], group[2]
        calls = (2 * args.rounds, 2 * args.rounds, args.whole_rounds, args.list_rounds)[index]
        cpu = {"tether": 0.0, "minimal": 0.0}
        for _ in range(calls):
            for name, op, pid in (
                ("minimal", minimal, minimal_pid),
                ("tether", tether_op, tether_pid),
            ):
                before = cpu_seconds(pid)
                op.run()
                cpu[name] += cpu_seconds(pid) - before
        spent.append((cpu["tether"] * 1000 / calls, cpu["minimal"] * 1000 / calls))
    return spent


def report(
    console: Console, args: argparse.Namespace, reads: Reads, cpu: list[tuple[float, float]]
) -> None:
    middle = args.history // 2 + 1
    table = Table(
        title=f"a conversation read over HTTP, H = {args.history:,}, medians of the same rounds"
    )
    columns = ("read", "by", "median ms", "/ bare SQL", "goal", "/ minimal app", "server CPU ms")
    for column in columns:
        table.add_column(column, justify="left" if column in ("read", "by") else "right")
    names = (
        f"newest {args.tail}: ?order=desc&limit={args.tail}",
        f"{args.tail} before #{middle}: &before={middle}",
        f"whole ({args.history:,}): pages of 1000",
        f"{args.sessions:,} sessions: ?limit={args.sessions}",
    )
    groups = (reads.tails[1], reads.tails[2], reads.whole, reads.listed)
    labels = {
        "bare": "bare SQL, in process",
        "minimal": "minimal FastAPI app",
        "tether": "tether /v1",
        "client": "tether.connect",
    }
    for index, (name, group) in enumerate(zip(names, groups, strict=True)):
        goal = (3.0, 3.0, 2.0, 10.0)[index]
        bare, minimal = group[0], group[1]
        on_server = {"tether": f"{cpu[index][0]:,.3f}", "minimal": f"{cpu[index][1]:,.3f}"}
        for op in group:
            to_bare = op.median_us / bare.median_us
            met = "" if op is bare else f"<= {goal:g}x {'met' if to_bare <= goal else 'MISSED'}"
            table.add_row(
                name,
                labels[op.name],
                f"{op.median_us / 1000:,.3f}",
                f"{to_bare:.2f}x",
                met,
                "" if op.name == "bare" else f"{op.median_us / minimal.median_us:.2f}x",
                on_server.get(op.name, ""),
            )
    minimal, healthz = reads.empty
    table.add_row(
        "empty request", "GET /static (minimal)", f"{minimal.median_us / 1000:,.3f}", "", "", "", ""
    )
    table.add_row(
        "empty request",
        "GET /healthz (tether)",
        f"{healthz.median_us / 1000:,.3f}",
        "",
        "",
        f"{healthz.median_us / minimal.median_us:.2f}x",
        "",
    )
    console.print(table)
    console.print(
        "/ bare SQL: against the bare indexed read in this process (the issue's baseline; the"
        " whole read is one SELECT there). / minimal app: against the same read served as JSON"
        " rows by a minimal FastAPI app under uvicorn (the HTTP stack's floor). server CPU ms:"
        " the serving process's own CPU per read (tether's, the minimal app's; rounds of their"
        " own). Load: " + Path("/proc/loadavg").read_text().strip()
    )


if __name__ == "__main__":
    sys.exit(main())
