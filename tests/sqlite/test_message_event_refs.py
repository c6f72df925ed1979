"""SQLite stores a message.added event by reference (schema 15): its data names its message's
seq, and every read of events (listing a session's or a run's, a session export, a database
copy, the events_read view) gives it the same JSON its full copy had, key for key and value for
value, whether the message was appended alone, in a batch or by a run, removed since or not,
beside events stored whole (before schema 15, or by a backend that keeps full copies). No path
deleting messages leaves an event naming a message that is gone."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.new_messages import NEW_MESSAGE
from tests.sqlite.test_migrations import _at_version_before
from tests.support import OWNER, Factory
from tether.core.clock import ManualClock
from tether.core.event import EventType
from tether.core.message import Message, NewMessage, Role
from tether.core.run import IfBusy
from tether.core.serde import to_data
from tether.store.copy import copy_store
from tether.store.factory import open_store
from tether.store.sql.store import SqlStore

MESSAGE = NEW_MESSAGE
#: Steps between appends: whole seconds too (a time without microseconds reads without them).
STEPS = st.sampled_from([0, 1, 123, 999_999, 1_000_000, 3_000_000])

#: Events naming a message that is not there (none may ever be).
ORPHANS = """SELECT count(*) FROM events AS e
WHERE e.data LIKE '{"message_seq":%' AND NOT EXISTS (
    SELECT 1 FROM messages AS m
    WHERE m.session_id = e.session_id AND m.seq = CAST(substr(e.data, 16) AS INTEGER))"""
REFS = """SELECT count(*) FROM events WHERE data LIKE '{"message_seq":%'"""


def _count(store: SqlStore, sql: str) -> int:
    with sqlite3.connect(store.location) as conn:
        (n,) = conn.execute(sql).fetchone()
    return int(n)


async def _append(
    store: SqlStore,
    factory: Factory,
    clock: ManualClock,
    session_id: str,
    plan: list[tuple[str, list[NewMessage], int]],
) -> tuple[list[Message], str]:
    """Append each part of plan (how, messages, microseconds to move the clock first): "batch"
    with add_messages, "one" with add_message, "run" in a new run's input, "whole" in a batch
    stored with full copies (as before schema 15). The messages as appended, and the last
    run's id."""
    added: list[Message] = []
    run_id = ""
    for how, messages, step in plan:
        clock.advance(step / 1e6)
        now = clock.now()
        if how in ("batch", "whole"):
            store.database.message_refs = how == "batch"
            try:
                added += await store.add_messages(
                    session_id=session_id, owner=OWNER, messages=messages, now=now
                )
            finally:
                store.database.message_refs = True
        elif how == "one":
            for m in messages:
                added.append(
                    await store.add_message(
                        session_id=session_id,
                        owner=OWNER,
                        role=m.role,
                        content=m.content,
                        now=now,
                        metadata=m.metadata,
                        item=m.item,
                    )
                )
        else:
            run, created = await store.create_run(
                factory.run_record(session_id),
                owner=OWNER,
                if_busy=IfBusy.ENQUEUE,
                now=now,
                messages=[(m.role, m.content, m.metadata) for m in messages],
            )
            assert created
            run_id = run.id
            added += [
                m for m in await store.list_messages(session_id, limit=10_000) if m.run_id == run.id
            ]
            await _finish(store, factory, run.id)
    return added, run_id


async def _finish(store: SqlStore, factory: Factory, run_id: str) -> None:
    """Cancel a ready run, so that the next starts at once and the run may be deleted."""
    await store.cancel_run(run_id, owner=OWNER, now=factory.clock.now(), reason="done")


def _full(store: SqlStore, messages: list[Message]) -> list[str]:
    """The JSON texts of the full copies of messages' events, as they were appended."""
    return [store.database.dump_json({"message": to_data(m)}) for m in messages]


