"""The floor under a message append: its SQL alone, without tether's Python (issue: core).

``bench/store_append.py`` compares ``store.add_message`` with a bare sqlite3 INSERT + COMMIT.
This benchmark asks how low that ratio could go at all: it runs, on plain ``sqlite3``
connections and with no tether code on the timed path, the writes one append must make, under
the schema tether ships and under the leanest schema that keeps the same guarantees:

* ``bare``: the baseline of ``store_append.py``: one message row into a table with a text
  primary key and a unique ``(session_id, seq)`` key, then COMMIT;
* ``shipped``: tether's own migrations and its named statements (``touch_active_session``,
  ``insert_message``, ``insert_event``), in one ``BEGIN IMMEDIATE`` … ``COMMIT``;
* ``schema 11``: the same on the schema before migration 0012 (migrations 0001 to 0011, events
  by AUTOINCREMENT), alone and with each schema change applied alone on top of it, to show what
  each one saves: ``+ messages by (session_id, seq)`` (WITHOUT ROWID with a unique ``id``; not
  shipped), ``+ events without AUTOINCREMENT`` (as shipped: a new id follows the highest present
  and the highest ever deleted, which a trigger keeps), ``+ activity by the second`` (as
  shipped: the session's activity and expiry indexes keyed by a column triggers move at most
  once a second);
* ``leanest``: the three changes stacked on a hand-written schema (its events are numbered by
  SQLite alone: a deleted newest id would be reused), with the row keeping the exact time;
* two variants of ``leanest`` that each drop a guarantee the store gives, to show what it costs:
  without the event in the transaction, and without the session row (no guard, no counter:
  ``seq`` read from the index).

Every variant has its own file in the same folder, pre-filled with H messages of one session;
the variants run interleaved, one append each per round, so machine load hits them alike. Ids,
rows and event payloads are made before timing starts: the timed path is the SQL calls.
"frames" is the number of WAL frames (one changed page each) a commit appends, from the WAL's
growth; checkpoints run between rounds of 100, untimed.

    .venv/bin/python bench/append_floor.py
    .venv/bin/python bench/append_floor.py --history 100000 --durability full --iterations 600
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tether.core.ids import new_id
from tether.store.migrate import load_migrations
from tether.store.sql.queries import load_queries
from tether.store.sqlite.database import SqliteDatabase

CONTENT = (
    "Now run the full test suite again and tell me whether anything else broke; keep the "
    "change minimal and explain it in two sentences."
)
OWNER = "local"
TTL_SECONDS = 30 * 24 * 3600
ROUND = 100
#: The schema the per-change variants start from: the last migration before messages were
#: stored in (session_id, seq) order.
BASE_VERSION = 11

#: Each schema change alone, as a script applied on schema BASE_VERSION.
CHANGES = {
    "messages by (session_id, seq)": """
