"""A bulk read (ReadTx.records) fetches every row, then decodes them with the garbage collector
paused: the collector is back as it was afterwards, whether the read returned or raised, and
what it reads is what a row-by-row read makes of the same rows."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.new_messages import NEW_MESSAGE
from tests.support import OWNER, Factory
from tether.core.clock import ManualClock
from tether.core.message import Message, NewMessage, Role
from tether.store.sql.collector import uncollected
from tether.store.sql.rows import MAX_SEQ, MESSAGE_COLUMNS, message_from_row
from tether.store.sql.store import SqlStore


@pytest.fixture
def collector_on() -> Iterator[None]:
    """The collector on for the test, and on after it whatever the test did."""
    gc.enable()
    yield
    gc.enable()


def test_the_collector_is_off_during_the_call_and_on_after(collector_on: None) -> None:
    assert uncollected(gc.isenabled) is False
    assert gc.isenabled()

    def fail() -> None:
        assert not gc.isenabled()
        raise LookupError("in the decoder")

    with pytest.raises(LookupError, match="in the decoder"):
        uncollected(fail)
    assert gc.isenabled()


def test_a_collector_switched_off_before_stays_off(collector_on: None) -> None:
    gc.disable()
    assert uncollected(lambda: "read") == "read"
    assert not gc.isenabled()
    found: dict[str, int] = {}
    with pytest.raises(KeyError):
        uncollected(lambda: found["missing"])
    assert not gc.isenabled()


async def test_a_read_decodes_with_the_collector_off_and_restores_it(
    sqlite_store: SqlStore, clock: ManualClock, collector_on: None
) -> None:
    session = await Factory(sqlite_store, clock).session()
    await sqlite_store.add_message(
        session_id=session.id, owner=OWNER, role=Role.USER, content="hi", now=clock.now()
    )
    seen: list[bool] = []

    def decode(rows: Iterable[Any]) -> list[Any]:
        seen.append(gc.isenabled())
        return list(rows)

    def broken(rows: Iterable[Any]) -> list[Any]:
        seen.append(gc.isenabled())
        raise ValueError("a row Python cannot read")

    params: dict[str, Any] = {
        "session_id": session.id,
        "owner": OWNER,
        "after_seq": 0,
        "before_seq": MAX_SEQ,
        "removed": False,
        "limit": 10,
    }
    async with sqlite_store.database.read() as tx:
        [row] = await tx.records("messages_forward", decode, **params)
        assert row[3] == "hi"
        assert gc.isenabled()
        with pytest.raises(ValueError, match="cannot read"):
            await tx.records("messages_forward", broken, **params)
    assert seen == [False, False]
    assert gc.isenabled()
    assert [m.content for m in await sqlite_store.list_messages(session.id)] == ["hi"]
    assert gc.isenabled()


def _row_by_row(store: SqlStore, session_id: str) -> list[Message]:
    """The session's messages, removed ones too, each decoded from its own row."""
    with closing(sqlite3.connect(store.location)) as conn:
        rows = conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()
    return [message_from_row(row) for row in rows]


@settings(
    max_examples=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    batches=st.lists(st.lists(NEW_MESSAGE, min_size=1, max_size=4), min_size=1, max_size=4),
    steps=st.lists(st.integers(min_value=0, max_value=2_000_000), min_size=4, max_size=4),
    popped=st.integers(min_value=0, max_value=2),
    singles=st.lists(st.tuples(st.none() | st.text(max_size=5), NEW_MESSAGE), max_size=3),
)
def test_a_bulk_read_is_what_a_row_by_row_read_makes(
    sqlite_store: SqlStore,
    loop: asyncio.AbstractEventLoop,
    clock: ManualClock,
    batches: list[list[NewMessage]],
    steps: list[int],
    popped: int,
    singles: list[tuple[str | None, NewMessage]],
) -> None:
    async def check() -> None:
        session = await Factory(sqlite_store, clock).session()
        added: list[Message] = []
        for batch, step in zip(batches, steps, strict=False):
            clock.advance(step / 1e6)  # equal times, times a microsecond apart, seconds apart
            added += await sqlite_store.add_messages(
                session_id=session.id, owner=OWNER, messages=batch, now=clock.now()
            )
        for run_id, single in singles:  # one at a time, with a run's id (any text)
            added.append(
                await sqlite_store.add_message(
                    session_id=session.id,
                    owner=OWNER,
                    role=single.role,
                    content=single.content,
                    now=clock.now(),
                    run_id=run_id,
                    metadata=single.metadata,
                    item=single.item,
                )
            )
        for _ in range(popped):
            await sqlite_store.pop_message(session.id, owner=OWNER, now=clock.now())
        stored = _row_by_row(sqlite_store, session.id)
        assert [(m.id, m.created_at) for m in stored] == [(m.id, m.created_at) for m in added]
        everything = await sqlite_store.list_messages(
            session.id, owner=OWNER, limit=100, include_removed=True
        )
        assert everything == stored
        assert [type(m) for m in everything] == [Message] * len(stored)
        assert all(m.created_at.tzinfo is stored[0].created_at.tzinfo for m in everything)
        kept = await sqlite_store.list_messages(session.id, owner=OWNER, limit=100)
        assert kept == [m for m in stored if m.removed_at is None]
        newest = await sqlite_store.list_messages(
            session.id, owner=OWNER, limit=100, newest_first=True, include_removed=True
        )
        assert newest == stored[::-1]

    loop.run_until_complete(check())
