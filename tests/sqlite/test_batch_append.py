"""A batch append on SQLite writes its rows in a few multi-row INSERTs per table: the messages
and their events come out exactly as given (text for text; each event naming its message, read
back as its full JSON), in order, whatever the size of the batch."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.new_messages import NEW_MESSAGE
from tests.support import OWNER, Factory
from tether.core.clock import ManualClock
from tether.core.event import EventType
from tether.core.message import NewMessage, Role
from tether.core.serde import to_data
from tether.store.sql.store import SqlStore

MESSAGES = st.lists(NEW_MESSAGE, min_size=2, max_size=6)


def _stored(store: SqlStore, session_id: str) -> tuple[list[tuple[Any, ...]], list[str]]:
    """The session's message rows and its message.added events' data, as the file holds them."""
    with sqlite3.connect(store.location) as conn:
        rows = conn.execute(
            "SELECT id, seq, role, content, metadata, item FROM messages"
            " WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()
        data = conn.execute(
            "SELECT data FROM events WHERE session_id = ? AND type = 'message.added' ORDER BY id",
            (session_id,),
        ).fetchall()
    return rows, [d for (d,) in data]


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(messages=MESSAGES)
def test_rows_and_event_texts_are_exactly_what_was_given(
    sqlite_store: SqlStore,
    loop: asyncio.AbstractEventLoop,
    clock: ManualClock,
    messages: list[NewMessage],
) -> None:
    async def append() -> None:
        session = await Factory(sqlite_store, clock).session()
        added = await sqlite_store.add_messages(
            session_id=session.id, owner=OWNER, messages=messages, now=clock.now()
        )
        rows, data = _stored(sqlite_store, session.id)
        dump = sqlite_store.database.dump_json
        assert rows == [
            (m.id, m.seq, m.role.value, m.content, dump(m.metadata), dump(m.item)) for m in added
        ]
        assert data == [f'{{"message_seq":{m.seq}}}' for m in added]
        events = await sqlite_store.list_events(session_id=session.id)
        assert [dump(e.data) for e in events if e.type is EventType.MESSAGE_ADDED] == [
            dump({"message": to_data(m)}) for m in added
        ]

    loop.run_until_complete(append())


@pytest.mark.parametrize("size", [3, 64, 100, 1000])
async def test_a_batch_goes_in_statements_of_a_few_sizes_in_order(
    sqlite_store: SqlStore, clock: ManualClock, size: int
) -> None:
    session = await Factory(sqlite_store, clock).session()
    given_ = [NewMessage(Role.USER, f"m{n}", {"n": n}) for n in range(size)]
    added = await sqlite_store.add_messages(
        session_id=session.id, owner=OWNER, messages=given_, now=clock.now()
    )
    rows, data = _stored(sqlite_store, session.id)
    assert [(r[1], r[3], r[4]) for r in rows] == [
        (n, f"m{n - 1}", f'{{"n":{n - 1}}}') for n in range(1, size + 1)
    ]
    assert [m.seq for m in added] == list(range(1, size + 1))
    assert data == [f'{{"message_seq":{n}}}' for n in range(1, size + 1)]
    events = await sqlite_store.list_events(session_id=session.id, limit=size + 1)
    loaded = [e.data["message"] for e in events if e.type is EventType.MESSAGE_ADDED]
    assert [(m["seq"], m["content"]) for m in loaded] == [(r[1], r[3]) for r in rows]