CREATE TABLE messages_by_seq (
    id TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL, seq INTEGER NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content TEXT NOT NULL, run_id TEXT, metadata TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL, item TEXT, removed_at INTEGER,
    PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
INSERT INTO messages_by_seq SELECT * FROM messages;
DROP TABLE messages;
ALTER TABLE messages_by_seq RENAME TO messages;
CREATE INDEX messages_by_run ON messages (run_id) WHERE run_id IS NOT NULL;
""",
    "events without AUTOINCREMENT": """
ALTER TABLE events RENAME TO events_autoincrement;
CREATE TABLE events (
    id INTEGER PRIMARY KEY, type TEXT NOT NULL, owner TEXT NOT NULL, session_id TEXT,
    run_id TEXT, data TEXT NOT NULL, created_at INTEGER NOT NULL);
INSERT INTO events SELECT * FROM events_autoincrement;
INSERT INTO sqlite_sequence (name, seq) VALUES ('events', COALESCE(
    (SELECT seq FROM sqlite_sequence WHERE name = 'events_autoincrement'), 0));
DROP TABLE events_autoincrement;
CREATE INDEX events_by_session ON events (session_id, id) WHERE session_id IS NOT NULL;
CREATE INDEX events_by_run ON events (run_id, id) WHERE run_id IS NOT NULL;
CREATE TRIGGER events_ids_are_never_reused AFTER DELETE ON events
WHEN old.id > (SELECT seq FROM sqlite_sequence WHERE name = 'events')
BEGIN
    UPDATE sqlite_sequence SET seq = old.id WHERE name = 'events';
END;
""",
    "activity by the second": """
ALTER TABLE sessions ADD COLUMN activity_second INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET activity_second = last_activity_at / 1000000;
DROP INDEX sessions_by_activity;
CREATE INDEX sessions_by_activity ON sessions (owner, activity_second DESC, id DESC);
DROP INDEX sessions_by_expiry;
CREATE INDEX sessions_by_expiry ON sessions ((activity_second + ttl_seconds))
    WHERE status = 'active' AND ttl_seconds IS NOT NULL;
CREATE TRIGGER sessions_activity_second AFTER UPDATE OF last_activity_at ON sessions
WHEN new.last_activity_at / 1000000 <> new.activity_second
BEGIN
    UPDATE sessions SET activity_second = new.last_activity_at / 1000000 WHERE id = new.id;
END;
""",
}

_BARE_SCHEMA = """
CREATE TABLE messages (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL,
    content TEXT NOT NULL, run_id TEXT, metadata TEXT NOT NULL, created_at INTEGER NOT NULL,
    UNIQUE (session_id, seq));
"""

_LEANEST_SCHEMA = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, owner TEXT NOT NULL, status TEXT NOT NULL, ttl_seconds INTEGER,
    last_activity_at INTEGER NOT NULL, activity_second INTEGER NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0);
CREATE INDEX sessions_by_activity ON sessions (owner, activity_second DESC, id DESC);
CREATE INDEX sessions_by_expiry ON sessions ((activity_second + ttl_seconds))
    WHERE status = 'active' AND ttl_seconds IS NOT NULL;
CREATE TABLE messages (
    id TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL,
    content TEXT NOT NULL, run_id TEXT, metadata TEXT NOT NULL, created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
CREATE TABLE events (
    id INTEGER PRIMARY KEY, type TEXT NOT NULL, owner TEXT NOT NULL, session_id TEXT,
    run_id TEXT, data TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE INDEX events_by_session ON events (session_id, id) WHERE session_id IS NOT NULL;
"""

#: insert_event as schema 11 wrote it (AUTOINCREMENT chose the id).
_AUTOINCREMENT_EVENT = (
    "INSERT INTO events (type, owner, session_id, run_id, data, created_at)"
    " VALUES (:type, :owner, :session_id, :run_id, :data, :created_at)"
)

_TOUCH = (
    "UPDATE sessions SET last_activity_at = :now, message_count = message_count + 1"
    " WHERE id = :id AND status = 'active'"
    " AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now)"
    " RETURNING owner, message_count"
)
_TOUCH_SECOND = (
    "UPDATE sessions SET activity_second = :second WHERE id = :id AND activity_second < :second"
)
_LEAN_MESSAGE = (
    "INSERT INTO messages VALUES (:id, :session_id, :seq, 'user', :content, NULL, '{}', :now)"
)
_LEAN_EVENT = (
    "INSERT INTO events (type, owner, session_id, run_id, data, created_at)"
    " VALUES ('message.added', :owner, :session_id, NULL, :data, :now)"
)


def _now_us() -> int:
    return time.time_ns() // 1000


class AppendClock:
    """The time each append of a variant writes: the real time, or (with --seconds-apart) a
    time that moves that far per append, as in a conversation whose messages come seconds
    apart (every append then moves the session's activity to a new second)."""

    def __init__(self, seconds_apart: float) -> None:
        self._step = int(seconds_apart * 1_000_000)
        self._next = _now_us()

    def __call__(self) -> int:
        if not self._step:
            return _now_us()
        self._next += self._step
        return self._next


def _event_data(message_id: str, session_id: str, seq: int, now_us: int) -> str:
    """The payload tether writes for message.added (the message, as JSON)."""
    message = {
        "id": message_id,
        "session_id": session_id,
        "seq": seq,
        "role": "user",
        "content": CONTENT,
        "created_at": now_us,
        "run_id": None,
        "metadata": {},
        "item": None,
        "removed_at": None,
    }
    return json.dumps({"message": message}, separators=(",", ":"))


def _prepared(session_id: str, history: int, count: int) -> Iterator[tuple[str, int, str]]:
    """(message id, seq, event payload) of the next count appends, made before timing starts:
    the timed path holds the SQL calls only."""
    now = _now_us()
    items = []
    for seq in range(history + 1, history + count + 1):
        message_id = new_id()
        items.append((message_id, seq, _event_data(message_id, session_id, seq, now)))
    return iter(items)


def _connect(path: Path, durability: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {durability.upper()}")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    return conn


@dataclass
class Variant:
    """One way of writing an append: its connection and the call that appends one message."""

    name: str
    keeps: str
    path: Path
    conn: sqlite3.Connection
    append: Callable[[], None]
    samples: list[int] = field(default_factory=list)
    frames: list[float] = field(default_factory=list)

    def wal_bytes(self) -> int:
        wal = Path(f"{self.path}-wal")
        return wal.stat().st_size if wal.exists() else 0


def _bare(folder: Path, durability: str, history: int, count: int, clock: AppendClock) -> Variant:
    path = folder / "bare.db"
    conn = _connect(path, durability)
    conn.executescript(_BARE_SCHEMA)
    session_id, seq = new_id(), [0]

    def row() -> tuple[object, ...]:
        seq[0] += 1
        return (new_id(), session_id, seq[0], "user", CONTENT, None, "{}", _now_us())

    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [row() for _ in range(history)]
    )
    conn.execute("COMMIT")

    rows = iter([row() for _ in range(count)])

    def append() -> None:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)", next(rows))
        conn.execute("COMMIT")

    return Variant("bare", "the baseline", path, conn, append)