async def _read_every_way(store: SqlStore, session_id: str, target: SqlStore) -> dict[str, Any]:
    """The message.added events' data of session_id by every read path, as JSON texts."""
    dump, load = store.database.dump_json, store.database.load_json
    listed = await store.list_events(session_id=session_id, limit=10_000)
    archive = await store.export_session(session_id, owner=None)
    with sqlite3.connect(store.location) as conn:
        view = conn.execute(
            "SELECT data FROM events_read WHERE session_id = ? AND type = 'message.added'"
            " ORDER BY id",
            (session_id,),
        ).fetchall()
    report = await copy_store(store, target)
    assert all(t.source_checksum == t.target_checksum for t in report.tables)
    copied = await target.list_events(session_id=session_id, limit=10_000)
    with sqlite3.connect(target.location) as conn:
        stored_in_copy = conn.execute(
            "SELECT data FROM events WHERE session_id = ? AND type = 'message.added' ORDER BY id",
            (session_id,),
        ).fetchall()
    added = EventType.MESSAGE_ADDED
    return {
        "list_events": [dump(e.data) for e in listed if e.type is added],
        "export": [dump(e["data"]) for e in archive["events"] if e["type"] == added.value],
        "events_read": [dump(load(d)) for (d,) in view],
        "copy, listed": [dump(e.data) for e in copied if e.type is added],
        "copy, stored whole": [d for (d,) in stored_in_copy],
    }


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    plan=st.lists(
        st.tuples(
            st.sampled_from(["batch", "one", "run", "whole"]),
            st.lists(MESSAGE, min_size=1, max_size=3),
            STEPS,
        ),
        min_size=1,
        max_size=5,
    ),
    removals=st.sampled_from(["none", "pop", "clear"]),
)
def test_every_read_gives_a_message_event_its_full_copy(
    sqlite_store: SqlStore,
    loop: asyncio.AbstractEventLoop,
    clock: ManualClock,
    tmp_path: Path,
    plan: list[tuple[str, list[NewMessage], int]],
    removals: str,
) -> None:
    async def check() -> None:
        factory = Factory(sqlite_store, clock)
        session = await factory.session()
        added, run_id = await _append(sqlite_store, factory, clock, session.id, plan)
        if removals == "pop":
            assert await sqlite_store.pop_message(session.id, owner=OWNER, now=clock.now())
        elif removals == "clear":
            assert await sqlite_store.clear_messages(session.id, owner=OWNER, now=clock.now())
        expected = _full(sqlite_store, added)
        target = open_store(str(tmp_path / f"copy-{session.id}.db"))
        assert isinstance(target, SqlStore)
        try:
            read = await _read_every_way(sqlite_store, session.id, target)
        finally:
            await target.close()
        for way, texts in read.items():
            assert texts == expected, way
        if run_id:
            of_run = await sqlite_store.list_events(run_id=run_id)
            assert [
                sqlite_store.database.dump_json(e.data)
                for e in of_run
                if e.type is EventType.MESSAGE_ADDED
            ] == _full(sqlite_store, [m for m in added if m.run_id == run_id])
        by_reference = sum(len(ms) for how, ms, _ in plan if how != "whole")
        assert _count(sqlite_store, REFS) >= by_reference

    loop.run_until_complete(check())


async def test_a_message_event_is_stored_by_reference_alone_and_in_a_batch(
    sqlite_store: SqlStore, clock: ManualClock
) -> None:
    session = await Factory(sqlite_store, clock).session()
    await sqlite_store.add_message(
        session_id=session.id, owner=OWNER, role=Role.USER, content="one", now=clock.now()
    )
    await sqlite_store.add_messages(
        session_id=session.id,
        owner=OWNER,
        messages=[NewMessage(Role.USER, "two"), NewMessage(Role.ASSISTANT, "three")],
        now=clock.now(),
    )
    with sqlite3.connect(sqlite_store.location) as conn:
        data = conn.execute(
            "SELECT data FROM events WHERE type = 'message.added' ORDER BY id"
        ).fetchall()
    assert data == [('{"message_seq":1}',), ('{"message_seq":2}',), ('{"message_seq":3}',)]


async def test_an_event_stored_whole_that_only_begins_like_a_reference_reads_as_stored(
    sqlite_store: SqlStore, clock: ManualClock, tmp_path: Path
) -> None:
    """A message.added event imported with data of its own that begins as a reference's
    ({"message_seq":1,...}) is not one: every read gives its own data, not message 1's."""
    session = await Factory(sqlite_store, clock).session()
    await sqlite_store.add_messages(
        session_id=session.id, owner=OWNER, messages=[NewMessage(Role.USER, "x")], now=clock.now()
    )
    archive = await sqlite_store.export_session(session.id, owner=None)
    own = {"message_seq": 1, "note": "the archive's own data"}
    for event in archive["events"]:
        if event["type"] == EventType.MESSAGE_ADDED.value:
            event["data"] = own
    other = open_store(str(tmp_path / "other.db"))
    assert isinstance(other, SqlStore)
    try:
        await other.import_session(archive, owner=None)
        listed = await other.list_events(session_id=session.id)
        exported = await other.export_session(session.id, owner=None)
    finally:
        await other.close()
    added = EventType.MESSAGE_ADDED
    assert [e.data for e in listed if e.type is added] == [own]
    assert [e["data"] for e in exported["events"] if e["type"] == added.value] == [own]


