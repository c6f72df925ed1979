"""A single append on SQLite: its BEGIN and COMMIT run inline, and still wait for a file another
connection holds, and roll back whole (message, event, session counter) when the COMMIT fails."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from tests.support import OWNER, Factory
from tether.core.clock import ManualClock
from tether.core.errors import StoreError
from tether.core.message import Role
from tether.store.sql.store import SqlStore


def _stored(store: SqlStore, session_id: str) -> tuple[list[int], list[str], int]:
    """The session's message seqs, its events' data (in id order) and its message_count."""
    with sqlite3.connect(store.location) as conn:
        seqs = [s for (s,) in conn.execute(
            "SELECT seq FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
        )]
        data = [d for (d,) in conn.execute(
            "SELECT data FROM events WHERE session_id = ? AND type = 'message.added'"
            " ORDER BY id",
            (session_id,),
        )]
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


def test_a_commit_that_fails_leaves_nothing_of_the_append(
    sqlite_store: SqlStore, loop: asyncio.AbstractEventLoop, clock: ManualClock
) -> None:
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
    with pytest.raises(StoreError, match="commit"):
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