def _fill(conn: sqlite3.Connection, session_id: str, history: int, event_sql: str) -> None:
    now = _now_us()
    ids = [new_id() for _ in range(history)]
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO messages (id, session_id, seq, role, content, run_id, metadata, created_at)"
        " VALUES (?, ?, ?, 'user', ?, NULL, '{}', ?)",
        [(message_id, session_id, seq, CONTENT, now) for seq, message_id in enumerate(ids, 1)],
    )
    conn.executemany(
        event_sql,
        [
            {
                "type": "message.added",
                "owner": OWNER,
                "session_id": session_id,
                "run_id": None,
                "data": _event_data(message_id, session_id, seq, now),
                "created_at": now,
            }
            for seq, message_id in enumerate(ids, 1)
        ],
    )
    conn.execute("UPDATE sessions SET message_count = ? WHERE id = ?", (history, session_id))
    conn.execute("COMMIT")


def _schema_11(path: Path, change: str | None) -> None:
    """Migrations 0001 to BASE_VERSION, then the one change named (if any)."""
    conn = sqlite3.connect(path, isolation_level=None)
    for migration in load_migrations("tether.store.sqlite")[:BASE_VERSION]:
        conn.executescript(migration.sql)
    if change is not None:
        conn.executescript(CHANGES[change])
    conn.close()


