"""tether beside the session stores agent developers use today (issue: performance).

    make bench-peers                        # installs the peers (.[bench]), then runs this
    .venv/bin/python bench/peers.py --quick   # a smoke test: tiny sizes, seconds

Every system runs the same workload in the same run, on its own SQLite file in one temporary
folder, at its own default durability (shown) — plus tether at ``full``, the peers' default:

* **append** one ~200-byte user message (committed) to a conversation of H = 100 / 1,000 /
  10,000 items;
* **newest 50** messages of that conversation, and the **whole conversation**;
* **1,000 sessions**: list them (one call, or the pages it takes), and fetch one by id.

Each figure is a median, and each is also given as a ratio to the matching bare ``sqlite3``
operation on plain tables: messages with the keys tether's have (text id, unique
``(session_id, seq)``), sessions with the columns tether's have and an index by owner and
activity. The bare append is an ``INSERT`` + ``COMMIT`` at the same ``synchronous`` level as the
system; the bare reads are indexed ``SELECT`` statements of the same rows, returned as tuples.
Systems take turns of ``--block`` (20) consecutive calls, the order rotating: a busy machine
slows every row alike, and each system's calls follow its own, as in a program that uses one
store. (Call by call, ``--block 1``, every commit at ``normal`` also paid for the neighbour's
fsync just before it: an ext4 commit right after another file's fsync waits ~40 µs longer.)

Rows: the bare baselines; tether's store (``SqliteStore``, awaited on its loop), tether's
library (``tether.open``: ``session.messages.add`` …) at ``normal`` and ``full``; the OpenAI
Agents SDK ``SQLiteSession``; Google ADK ``DatabaseSessionService`` (SQLAlchemy on aiosqlite)
and ``SqliteSessionService``; LangGraph (a one-node ``MessagesState`` graph) with a
``SqliteSaver``; and tether's own adapters for those frameworks once they exist — a row
appears when its import succeeds (see ``ADAPTERS``). Peers install with ``pip install -e
'.[bench]'``; a peer that is not installed is listed as skipped.

Histories are filled before timing (not timed): through each system's own API where it has a
bulk path (the Agents SDK takes a list, LangGraph one input of H messages, tether's store one
call per message), and for ADK, whose only write is one event per call (~10-20 ms), by
inserting the rows its ``append_event`` would write. A conversation takes at most H/5 timed
appends (more sessions are filled when more appends are asked for), so H stays within 20 %.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import inspect
import itertools
import json
import math
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import tether

# bench/ is on sys.path when this file runs as a script.
from store_append import machine
from tether.core.clock import SystemClock
from tether.core.ids import new_id
from tether.core.message import Role
from tether.core.session import Session
from tether.core.status import SessionStatus
from tether.runtime.facade import Tether
from tether.runtime.handles import SessionHandle
from tether.store.sqlite.store import SqliteStore

OPS = ("append", "newest 50", "whole conversation", "list 1,000 sessions", "fetch a session")
NEWEST = 50
OWNER = "bench"

Op = Callable[[], Any]  # a float, or an awaitable of one


def settle(loop: asyncio.AbstractEventLoop, value: Any) -> Any:
    """value, or what it resolves to when it is awaitable (run on loop, outside any op)."""
    return loop.run_until_complete(value) if inspect.isawaitable(value) else value


def text(i: int) -> str:
    """A ~200-byte user message."""
    return (
        f"message {i}: " + ("the quick brown fox jumps over the lazy dog " * 5)[: 185 - len(str(i))]
    )


async def timed(call: Awaitable[Any]) -> float:
    started = time.perf_counter()
    await call
    return time.perf_counter() - started


def timed_sync(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


# -- the systems -------------------------------------------------------------------------------


class System:
    """One row of the tables: a session store on its own file in `folder`.

    A conversation is whatever the system hands back from `conversation()`; the bench fills it,
    appends to it and reads it. Operations return their own elapsed time. A system's methods are
    async when its API is (they time the await inside the loop) and plain functions when it is
    synchronous (they run with no event loop running, as a synchronous program calls them).
    """

    name = ""
    durability = ""
    synchronous = "FULL"  # which bare insert its append is compared with
    lists_sessions = True
    #: The SQLite file whose growth per append is measured (rows that set it).
    path: Path | None = None

    def open(self, folder: Path) -> Any:
        raise NotImplementedError

    def conversation(self, key: str) -> Any:
        raise NotImplementedError

    def fill(self, conv: Any, start: int, count: int) -> Any:
        """Add count messages (not timed); the conversation, refreshed if the system needs."""
        raise NotImplementedError

    def append(self, conv: Any, i: int) -> Any:
        raise NotImplementedError

    def newest(self, conv: Any) -> Any:
        raise NotImplementedError

    def whole(self, conv: Any) -> Any:
        raise NotImplementedError

    def new_session(self, key: str) -> Any:
        return self.conversation(key)

    def list_sessions(self, expected: int) -> Any:
        raise NotImplementedError

    def fetch(self, session: Any) -> Any:
        raise NotImplementedError

    def close(self) -> Any:
        return None


def _sqlite(path: Path, synchronous: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    return conn


class Bare(System):
    """Plain sqlite3 on a plain table with the keys tether's tables have: the baseline."""

    def __init__(self, synchronous: str) -> None:
        self.synchronous = synchronous
        self.name = f"bare sqlite3 ({synchronous.lower()})"
        self.durability = f"WAL, synchronous={synchronous}"

    def open(self, folder: Path) -> None:
        self.conn = _sqlite(folder / f"bare-{self.synchronous.lower()}.db", self.synchronous)
        self.conn.executescript(
            "CREATE TABLE messages (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,"
            " seq INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL,"
            " metadata TEXT NOT NULL, created_at INTEGER NOT NULL, UNIQUE (session_id, seq));"
            # The columns a session row of tether has, so a listing reads as much.
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, owner TEXT NOT NULL, title TEXT,"
            " status TEXT NOT NULL, metadata TEXT NOT NULL, context TEXT NOT NULL,"
            " ttl_seconds INTEGER, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
            " last_activity_at INTEGER NOT NULL, closed_at INTEGER,"
            " run_count INTEGER NOT NULL DEFAULT 0, message_count INTEGER NOT NULL DEFAULT 0,"
            " input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,"
            " model_requests INTEGER NOT NULL DEFAULT 0, deleted_runs INTEGER NOT NULL DEFAULT 0);"
            "CREATE INDEX sessions_by_activity ON sessions (owner, last_activity_at DESC, id DESC);"
        )
        self.seq: dict[str, int] = {}

    def conversation(self, key: str) -> str:
        self.seq[key] = 0
        return key

    def _insert(self, conv: str, i: int) -> None:
        self.seq[conv] += 1
        self.conn.execute(
            "INSERT INTO messages VALUES (?, ?, ?, 'user', ?, '{}', ?)",
            (new_id(), conv, self.seq[conv], text(i), time.time_ns() // 1000),
        )

    def fill(self, conv: str, start: int, count: int) -> str:
        self.conn.execute("BEGIN")
        for i in range(start, start + count):
            self._insert(conv, i)
        self.conn.execute("COMMIT")
        return conv

    def append(self, conv: str, i: int) -> float:
        started = time.perf_counter()
        self.conn.execute("BEGIN")
        self._insert(conv, i)
        self.conn.execute("COMMIT")
        return time.perf_counter() - started

    def newest(self, conv: str) -> float:
        return timed_sync(
            lambda: self.conn.execute(
                "SELECT * FROM messages WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
                (conv, NEWEST),
            ).fetchall()
        )

    def whole(self, conv: str) -> float:
        return timed_sync(
            lambda: self.conn.execute(
                "SELECT * FROM messages WHERE session_id = ? ORDER BY seq", (conv,)
            ).fetchall()
        )

    def new_session(self, key: str) -> str:
        now = time.time_ns() // 1000
        self.conn.execute(
            "INSERT INTO sessions (id, owner, title, status, metadata, context, ttl_seconds,"
            " created_at, updated_at, last_activity_at)"
            " VALUES (?, ?, 'a session', 'active', '{}', '{}', 2592000, ?, ?, ?)",
            (key, OWNER, now, now, now),
        )
        return key

    def list_sessions(self, expected: int) -> float:
        return timed_sync(
            lambda: self.conn.execute(
                "SELECT * FROM sessions WHERE owner = ?"
                " ORDER BY last_activity_at DESC, id DESC LIMIT ?",
                (OWNER, expected),
            ).fetchall()
        )

    def fetch(self, session: str) -> float:
        return timed_sync(
            lambda: self.conn.execute("SELECT * FROM sessions WHERE id = ?", (session,)).fetchone()
        )

    def close(self) -> None:
        self.conn.close()


class TetherStore(System):
    """tether's SqliteStore, awaited directly: what the library is built on."""

    name = "tether store (SqliteStore)"
    durability = "WAL, synchronous=NORMAL (default)"
    synchronous = "NORMAL"

    async def open(self, folder: Path) -> None:
        self.store = SqliteStore(folder / "tether-store.db")
        self.clock = SystemClock()

    async def conversation(self, key: str) -> str:
        now = self.clock.now()
        session = Session(
            id=new_id(),
            owner=OWNER,
            title=key,
            status=SessionStatus.ACTIVE,
            created_at=now,
            updated_at=now,
            last_activity_at=now,
        )
        await self.store.create_session(session)
        return session.id

    def _add(self, conv: str, i: int) -> Awaitable[Any]:
        return self.store.add_message(
            session_id=conv, owner=OWNER, role=Role.USER, content=text(i), now=self.clock.now()
        )

    async def fill(self, conv: str, start: int, count: int) -> str:
        for i in range(start, start + count):
            await self._add(conv, i)
        return conv

    async def append(self, conv: str, i: int) -> float:
        return await timed(self._add(conv, i))

    async def newest(self, conv: str) -> float:
        return await timed(self.store.list_messages(conv, limit=NEWEST, newest_first=True))

    async def whole(self, conv: str) -> float:
        return await timed(self.store.list_messages(conv, limit=1_000_000))

    async def list_sessions(self, expected: int) -> float:
        return await timed(
            self.store.list_sessions(owner=OWNER, now=self.clock.now(), limit=expected)
        )

    async def fetch(self, session: str) -> float:
        return await timed(self.store.get_session(session, owner=OWNER))

    async def close(self) -> None:
        await self.store.close()


class TetherLibrary(System):
    """tether as a program uses it: ``tether.open(path)``, sessions and messages as objects."""

    synchronous = "NORMAL"

    def __init__(self, durability: str = "normal") -> None:
        self.level = durability
        self.synchronous = durability.upper()
        default = " (default)" if durability == "normal" else ""
        self.name = f"tether library (tether.open{'' if default else ', durability=full'})"
        self.durability = f"WAL, synchronous={durability.upper()}{default}"

    def open(self, folder: Path) -> None:
        self.tt: Tether = tether.open(
            folder / f"tether-{self.level}.db", owner=OWNER, worker=False, durability=self.level
        )

    def conversation(self, key: str) -> SessionHandle:
        return self.tt.sessions.create(title=key)

    def fill(self, conv: SessionHandle, start: int, count: int) -> SessionHandle:
        messages = conv.messages
        for i in range(start, start + count):
            messages.add("user", text(i))
        return conv

    def append(self, conv: SessionHandle, i: int) -> float:
        return timed_sync(lambda: conv.messages.add("user", text(i)))

    def newest(self, conv: SessionHandle) -> float:
        return timed_sync(lambda: conv.messages.tail(NEWEST))

    def whole(self, conv: SessionHandle) -> float:
        return timed_sync(conv.messages.list)

    def list_sessions(self, expected: int) -> float:
        return timed_sync(lambda: self.tt.sessions.list(limit=expected))

    def fetch(self, session: SessionHandle) -> float:
        return timed_sync(lambda: self.tt.sessions.get(session.id))

    def close(self) -> None:
        self.tt.close()


class AgentsSqlite(System):
    """The OpenAI Agents SDK's ``SQLiteSession``: a conversation is a session id over items."""

    name = "OpenAI Agents SDK SQLiteSession"
    durability = "WAL, synchronous=FULL (SQLite's default)"
    lists_sessions = False  # a session is only a key over its items: nothing to list

    async def open(self, folder: Path) -> None:
        from agents.memory import SQLiteSession

        self.cls: Any = SQLiteSession
        self.path = folder / "agents.db"
        self.sessions: list[Any] = []

    async def conversation(self, key: str) -> Any:
        session = self.cls(key, self.path)
        self.sessions.append(session)
        return session

    async def fill(self, conv: Any, start: int, count: int) -> Any:
        await conv.add_items([_item(i) for i in range(start, start + count)])
        return conv

    async def append(self, conv: Any, i: int) -> float:
        return await timed(conv.add_items([_item(i)]))

    async def newest(self, conv: Any) -> float:
        return await timed(conv.get_items(limit=NEWEST))

    async def whole(self, conv: Any) -> float:
        return await timed(conv.get_items())

    async def close(self) -> None:
        for session in self.sessions:
            session.close()


def _item(i: int) -> dict[str, str]:
    return {"role": "user", "content": text(i)}


class AdkBase(System):
    """Google ADK session services: a conversation is a Session of Events."""

    service: Any

    durability = "rollback journal, synchronous=FULL (SQLite's default)"
    app = "bench"
    user = OWNER

    def _event(self, i: int) -> Any:
        from google.adk.events import Event
        from google.genai import types

        return Event(
            author="user",
            invocation_id=f"inv-{i}",
            content=types.Content(role="user", parts=[types.Part(text=text(i))]),
        )

    async def conversation(self, key: str) -> Any:
        return await self.service.create_session(app_name=self.app, user_id=self.user)

    async def _refresh(self, conv: Any) -> Any:
        return await self.service.get_session(
            app_name=self.app, user_id=self.user, session_id=conv.id
        )

    async def append(self, conv: Any, i: int) -> float:
        return await timed(self.service.append_event(conv, self._event(i)))

    async def newest(self, conv: Any) -> float:
        from google.adk.sessions.base_session_service import GetSessionConfig

        return await timed(
            self.service.get_session(
                app_name=self.app,
                user_id=self.user,
                session_id=conv.id,
                config=GetSessionConfig(num_recent_events=NEWEST),
            )
        )

    async def whole(self, conv: Any) -> float:
        return await timed(self._refresh(conv))

    async def list_sessions(self, expected: int) -> float:
        return await timed(self.service.list_sessions(app_name=self.app, user_id=self.user))

    async def fetch(self, session: Any) -> float:
        return await timed(self._refresh(session))

    async def close(self) -> None:
        await self.service.close()


class AdkDatabase(AdkBase):
    name = "Google ADK DatabaseSessionService"

    async def open(self, folder: Path) -> None:
        from google.adk.sessions import DatabaseSessionService

        self.service = DatabaseSessionService(f"sqlite+aiosqlite:///{folder / 'adk-db.db'}")

    async def fill(self, conv: Any, start: int, count: int) -> Any:
        # The rows append_event would add, in one transaction (its only write path takes
        # 10-20 ms per event); then the session as storage now has it.
        schema = self.service._get_schema_classes()
        async with self.service.database_session_factory() as sql:
            sql.add_all(
                schema.StorageEvent.from_event(conv, self._event(i))
                for i in range(start, start + count)
            )
            await sql.commit()
        return await self._refresh(conv)


class AdkSqlite(AdkBase):
    name = "Google ADK SqliteSessionService"

    async def open(self, folder: Path) -> None:
        from google.adk.sessions.sqlite_session_service import SqliteSessionService

        self.path = folder / "adk-sqlite.db"
        self.service = SqliteSessionService(str(self.path))

    async def fill(self, conv: Any, start: int, count: int) -> Any:
        # The rows append_event would add (its own INSERT), in one transaction.
        events = [self._event(i) for i in range(start, start + count)]
        assert self.path is not None
        with contextlib.closing(sqlite3.connect(self.path)) as conn, conn:
            conn.executemany(
                "INSERT INTO events (id, app_name, user_id, session_id, invocation_id,"
                " timestamp, event_data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        e.id,
                        self.app,
                        self.user,
                        conv.id,
                        e.invocation_id,
                        e.timestamp,
                        e.model_dump_json(exclude_none=True),
                    )
                    for e in events
                ],
            )
        return await self._refresh(conv)


