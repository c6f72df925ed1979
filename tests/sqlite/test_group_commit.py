"""Durability ``full`` on a SQLite file: a write returns only after a flush of the WAL that
began after its commit, off the event loop; the writes that commit while a flush runs share the
next one; what a write announces (its topics, its after-commit actions) comes after its flush,
even when its caller stopped waiting; closing waits for the flush under way.

The flushes are held by a stand-in for ``fdatasync`` that lets each one go when the test says so
(every test here fails on the code before group commit: its COMMIT flushed on the loop)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import OWNER, Factory
from tests.waiting import eventually
from tether.core.clock import ManualClock
from tether.core.errors import StoreError
from tether.core.message import NewMessage, Role
from tether.store.factory import open_store
from tether.store.sql.store import SqlStore
from tether.store.sqlite import flush
from tether.store.sqlite.database import SqliteDatabase


class HeldFlushes:
    """fdatasync that waits for let_go() once per flush, counting the flushes begun."""

    def __init__(self) -> None:
        self.begun = 0
        self._turns = threading.Semaphore(0)
        self.fail = False

    def __call__(self, fd: int) -> None:
        self.begun += 1
        assert self._turns.acquire(timeout=30), "a flush was never let go"
        if self.fail:
            raise OSError(5, "Input/output error")

    def let_go(self) -> None:
        self._turns.release()


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldFlushes:
    stand_in = HeldFlushes()
    monkeypatch.setattr(flush, "fdatasync", stand_in)
    return stand_in


@pytest.fixture
def db(
    tmp_path: Path, loop: asyncio.AbstractEventLoop, held: HeldFlushes
) -> Iterator[SqliteDatabase]:
    database = SqliteDatabase(
        tmp_path / "t.db", durability="full", group_commit=True, migrate=False
    )
    database._conn.execute("CREATE TABLE writes (topic TEXT)")  # (a row per write, below)
    yield database
    for _ in range(8):  # whatever a failed test left held
        held.let_go()
    loop.run_until_complete(database.close())


async def _write(db: SqliteDatabase, topic: str, told: list[str], *, changes: bool = True) -> None:
    """A write transaction (of one row, unless not changes) announcing topic, telling told
    after its commit."""
    async with db.write() as tx:
        if changes:
            db._conn.execute("INSERT INTO writes VALUES (?)", (topic,))
        tx.publish(topic)
        tx.after_commit(lambda: told.append(topic))


def test_the_writer_commits_without_a_flush_of_its_own(tmp_path: Path) -> None:
    full = SqliteDatabase(tmp_path / "full.db", durability="full", group_commit=True)
    normal = SqliteDatabase(tmp_path / "normal.db")
    try:
        # synchronous=NORMAL (1): the COMMIT writes the WAL, the group flushes it
        assert full._conn.execute("PRAGMA synchronous").fetchone()[0] == 1
        assert full.flushes == 1  # the migrations of the new file
        assert normal.flushes == 0
    finally:
        full.close_now()
        normal.close_now()


def test_without_group_commit_full_flushes_inside_each_commit(tmp_path: Path) -> None:
    # the library's durability="full": SQLite's FULL (2), the least latency for one writer
    inline = SqliteDatabase(tmp_path / "inline.db", durability="full")
    try:
        assert inline._conn.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert inline.flushes == 0
    finally:
        inline.close_now()


async def test_writes_that_commit_during_a_flush_share_the_next_one(
    db: SqliteDatabase, held: HeldFlushes
) -> None:
    told: list[str] = []
    first = asyncio.create_task(_write(db, "first", told))
    await eventually(lambda: held.begun == 1, what="the first flush")
    others = [asyncio.create_task(_write(db, f"w{n}", told)) for n in range(5)]
    await eventually(lambda: db._group is not None and db._group.due == 5, what="5 commits")
    held.let_go()
    await first
    # the flush under way began before their commits: they wait for the next one
    await eventually(lambda: held.begun == 2, what="the second flush")
    assert not any(task.done() for task in others)
    assert told == ["first"]
    held.let_go()
    await asyncio.gather(*others)
    assert told == ["first", "w0", "w1", "w2", "w3", "w4"]  # in commit order
    assert db.flushes == 2


async def test_a_write_that_changed_nothing_waits_only_for_the_flushes_under_way(
    db: SqliteDatabase, held: HeldFlushes
) -> None:
    # nothing to flush of its own: at once when every earlier commit is flushed (before: a
    # flush of its own, two thread hops, for an empty claim or lease renewal) …
    told: list[str] = []
    before = db.flushes
    await _write(db, "nothing", told, changes=False)
    assert told == ["nothing"] and held.begun == 0 and db.flushes == before
    # … else after the next flush, which covers whatever it read of the commits before it
    changed = asyncio.create_task(_write(db, "changed", told))
    await eventually(lambda: held.begun == 1, what="the first flush")
    empty = asyncio.create_task(_write(db, "empty", told, changes=False))
    await eventually(lambda: db._group is not None and db._group.due == 1, what="the wait")
    held.let_go()
    await changed
    assert not empty.done() and told == ["nothing", "changed"]
    await eventually(lambda: held.begun == 2, what="the next flush")
    held.let_go()
    await empty
    assert told == ["nothing", "changed", "empty"]


async def test_a_write_is_announced_only_after_its_flush(
    db: SqliteDatabase, held: HeldFlushes
) -> None:
    told: list[str] = []
    cursor = db.changes.cursor()
    woken = asyncio.create_task(db.changes.wait(["topic"], timeout=None, since=cursor))
    write = asyncio.create_task(_write(db, "topic", told))
    await eventually(lambda: held.begun == 1, what="the flush")  # (committed before it)
    await asyncio.sleep(0)
    assert (told, db.changes.cursor(), woken.done(), write.done()) == ([], cursor, False, False)
    held.let_go()
    await write
    assert told == ["topic"] and await woken


async def test_a_cancelled_writer_still_announces_its_write(
    db: SqliteDatabase, held: HeldFlushes
) -> None:
    told: list[str] = []
    write = asyncio.create_task(_write(db, "topic", told))
    await eventually(lambda: held.begun == 1, what="the flush")
    write.cancel()
    with pytest.raises(asyncio.CancelledError):
        await write
    assert told == []
    held.let_go()
    await eventually(lambda: told == ["topic"], what="the announcement")
    held.let_go()
    await _write(db, "next", told)  # the writer goes on as before
    assert told == ["topic", "next"]


async def test_close_waits_for_the_flush_under_way(db: SqliteDatabase, held: HeldFlushes) -> None:
    told: list[str] = []
    write = asyncio.create_task(_write(db, "topic", told))
    await eventually(lambda: held.begun == 1, what="the flush")
    closing = asyncio.create_task(db.close())
    for _ in range(20):
        await asyncio.sleep(0)
    assert not closing.done() and not write.done()
    held.let_go()
    await closing
    assert told == ["topic"] and write.done() and db.flushes == 1


async def test_a_failed_flush_fails_its_writes_and_refuses_later_ones(
    db: SqliteDatabase, held: HeldFlushes
) -> None:
    held.fail = True
    write = asyncio.create_task(_write(db, "topic", []))
    await eventually(lambda: held.begun == 1, what="the flush")
    held.let_go()
    with pytest.raises(StoreError, match="could not flush") as failed:
        await write
    assert db.location not in str(failed.value)  # (the file's path goes to the log only)
    refused = []
    for _ in range(2):
        with pytest.raises(StoreError, match="reopened") as later:
            await _write(db, "later", [])
        refused.append(later.value)
    # each refusal its own error: one shared object would keep every traceback it was raised with
    assert refused[0] is not refused[1] and refused[0] is not failed.value


async def test_writes_committed_after_the_flush_thread_is_gone_fail_instead_of_waiting(
    db: SqliteDatabase,
) -> None:
    assert db._group is not None
    db._group._thread.shutdown()  # (as at the interpreter's exit)
    told: list[str] = []
    async with asyncio.timeout(30):  # (before: the write waited for ever)
        with pytest.raises(StoreError, match="not flushed"):
            await _write(db, "topic", told)
        assert told == ["topic"]  # committed, so announced all the same
        with pytest.raises(StoreError, match="not flushed"):
            await _write(db, "later", [])


async def test_concurrent_appends_at_full_are_all_stored_with_fewer_flushes(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = open_store(str(tmp_path / "t.db"), durability="full", group_commit=True)
    assert isinstance(store, SqlStore) and isinstance(store.database, SqliteDatabase)
    database = store.database
    try:
        sessions = [await Factory(store, clock).session() for _ in range(8)]
        before = database.flushes

        async def append(session_id: str) -> None:
            for n in range(5):
                message = NewMessage(Role.USER, f"m{n}", {})
                await store.add_messages(
                    session_id=session_id, owner=OWNER, messages=[message], now=clock.now()
                )

        await asyncio.gather(*(append(s.id) for s in sessions))
        assert 0 < database.flushes - before <= 40
        for session in sessions:
            stored = await store.list_messages(session.id, owner=OWNER)
            assert [m.content for m in stored] == [f"m{n}" for n in range(5)]
    finally:
        await store.close()