def _shipped(
    folder: Path,
    durability: str,
    history: int,
    count: int,
    clock: AppendClock,
    *,
    base: bool = False,
    change: str | None = None,
) -> Variant:
    if base:
        name = f"schema {BASE_VERSION}" + (f" + {change}" if change else "")
        path = folder / (
            name.replace(" ", "_").replace(",", "").replace("(", "").replace(")", "") + ".db"
        )
        _schema_11(path, change)
    else:
        name, path = "shipped", folder / "shipped.db"
        SqliteDatabase(path).close_now()  # tether's migrations, as shipped
    queries = load_queries("sqlite")
    # The shipped insert_event needs the shipped events table (its id after the highest deleted).
    insert_event = (
        _AUTOINCREMENT_EVENT
        if base and change != "events without AUTOINCREMENT"
        else queries["insert_event"]
    )
    conn = _connect(path, durability)
    session_id, now = new_id(), _now_us()
    conn.execute(
        "INSERT INTO sessions (id, owner, status, ttl_seconds, created_at, updated_at,"
        " last_activity_at) VALUES (?, ?, 'active', ?, ?, ?, ?)",
        (session_id, OWNER, TTL_SECONDS, now, now, now),
    )
    _fill(conn, session_id, history, insert_event)
    items = _prepared(session_id, history, count)

    def append() -> None:
        now = clock()
        message_id, expected, data = next(items)
        conn.execute("BEGIN IMMEDIATE")
        touched = conn.execute(
            queries["touch_active_session"],
            {"id": session_id, "owner": None, "now": now, "add_messages": 1, "add_runs": 0},
        ).fetchone()
        seq = touched[1]
        assert seq == expected
        conn.execute(
            queries["insert_message"],
            {
                "id": message_id,
                "session_id": session_id,
                "seq": seq,
                "role": "user",
                "content": CONTENT,
                "run_id": None,
                "metadata": "{}",
                "created_at": now,
                "item": None,
            },
        )
        conn.execute(
            insert_event,
            {
                "type": "message.added",
                "owner": touched[0],
                "session_id": session_id,
                "run_id": None,
                "data": data,
                "created_at": now,
            },
        )
        conn.execute("COMMIT")

    if not base:
        keeps = "all (tether's schema and statements)"
    elif change == "events without AUTOINCREMENT":
        keeps = "all (ids after the highest deleted)"
    elif change == "activity by the second":
        keeps = "all; listing reads by the second, then sorts"
    else:
        keeps = "all"
    return Variant(name, keeps, path, conn, append)