class LangGraphSqlite(System):
    """LangGraph: a one-node graph over ``MessagesState``, checkpointed by a ``SqliteSaver``;
    a conversation is a thread, appending is invoking the graph with one message."""

    name = "LangGraph + SqliteSaver"
    durability = "WAL, synchronous=FULL (SQLite's default)"
    lists_sessions = False  # the checkpointer lists checkpoints, not threads
    graph: Any  # a compiled graph; its messages and configs are plain dicts here

    def open(self, folder: Path) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, MessagesState, StateGraph

        self.path = folder / "langgraph.db"
        self.conn = sqlite3.connect(self.path, check_same_thread=False)
        saver = SqliteSaver(self.conn)
        saver.setup()
        graph = StateGraph(MessagesState)
        graph.add_node("remember", lambda state: {})
        graph.add_edge(START, "remember")
        graph.add_edge("remember", END)
        self.graph = graph.compile(checkpointer=saver)

    def conversation(self, key: str) -> dict[str, Any]:
        config = {"configurable": {"thread_id": key}}
        self.graph.invoke({"messages": []}, config)
        return config

    def fill(self, conv: dict[str, Any], start: int, count: int) -> dict[str, Any]:
        self.graph.invoke({"messages": [_item(i) for i in range(start, start + count)]}, conv)
        return conv

    def append(self, conv: dict[str, Any], i: int) -> float:
        return timed_sync(lambda: self.graph.invoke({"messages": [_item(i)]}, conv))

    def newest(self, conv: dict[str, Any]) -> float:
        return timed_sync(lambda: self.graph.get_state(conv).values["messages"][-NEWEST:])

    def whole(self, conv: dict[str, Any]) -> float:
        return timed_sync(lambda: self.graph.get_state(conv).values["messages"])

    def fetch(self, session: dict[str, Any]) -> float:
        return timed_sync(lambda: self.graph.get_state(session))

    def close(self) -> None:
        self.conn.close()