async def test_a_message_before_1970_keeps_a_full_copy(
    sqlite_store: SqlStore, clock: ManualClock
) -> None:
    """events_read renders times from 1970 on: an earlier message's event is stored whole."""
    session = await Factory(sqlite_store, clock).session()
    early = clock.now().replace(year=1969, microsecond=5)
    [message] = await sqlite_store.add_messages(
        session_id=session.id, owner=OWNER, messages=[NewMessage(Role.USER, "x")], now=early
    )
    assert _count(sqlite_store, REFS) == 0
    events = await sqlite_store.list_events(session_id=session.id)
    assert events[-1].data == sqlite_store.database.load_json(
        sqlite_store.database.dump_json({"message": to_data(message)})
    )


@pytest.mark.parametrize("path", ["run", "session", "owner"])
async def test_no_deletion_leaves_an_event_naming_a_message_that_is_gone(
    sqlite_store: SqlStore, clock: ManualClock, path: str
) -> None:
    factory = Factory(sqlite_store, clock)
    kept, doomed = await factory.session(), await factory.session()
    runs: list[str] = []
    for session in (kept, doomed):
        await sqlite_store.add_messages(
            session_id=session.id,
            owner=OWNER,
            messages=[NewMessage(Role.USER, "a"), NewMessage(Role.USER, "b")],
            now=clock.now(),
        )
        run, _ = await sqlite_store.create_run(
            factory.run_record(session.id),
            owner=OWNER,
            if_busy=IfBusy.ENQUEUE,
            now=clock.now(),
            messages=[(Role.USER, "for the run", {})],
        )
        runs.append(run.id)
        await _finish(sqlite_store, factory, run.id)
        clock.advance(1)
    assert _count(sqlite_store, REFS) == 6
    if path == "run":
        await sqlite_store.delete_run(runs[1], owner=OWNER)
        assert _count(sqlite_store, REFS) == 5
    elif path == "session":
        await sqlite_store.delete_session(doomed.id, owner=OWNER)
        assert _count(sqlite_store, REFS) == 3
    else:
        for session_id in await sqlite_store.owner_session_ids(OWNER):
            await sqlite_store.delete_session(session_id, owner=None)
        await sqlite_store.erase_owner_data(OWNER)
        assert _count(sqlite_store, REFS) == 0
    assert _count(sqlite_store, ORPHANS) == 0
    events = await sqlite_store.list_events(session_id=kept.id, limit=1000)
    messages = [e.data["message"] for e in events if e.type is EventType.MESSAGE_ADDED]
    assert [m["content"] for m in messages] == (
        [] if path == "owner" else ["a", "b", "for the run"]
    )


#: A message and its event as schema 14 wrote them: the event with a full copy.
_OLD_COPY = (
    '{"message":{"id":"m1","session_id":"s1","seq":1,"role":"user","content":"old ü\\n",'
    '"created_at":"1970-01-01T00:00:01Z","run_id":null,"metadata":{"k":[1,2.5]},'
    '"item":null,"removed_at":null}}'
)
ROWS_AT_14 = (
    "INSERT INTO sessions (id, owner, status, ttl_seconds, created_at, updated_at,"
    " last_activity_at, message_count) VALUES ('s1', 'alice', 'active', NULL, 0, 0, 0, 1)",
    "INSERT INTO messages (id, session_id, seq, role, content, metadata, created_at)"
    " VALUES ('m1', 's1', 1, 'user', 'old ü\n', '{\"k\":[1,2.5]}', 1000000)",
    "INSERT INTO events (id, type, owner, session_id, run_id, data, created_at)"
    f" VALUES (1, 'message.added', 'alice', 's1', NULL, '{_OLD_COPY}', 1000000)",
)


async def test_a_file_from_schema_14_reads_its_full_copies_beside_new_references(
    tmp_path: Path, clock: ManualClock
) -> None:
    path = tmp_path / "v14.db"
    _at_version_before(path, "message_events_by_reference", ROWS_AT_14)
    store = open_store(str(path))
    assert isinstance(store, SqlStore)
    try:
        [new] = await store.add_messages(
            session_id="s1", owner="alice", messages=[NewMessage(Role.TOOL, "new")], now=clock.now()
        )
        events = await store.list_events(session_id="s1")
        dump = store.database.dump_json
        assert [dump(e.data) for e in events] == [_OLD_COPY, dump({"message": to_data(new)})]
        archive = await store.export_session("s1", owner=None)
        assert [dump(e["data"]) for e in archive["events"]] == [dump(e.data) for e in events]
    finally:
        await store.close()
    with sqlite3.connect(path) as conn:
        stored = [d for (d,) in conn.execute("SELECT data FROM events ORDER BY id")]
    assert stored == [_OLD_COPY, '{"message_seq":2}']