def _leanest(
    folder: Path,
    durability: str,
    history: int,
    count: int,
    clock: AppendClock,
    *,
    event: bool = True,
    guard: bool = True,
) -> Variant:
    name = "leanest" + ("" if event else ", no event") + ("" if guard else ", no session row")
    path = folder / (name.replace(", ", "-").replace(" ", "_") + ".db")
    conn = _connect(path, durability)
    conn.executescript(_LEANEST_SCHEMA)
    session_id, now = new_id(), _now_us()
    conn.execute(
        "INSERT INTO sessions VALUES (?, ?, 'active', ?, ?, ?, 0)",
        (session_id, OWNER, TTL_SECONDS, now, now // 1_000_000),
    )
    _fill(
        conn,
        session_id,
        history,
        "INSERT INTO events (type, owner, session_id, run_id, data, created_at)"
        " VALUES (:type, :owner, :session_id, :run_id, :data, :created_at)",
    )
    items = _prepared(session_id, history, count)

    def append() -> None:
        now = clock()
        message_id, expected, data = next(items)
        conn.execute("BEGIN IMMEDIATE")
        if guard:
            owner, seq = conn.execute(_TOUCH, {"id": session_id, "now": now}).fetchone()
            conn.execute(_TOUCH_SECOND, {"id": session_id, "second": now // 1_000_000})
        else:
            owner = OWNER
            seq = conn.execute(
                "SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = ?",
                (session_id,),
            ).fetchone()[0]
        assert seq == expected
        conn.execute(
            _LEAN_MESSAGE,
            {
                "id": message_id,
                "session_id": session_id,
                "seq": seq,
                "content": CONTENT,
                "now": now,
            },
        )
        if event:
            conn.execute(
                _LEAN_EVENT,
                {
                    "owner": owner,
                    "session_id": session_id,
                    "data": data,
                    "now": now,
                },
            )
        conn.execute("COMMIT")

    if event and guard:
        keeps = "all but event ids never reused"
    elif event:
        keeps = "no guard, no counter, no activity"
    else:
        keeps = "no event in the transaction"
    return Variant(name, keeps, path, conn, append)


def measure(variants: list[Variant], iterations: int, warmup: int) -> None:
    """Interleave the variants, one append each per step, in rounds of ROUND appends (the
    warm-up is its own round, not kept); checkpoint between rounds."""
    rounds = [(warmup, False)] if warmup else []
    rounds += [(min(ROUND, iterations - at), True) for at in range(0, iterations, ROUND)]
    for size, kept in rounds:
        before = [v.wal_bytes() for v in variants]
        for _ in range(size):
            for variant in variants:
                started = time.perf_counter_ns()
                variant.append()
                if kept:
                    variant.samples.append(time.perf_counter_ns() - started)
        for variant, start in zip(variants, before, strict=True):
            if kept:
                grown = variant.wal_bytes() - start
                variant.frames.append(grown / _frame_size(variant.conn) / size)
            variant.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _frame_size(conn: sqlite3.Connection) -> int:
    page_size: int = conn.execute("PRAGMA page_size").fetchone()[0]
    return page_size + 24


def report(variants: list[Variant], durability: str, history: int, console: Console) -> None:
    bare = statistics.median(variants[0].samples)
    table = Table(title=f"one message append, H = {history:,}, durability={durability}")
    for column in ("writes", "guarantees kept", "median µs", "p95 µs", "x bare", "frames / commit"):
        table.add_column(
            column, justify="left" if column in ("writes", "guarantees kept") else "right"
        )
    for variant in variants:
        ordered = sorted(variant.samples)
        median = statistics.median(ordered)
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
        table.add_row(
            variant.name,
            variant.keeps,
            f"{median / 1000:.1f}",
            f"{p95 / 1000:.1f}",
            f"{median / bare:.2f}",
            f"{statistics.fmean(variant.frames):.2f}",
        )
    console.print(table)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--history", type=int, default=10_000, help="messages already in the session"
    )
    parser.add_argument("--durability", choices=("normal", "full"), default="normal")
    parser.add_argument("--iterations", type=int, default=3000, help="timed appends per variant")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--dir", help="where the database files go (default: a temp dir)")
    parser.add_argument(
        "--seconds-apart",
        type=float,
        default=0.0,
        help="the time appends write moves this far per append (default: the real time)",
    )
    args = parser.parse_args()
    if args.history < 0 or args.iterations < 1 or args.warmup < 0:
        parser.error("--history and --warmup must be >= 0 and --iterations >= 1")
    console = Console(width=160 if not sys.stdout.isatty() else None)
    folder = Path(tempfile.mkdtemp(prefix="tether-floor-", dir=args.dir))
    variants: list[Variant] = []
    try:
        console.print(f"filling 9 files with {args.history:,} messages each in {folder} …")
        count = args.warmup + args.iterations
        where = (folder, args.durability, args.history, count, AppendClock(args.seconds_apart))
        variants.append(_bare(*where))
        variants.append(_shipped(*where, base=True))
        for change in CHANGES:
            variants.append(_shipped(*where, base=True, change=change))
        variants.append(_shipped(*where))
        variants.append(_leanest(*where))
        variants.append(_leanest(*where, event=False))
        variants.append(_leanest(*where, guard=False))
        console.print(
            f"timing {args.iterations:,} appends per variant (after {args.warmup} warm-up) …"
        )
        measure(variants, args.iterations, args.warmup)
        report(variants, args.durability, args.history, console)
        console.print(
            "The store's own add_message adds its Python (record, event payload, change feed) on "
            "top of 'shipped': see bench/store_append.py."
        )
    finally:
        for variant in variants:
            variant.conn.close()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