# tether's own adapters for these frameworks. Each row reuses its framework's driver with
# tether underneath; it appears as soon as its import succeeds. Adjust `make` to the adapter's
# constructor if it differs.


class TetherAgentsSession(AgentsSqlite):
    """The Agents SDK adapter, at tether's default durability or (``"full"``) at the SDK's."""

    def __init__(self, durability: str = "normal") -> None:
        self.level = durability
        self.synchronous = durability.upper()
        default = " (tether's default)" if durability == "normal" else ""
        full = "" if default else ", durability=full"
        self.name = f"tether TetherSession (Agents SDK adapter{full})"
        self.durability = f"WAL, synchronous={durability.upper()}{default}"

    async def open(self, folder: Path) -> None:
        from tether.integrations.openai_agents import TetherSession

        self.path = folder / f"tether-agents-{self.level}.db"
        self.tt = tether.open(
            self.path,
            owner=OWNER,
            worker=False,
            durability=self.level,
        )
        self.cls = lambda key, _path: TetherSession(key, self.tt)
        self.sessions = []

    async def close(self) -> None:
        await super().close()
        self.tt.close()


class TetherAdkService(AdkBase):
    name = "tether TetherSessionService (ADK adapter)"
    durability = "WAL, synchronous=NORMAL (tether's default)"
    synchronous = "NORMAL"

    async def open(self, folder: Path) -> None:
        from tether.integrations.adk import TetherSessionService

        self.tt = tether.open(folder / "tether-adk.db", owner=OWNER, worker=False)
        self.service = TetherSessionService(self.tt)

    async def fill(self, conv: Any, start: int, count: int) -> Any:
        for i in range(start, start + count):
            await self.service.append_event(conv, self._event(i))
        return await self._refresh(conv)

    async def close(self) -> None:
        await super().close()
        self.tt.close()


