"""A single append on SQLite, in one call (Database.append_message) or, when that declines, in
a write transaction: either waits for a file another connection holds, refuses a closed or
expired session, and rolls back whole (message, event, session counter) when its COMMIT fails."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import tether
from tests.support import OWNER, Factory
from tether.core.clock import ManualClock
from tether.core.errors import (
    NotFound,
    SessionClosed,
    SessionExpired,
    StoreError,
    UsageError,
)
from tether.core.message import Message, Role
from tether.runtime.service import Service
from tether.store.changes import session_topic
from tether.store.sql.store import SqlStore


def _stored(store: SqlStore, session_id: str) -> tuple[list[int], list[str], int]:
    """The session's message seqs, its events' data (in id order) and its message_count."""
    with sqlite3.connect(store.location) as conn:
        seqs = [
            s
            for (s,) in conn.execute(
                "SELECT seq FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
            )
        ]
        data = [
            d
            for (d,) in conn.execute(
                "SELECT data FROM events WHERE session_id = ? AND type = 'message.added'"
                " ORDER BY id",
                (session_id,),
            )
        ]
        (count,) = conn.execute(
            "SELECT message_count FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
    return seqs, data, count


def test_an_append_that_finds_the_file_locked_waits_then_writes_message_and_event(
    sqlite_store: SqlStore, loop: asyncio.AbstractEventLoop, clock: ManualClock
) -> None:
    session = loop.run_until_complete(Factory(sqlite_store, clock).session())

    async def add(text: str) -> int:
        message = await sqlite_store.add_message(
            session_id=session.id, owner=OWNER, role=Role.USER, content=text, now=clock.now()
        )
        return message.seq

    assert loop.run_until_complete(add("first")) == 1
    other = sqlite3.connect(sqlite_store.location, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process's writer, as it were
        write = loop.create_task(add("second"))
        loop.run_until_complete(asyncio.sleep(0))  # its BEGIN finds the file locked: it waits
        assert not write.done()
        other.rollback()
        assert loop.run_until_complete(write) == 2
    finally:
        other.close()
    assert _stored(sqlite_store, session.id) == (
        [1, 2],
        ['{"message_seq":1}', '{"message_seq":2}'],
        2,
    )


@pytest.mark.parametrize("path", ["one call", "transaction"])
def test_a_commit_that_fails_leaves_nothing_of_the_append(
    sqlite_store: SqlStore,
    loop: asyncio.AbstractEventLoop,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
) -> None:
    if path == "transaction":
        monkeypatch.setattr(sqlite_store.database, "append_message", lambda *_: None)
    session = loop.run_until_complete(Factory(sqlite_store, clock).session())

    async def add(text: str) -> int:
        message = await sqlite_store.add_message(
            session_id=session.id, owner=OWNER, role=Role.USER, content=text, now=clock.now()
        )
        return message.seq

    assert loop.run_until_complete(add("first")) == 1
    conn = sqlite_store.database._conn  # type: ignore[attr-defined]

    def no_commit(action: int, arg: str | None, *_: object) -> int:
        refused = action == sqlite3.SQLITE_TRANSACTION and arg == "COMMIT"
        return sqlite3.SQLITE_DENY if refused else sqlite3.SQLITE_OK

    conn.set_authorizer(no_commit)
    with pytest.raises(StoreError, match="not authorized"):
        loop.run_until_complete(add("lost"))
    conn.set_authorizer(None)
    assert _stored(sqlite_store, session.id) == ([1], ['{"message_seq":1}'], 1)
    # The connection was left outside any transaction and the lock free: the next append
    # takes the next seq.
    assert loop.run_until_complete(add("second")) == 2
    assert _stored(sqlite_store, session.id) == (
        [1, 2],
        ['{"message_seq":1}', '{"message_seq":2}'],
        2,
    )


def test_one_call_refuses_closed_expired_and_unknown_sessions_and_writes_nothing(
    sqlite_store: SqlStore, loop: asyncio.AbstractEventLoop, clock: ManualClock
) -> None:
    factory = Factory(sqlite_store, clock)
    closed = loop.run_until_complete(factory.session())
    expiring = loop.run_until_complete(factory.session(ttl_seconds=60))
    loop.run_until_complete(sqlite_store.close_session(closed.id, owner=OWNER, now=clock.now()))
    clock.advance(61)

    def add(session_id: str) -> None:
        loop.run_until_complete(
            sqlite_store.add_message(
                session_id=session_id, owner=OWNER, role=Role.USER, content="x", now=clock.now()
            )
        )

    with pytest.raises(SessionClosed):
        add(closed.id)
    with pytest.raises(SessionExpired):
        add(expiring.id)
    with pytest.raises(NotFound):
        add("0190a7d6-0000-7000-8000-000000000000")
    for session in (closed, expiring):
        assert _stored(sqlite_store, session.id) == ([], [], 0)


def test_one_call_takes_event_ids_after_the_highest_ever_deleted_and_announces(
    sqlite_store: SqlStore, loop: asyncio.AbstractEventLoop, clock: ManualClock
) -> None:
    session = loop.run_until_complete(Factory(sqlite_store, clock).session())
    told: list[tuple[str, int]] = []
    sqlite_store.observe(lambda type_, data: told.append((type_, data["message"].seq)))

    async def add(text: str) -> int:
        message = await sqlite_store.add_message(
            session_id=session.id, owner=OWNER, role=Role.USER, content=text, now=clock.now()
        )
        return message.seq

    assert loop.run_until_complete(add("first")) == 1
    with sqlite3.connect(sqlite_store.location) as conn:
        (newest,) = conn.execute("SELECT max(id) FROM events").fetchone()
        conn.execute("DELETE FROM events WHERE id = ?", (newest,))
    seen = sqlite_store.changes.cursor()
    assert loop.run_until_complete(add("second")) == 2
    with sqlite3.connect(sqlite_store.location) as conn:
        (after,) = conn.execute("SELECT max(id) FROM events").fetchone()
    assert after == newest + 1  # not newest again: an event id is never reused
    assert told == [("message.added", 1), ("message.added", 2)]
    woken = sqlite_store.changes.wait([session_topic(session.id)], 0, since=seen)
    assert loop.run_until_complete(woken)  # published after the commit: a waiter wakes


def test_threads_appending_to_one_session_get_every_seq_once_each_with_its_event(
    tmp_path: Path,
) -> None:
    # Threads contend for the writer: some appends take the one call, the others (the lock
    # held) wait in a write transaction; every seq is taken once, with its own event.
    tt = tether.open(tmp_path / "t.db", owner=OWNER, worker=False)
    try:
        session = tt.sessions.create(title="threads")
        barrier = threading.Barrier(4)

        def add(n: int) -> list[int]:
            barrier.wait()
            return [session.messages.add("user", f"{n}-{i}").seq for i in range(50)]

        with ThreadPoolExecutor(4) as pool:
            seqs = [seq for got in pool.map(add, range(4)) for seq in got]
        backend = tt.async_backend
        assert isinstance(backend, Service) and isinstance(backend.store, SqlStore)
        store = backend.store
        stored, data, count = _stored(store, session.id)
    finally:
        tt.close()
    assert sorted(seqs) == stored == list(range(1, 201)) and count == 200
    assert data == [f'{{"message_seq":{seq}}}' for seq in range(1, 201)]


def test_an_append_that_races_a_close_from_another_thread_says_the_store_is_closed(
    sqlite_store: SqlStore,
    loop: asyncio.AbstractEventLoop,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = loop.run_until_complete(Factory(sqlite_store, clock).session())
    db = sqlite_store.database
    lock = db._lock  # type: ignore[attr-defined]
    take = lock.take

    def closed_first() -> bool:
        # Another thread closes the store after the one call looked, before it took the lock.
        closer = threading.Thread(target=db.close_now)  # type: ignore[attr-defined]
        closer.start()
        closer.join()
        taken: bool = take()
        return taken

    monkeypatch.setattr(lock, "take", closed_first)
    with pytest.raises(StoreError, match="the store is closed"):
        loop.run_until_complete(
            sqlite_store.add_message(
                session_id=session.id, owner=OWNER, role=Role.USER, content="x", now=clock.now()
            )
        )
    monkeypatch.undo()
    assert lock.take()  # (the lock was given back)
    lock.release()


@pytest.mark.parametrize("field", ["metadata", "item"])
def test_a_refused_session_is_said_before_a_value_that_is_not_json(
    sqlite_store: SqlStore, loop: asyncio.AbstractEventLoop, clock: ManualClock, field: str
) -> None:
    closed = loop.run_until_complete(Factory(sqlite_store, clock).session())
    loop.run_until_complete(sqlite_store.close_session(closed.id, owner=OWNER, now=clock.now()))
    value: dict[str, Any] = {"x": math.nan}

    def add(session_id: str) -> None:
        loop.run_until_complete(
            sqlite_store.add_message(
                session_id=session_id,
                owner=OWNER,
                role=Role.USER,
                content="x",
                now=clock.now(),
                metadata=value if field == "metadata" else None,
                item=value if field == "item" else None,
            )
        )

    with pytest.raises(SessionClosed):
        add(closed.id)
    with pytest.raises(NotFound):
        add("0190a7d6-0000-7000-8000-000000000000")
    active = loop.run_until_complete(Factory(sqlite_store, clock).session())
    with pytest.raises(UsageError, match="not storable as JSON"):
        add(active.id)
    assert _stored(sqlite_store, active.id) == ([], [], 0)


def test_one_call_touches_the_session_without_returning_then_reads_its_row_back(
    sqlite_store: SqlStore, loop: asyncio.AbstractEventLoop, clock: ManualClock
) -> None:
    # A RETURNING's rows SQLite gathers in a b-tree it makes and drops for the statement: the
    # touch does without, and the row it changed is read back in the same transaction.
    session = loop.run_until_complete(Factory(sqlite_store, clock).session())
    conn = sqlite_store.database._conn  # type: ignore[attr-defined]
    ran: list[str] = []
    conn.set_trace_callback(ran.append)
    try:
        message = loop.run_until_complete(
            sqlite_store.add_message(
                session_id=session.id, owner=OWNER, role=Role.USER, content="x", now=clock.now()
            )
        )
    finally:
        conn.set_trace_callback(None)
    # (A trigger's program is traced as its statement again, or as a -- comment.)
    statements = [s for i, s in enumerate(ran) if s[:2] != "--" and (i == 0 or ran[i - 1] != s)]
    assert [statement.split()[0] for statement in statements] == [
        "BEGIN",
        "UPDATE",
        "SELECT",
        "INSERT",
        "INSERT",
        "COMMIT",
    ]
    assert not [statement for statement in statements if "RETURNING" in statement]
    assert message.seq == 1
    assert _stored(sqlite_store, session.id) == ([1], ['{"message_seq":1}'], 1)


@pytest.mark.parametrize("owner", [OWNER, None])
@pytest.mark.parametrize("run_id", [None, "0190a7d6-0000-7000-8000-0000000000aa"])
@pytest.mark.parametrize("item", [None, {"role": "user", "content": "x"}])
def test_one_call_stores_the_message_and_event_a_write_transaction_stores(
    sqlite_store: SqlStore,
    loop: asyncio.AbstractEventLoop,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
    owner: str | None,
    run_id: str | None,
    item: dict[str, Any] | None,
) -> None:
    # Each form of the one call's statements (a None run_id or item written NULL, bound by
    # position) against the general path's named ones.
    session = loop.run_until_complete(Factory(sqlite_store, clock).session())

    def add() -> Message:
        return loop.run_until_complete(
            sqlite_store.add_message(
                session_id=session.id,
                owner=owner,
                role=Role.ASSISTANT,
                content="x",
                now=clock.now(),
                run_id=run_id,
                metadata={"k": [1, None]},
                item=item,
            )
        )

    one = add()
    with monkeypatch.context() as patch:
        patch.setattr(sqlite_store.database, "append_message", lambda *_: None)
        general = add()
    with sqlite3.connect(sqlite_store.location) as conn:
        messages = conn.execute(
            "SELECT seq, role, content, run_id, metadata, created_at, item FROM messages"
            " WHERE session_id = ? ORDER BY seq",
            (session.id,),
        ).fetchall()
        events = conn.execute(
            "SELECT owner, session_id, run_id, data, created_at FROM events"
            " WHERE type = 'message.added' ORDER BY id"
        ).fetchall()
    item_text = None if item is None else '{"role":"user","content":"x"}'
    at = messages[0][5]
    assert messages == [
        (seq, "assistant", "x", run_id, '{"k":[1,null]}', at, item_text) for seq in (1, 2)
    ]
    assert events == [(OWNER, session.id, run_id, f'{{"message_seq":{seq}}}', at) for seq in (1, 2)]
    assert (one.seq, general.seq) == (1, 2)
    assert (one.run_id, one.item, one.metadata) == (general.run_id, general.item, general.metadata)