class TetherLangGraphSaver(LangGraphSqlite):
    name = "tether TetherCheckpointSaver (LangGraph adapter)"
    durability = "WAL, synchronous=NORMAL (tether's default)"
    synchronous = "NORMAL"

    def open(self, folder: Path) -> None:
        from langgraph.graph import END, START, MessagesState, StateGraph

        from tether.integrations.langgraph import TetherCheckpointSaver

        self.path = folder / "tether-langgraph.db"
        self.tt = tether.open(self.path, owner=OWNER, worker=False)
        graph = StateGraph(MessagesState)
        graph.add_node("remember", lambda state: {})
        graph.add_edge(START, "remember")
        graph.add_edge("remember", END)
        self.graph = graph.compile(checkpointer=TetherCheckpointSaver(self.tt))

    def close(self) -> None:
        self.tt.close()


PEERS: list[Callable[[], System]] = [AgentsSqlite, AdkDatabase, AdkSqlite, LangGraphSqlite]
ADAPTERS: list[Callable[[], System]] = [
    TetherAgentsSession,
    lambda: TetherAgentsSession("full"),
    TetherAdkService,
    TetherLangGraphSaver,
]


# -- the harness -------------------------------------------------------------------------------


@dataclass
class Row:
    system: System
    samples: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    #: Bytes the database grew by per timed append, by H (rows whose system has a path).
    growth: dict[int, float] = field(default_factory=dict)

    def add(self, op: str, size: int, seconds: float) -> None:
        self.samples.setdefault((op, size), []).append(seconds)

    def median(self, op: str, size: int) -> float | None:
        values = self.samples.get((op, size))
        return statistics.median(values) if values else None


def interleave(
    loop: asyncio.AbstractEventLoop,
    jobs: list[tuple[Row, str, int, Callable[[int], Op]]],
    count: int,
    budget: float,
    block: int,
) -> None:
    """Run each job `count` times, in turns of `block` consecutive calls of one job (the order
    rotating), giving up on a job once it has spent `budget` seconds (slow systems get fewer
    samples, never none)."""
    spent = [0.0] * len(jobs)
    done = [0] * len(jobs)
    order = list(range(len(jobs)))

    def wanted(j: int) -> bool:
        return done[j] < count and (done[j] < 3 or spent[j] < budget)

    while any(wanted(j) for j in order):
        for j in order:
            row, op, size, make = jobs[j]
            for _ in range(block):
                if not wanted(j):
                    break
                try:
                    seconds = settle(loop, make(done[j])())
                except NotImplementedError as exc:
                    row.notes[op] = str(exc)
                    done[j] = count
                    break
                except Exception as exc:  # a peer failing is shown, it does not end the run
                    row.notes[op] = f"{type(exc).__name__}: {exc}"[:120]
                    done[j] = count
                    break
                row.add(op, size, seconds)
                spent[j] += seconds
                done[j] += 1
        order = order[1:] + order[:1]


def conversations_needed(size: int, appends: int) -> int:
    """Conversations to fill so that none takes more than size/5 timed appends."""
    return max(1, math.ceil(appends / max(1, size // 5)))


def measure(
    loop: asyncio.AbstractEventLoop, rows: list[Row], args: argparse.Namespace, log: Console
) -> None:
    counter = itertools.count(10_000_000)
    for size in args.sizes:
        per = conversations_needed(size, args.appends)
        log.print(f"H = {size:,}: filling {per} conversation(s) per system …")
        convs: dict[int, list[Any]] = {}
        for index, row in enumerate(rows):
            items = []
            for c in range(per):
                conv = settle(loop, row.system.conversation(f"h{size}-{c}"))
                conv = settle(loop, row.system.fill(conv, 0, size))
                items.append(conv)
            convs[index] = items
        _settle_heap()

        log.print(f"H = {size:,}: append, newest {NEWEST}, whole conversation …")
        before = {i: used_bytes(r.system.path) for i, r in enumerate(rows) if r.system.path}
        interleave(
            loop,
            [
                (r, "append", size, _appender(r, convs[i], max(1, size // 5), counter))
                for i, r in enumerate(rows)
            ],
            args.appends,
            args.budget,
            args.block,
        )
        for i, start in before.items():
            row, done = rows[i], len(rows[i].samples.get(("append", size), []))
            if done:
                row.growth[size] = (used_bytes(row.system.path) - start) / done
        interleave(
            loop,
            [
                (r, "newest 50", size, _reader(r.system.newest, convs[i][0]))
                for i, r in enumerate(rows)
            ],
            args.reads,
            args.budget,
            args.block,
        )
        interleave(
            loop,
            [
                (r, "whole conversation", size, _reader(r.system.whole, convs[i][0]))
                for i, r in enumerate(rows)
            ],
            max(5, args.reads * 100 // size),
            args.budget,
            args.block,
        )

    log.print(f"{args.sessions:,} sessions: creating them in every system …")
    sessions: dict[int, list[Any]] = {}
    for index, row in enumerate(rows):
        sessions[index] = [
            settle(loop, row.system.new_session(f"s-{n}-{uuid.uuid4()}"))
            for n in range(args.sessions)
        ]
    _settle_heap()
    listing = [(r, "list 1,000 sessions", args.sessions, _lister(r, args.sessions)) for r in rows]
    interleave(
        loop,
        [j for j in listing if j[0].system.lists_sessions],
        args.lists,
        args.budget,
        args.block,
    )
    interleave(
        loop,
        [
            (r, "fetch a session", args.sessions, _fetcher(r, sessions[i]))
            for i, r in enumerate(rows)
            if not isinstance(r.system, AgentsSqlite)  # no session record to fetch
        ],
        args.sessions,
        args.budget,
        args.block,
    )


def used_bytes(path: Path | None) -> int:
    """The bytes of a SQLite database's pages in use (its free pages left out), as committed
    (the write-ahead log included)."""
    assert path is not None
    with contextlib.closing(sqlite3.connect(path)) as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    return int((pages - free) * size)


def _settle_heap() -> None:
    """Collect, then keep what is filled out of later collections: otherwise every system's
    allocations pay for scanning every other system's data (a garbage collection walks the
    whole heap), and the systems that allocate most pay most."""
    gc.collect()
    gc.freeze()


def _appender(
    row: Row, convs: list[Any], share: int, counter: Iterator[int]
) -> Callable[[int], Op]:
    """Appends spread over convs, share appends each."""
    return lambda i: lambda: row.system.append(convs[i // share], next(counter))


def _reader(read: Callable[[Any], Any], conv: Any) -> Callable[[int], Op]:
    """Reads of one conversation."""
    return lambda _i: lambda: read(conv)


def _lister(row: Row, expected: int) -> Callable[[int], Op]:
    return lambda _i: lambda: row.system.list_sessions(expected)


def _fetcher(row: Row, sessions: list[Any]) -> Callable[[int], Op]:
    return lambda i: lambda: row.system.fetch(sessions[i % len(sessions)])


# -- the report --------------------------------------------------------------------------------


def _us(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    value = seconds * 1e6
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def _bare(rows: list[Row], op: str, synchronous: str) -> Row:
    wanted = synchronous if op == "append" else "NORMAL"
    return next(r for r in rows if isinstance(r.system, Bare) and r.system.synchronous == wanted)


def report(rows: list[Row], args: argparse.Namespace, console: Console) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine(), "args": vars(args), "rows": {}}
    for op in OPS:
        sizes = (
            args.sizes if op in ("append", "newest 50", "whole conversation") else [args.sessions]
        )
        title = {
            "append": "append one message (committed), vs history length H",
            "newest 50": f"the newest {NEWEST} messages, vs H",
            "whole conversation": "the whole conversation (H messages)",
            "list 1,000 sessions": f"list {args.sessions:,} sessions",
            "fetch a session": f"fetch one session by id (of {args.sessions:,})",
        }[op]
        table = Table(title=f"{title}: median µs (x bare)", title_justify="left")
        table.add_column("system")
        table.add_column("durability")
        for size in sizes:
            table.add_column(f"H = {size:,}" if op not in OPS[3:] else "median µs", justify="right")
        for row in rows:
            system = row.system
            bare = _bare(rows, op, system.synchronous)
            cells = []
            for size in sizes:
                value = row.median(op, size)
                base = bare.median(op, size)
                if value is None:
                    cells.append("—")
                    continue
                ratio = (
                    "" if base is None or isinstance(system, Bare) else f" ({value / base:.1f}x)"
                )
                cells.append(f"{_us(value)}{ratio}")
                results["rows"].setdefault(system.name, {})[f"{op} @ {size}"] = {
                    "median_us": value * 1e6,
                    "x_bare": None if base is None else value / base,
                    "samples": len(row.samples[(op, size)]),
                }
            table.add_row(system.name, system.durability, *cells)
        console.print(table)
    _speedups(rows, args, console)
    _growth(rows, args, console, results)
    return results


def _growth(
    rows: list[Row], args: argparse.Namespace, console: Console, results: dict[str, Any]
) -> None:
    """Database growth per appended message, and tether's LangGraph adapter against
    SqliteSaver (append time and growth), by H."""
    measured = [r for r in rows if r.growth]
    if not measured:
        return
    table = Table(title="database growth per appended message (bytes)", title_justify="left")
    table.add_column("system")
    for size in args.sizes:
        table.add_column(f"H = {size:,}", justify="right")
    for row in measured:
        cells = [f"{row.growth[s]:,.0f}" if s in row.growth else "—" for s in args.sizes]
        table.add_row(row.system.name, *cells)
        for size, grown in row.growth.items():
            results["rows"][row.system.name][f"growth @ {size}"] = grown
    console.print(table)
    ours = next((r for r in rows if isinstance(r.system, TetherLangGraphSaver)), None)
    theirs = next((r for r in rows if type(r.system) is LangGraphSqlite), None)
    if ours is None or theirs is None:
        return
    table = Table(
        title="LangGraph: TetherCheckpointSaver against SqliteSaver (their / ours)",
        title_justify="left",
    )
    table.add_column("")
    for size in args.sizes:
        table.add_column(f"H = {size:,}", justify="right")
    times, growths = [], []
    for size in args.sizes:
        a, b = theirs.median("append", size), ours.median("append", size)
        times.append("—" if not a or not b else f"{a / b:.1f}x faster")
        g, h = theirs.growth.get(size), ours.growth.get(size)
        growths.append("—" if g is None or not h else f"{g / h:,.0f}x smaller")
    table.add_row("append", *times)
    table.add_row("growth per message", *growths)
    console.print(table)


def _speedups(rows: list[Row], args: argparse.Namespace, console: Console) -> None:
    """tether's library append against each peer's, at each one's default and at full."""
    library = {r.system.level: r for r in rows if isinstance(r.system, TetherLibrary)}
    peers = [r for r in rows if r.system.__class__ in PEERS]
    if not library or not peers:
        return
    table = Table(
        title="append: how many times faster tether's library is (peer median / tether median)",
        title_justify="left",
    )
    table.add_column("peer")
    for size in args.sizes:
        table.add_column(f"H = {size:,}: defaults", justify="right")
        table.add_column("both full", justify="right")
    for peer in peers:
        cells = []
        for size in args.sizes:
            theirs = peer.median("append", size)
            for level in ("normal", "full"):
                ours = library[level].median("append", size) if level in library else None
                cells.append("—" if not theirs or not ours else f"{theirs / ours:.1f}x")
        table.add_row(peer.system.name, *cells)
    console.print(table)


# -- main --------------------------------------------------------------------------------------


def systems(with_peers: bool, console: Console) -> list[System]:
    chosen: list[System] = [
        Bare("NORMAL"),
        Bare("FULL"),
        TetherStore(),
        TetherLibrary("normal"),
        TetherLibrary("full"),
    ]
    for make in [*PEERS, *ADAPTERS] if with_peers else []:
        chosen.append(make())
    return chosen


def _open(loop: asyncio.AbstractEventLoop, system: System, folder: Path) -> str | None:
    try:
        settle(loop, system.open(folder))
    except ImportError as exc:
        return f"not installed ({exc.name or exc})"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="history lengths H")
    parser.add_argument("--appends", type=int, default=300, help="timed appends per system and H")
    parser.add_argument("--reads", type=int, default=200, help="newest-50 reads per system and H")
    parser.add_argument("--sessions", type=int, default=1000, help="sessions to list and fetch")
    parser.add_argument("--lists", type=int, default=30, help="timed listings per system")
    parser.add_argument("--budget", type=float, default=15.0, help="seconds per system and cell")
    parser.add_argument(
        "--block",
        type=int,
        default=20,
        help="consecutive calls of one system per turn (1: systems alternate call by call)",
    )
    parser.add_argument("--quick", action="store_true", help="a smoke test: tiny sizes")
    parser.add_argument("--no-peers", action="store_true", help="tether and bare rows only")
    parser.add_argument(
        "--only", help="comma-separated words: keep the systems whose name has one (and bare)"
    )
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--dir", help="where the files go (default: a temporary folder)")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.appends, args.reads = "20,50", 20, 10
        args.sessions, args.lists, args.budget = 20, 3, 2.0
    if args.block < 1:
        parser.error("--block is at least 1")
    args.sizes = [int(s) for s in str(args.sizes).split(",")]
    console = Console(width=max(Console().width, 160))
    log = Console(stderr=True)
    warnings.simplefilter("ignore")  # the peers' deprecation chatter is not the benchmark's
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        loop = asyncio.new_event_loop()
        rows: list[Row] = []
        skipped: list[tuple[str, str]] = []
        for system in systems(not args.no_peers, console):
            if args.only and not isinstance(system, Bare):
                words = [w.strip().lower() for w in args.only.split(",")]
                if not any(w in system.name.lower() for w in words):
                    continue
            reason = _open(loop, system, Path(folder))
            if reason is None:
                rows.append(Row(system))
            else:
                skipped.append((system.name, reason))
        try:
            measure(loop, rows, args, log)
        finally:
            for row in rows:
                with contextlib.suppress(Exception):
                    settle(loop, row.system.close())
            loop.close()
    info = machine()
    console.print(
        f"\nPeers side by side: {info['cpus']} CPUs ({info['cpu']}), Python {info['python']}, "
        f"SQLite {info['sqlite']}, load average {os.getloadavg()[0]:.1f}"
    )
    results = report(rows, args, console)
    for name, reason in skipped:
        console.print(f"skipped: {name}: {reason}")
    for row in rows:
        for op, note in row.notes.items():
            console.print(f"not measured: {row.system.name}, {op}: {note}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
