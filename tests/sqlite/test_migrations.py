"""Migrations of the SQLite file: an empty file is brought to the latest schema, an older schema
is upgraded with its data, a newer one is refused, and nothing is applied twice."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import tether
from tests.support import (
    ROWS_BEFORE_CONVERSATION_CORE,
    SCHEMA_1_ROWS,
    SCHEMA_3_DELETED_RUN,
    before_conversation_core,
    check_conversation_core,
    check_recounted,
)
from tether.core.errors import SchemaTooNew, StoreError, UsageError
from tether.core.memory import MemoryScope
from tether.core.message import Role
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus
from tether.store.factory import open_store
from tether.store.migrate import load_migrations
from tether.store.sqlite.database import SqliteDatabase, _statements
from tether.store.sqlite.store import SqliteStore

MIGRATIONS = load_migrations("tether.store.sqlite")
LATEST = MIGRATIONS[-1].version


def _versions(path: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as conn:
        return [
            tuple(r)
            for r in conn.execute("SELECT version, name FROM schema_version ORDER BY version")
        ]


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {r[0] for r in rows}


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, LATEST + 1))
    assert MIGRATIONS[0].name == "initial"


async def test_an_empty_file_is_migrated_to_the_latest_version(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()  # a file at schema version 0
    assert path.exists()
    store = SqliteStore(path)
    try:
        assert await store.schema_version() == LATEST
    finally:
        await store.close()
    assert _versions(path) == [(m.version, m.name) for m in MIGRATIONS]
    assert {"sessions", "runs", "steps", "messages", "memory", "events"} <= _tables(path)


async def test_a_missing_file_is_created(tmp_path: Path) -> None:
    store = open_store(tmp_path / "new.db")
    try:
        assert await store.schema_version() == LATEST
    finally:
        await store.close()


def _mark_newer(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO schema_version (version, name, applied_at) VALUES (?, 'future', 'x')",
            (LATEST + 1,),
        )


@pytest.mark.parametrize("opener", ["SqliteStore", "open_store"])
async def test_a_newer_schema_is_refused_with_a_clear_message(tmp_path: Path, opener: str) -> None:
    path = tmp_path / "newer.db"
    await SqliteStore(path).close()
    _mark_newer(path)

    with pytest.raises(SchemaTooNew) as caught:
        SqliteStore(path) if opener == "SqliteStore" else open_store(str(path))

    message = str(caught.value)
    assert str(path) in message
    assert f"schema version {LATEST + 1}" in message
    assert f"newer than the {LATEST}" in message
    assert "upgrade tether" in message
    # Refusing did not touch the file.
    assert _versions(path)[-1] == (LATEST + 1, "future")


def test_a_newer_schema_only_file_is_refused(tmp_path: Path) -> None:
    """A schema_version table alone (no tables this tether knows) is still refused, not patched."""
    path = tmp_path / "bare.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " applied_at TEXT NOT NULL)"
        )
    _mark_newer(path)
    with pytest.raises(SchemaTooNew):
        SqliteStore(path)
    assert "sessions" not in _tables(path)


async def test_reopening_does_not_reapply_migrations(tmp_path: Path) -> None:
    path = tmp_path / "twice.db"
    await SqliteStore(path).close()
    with sqlite3.connect(path) as conn:
        applied = conn.execute("SELECT version, applied_at FROM schema_version").fetchall()
    for _ in range(2):
        store = SqliteStore(path)
        try:
            assert await store.schema_version() == LATEST
            assert isinstance(store.database, SqliteDatabase)
            assert store.database.migrate() == (LATEST, LATEST)  # nothing left to do
        finally:
            await store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version, applied_at FROM schema_version").fetchall() == applied


async def test_a_file_at_version_one_opens_at_the_latest_version_with_its_data(
    tmp_path: Path,
) -> None:
    """A database written by the first released schema (only migration 0001 applied), with the
    rows that tether wrote then."""
    path = tmp_path / "v1.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " applied_at TEXT NOT NULL)"
        )
        for statement in _statements(MIGRATIONS[0].sql):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version VALUES (1, 'initial', 'then')")
        for statement in SCHEMA_1_ROWS:
            conn.execute(statement)

    store = SqliteStore(path)
    try:
        assert await store.schema_version() == LATEST
        reread = await store.get_session("s1")
        assert reread is not None and reread.title == "from the old days"
        assert (reread.run_count, reread.external_key, reread.app) == (1, None, None)
        messages = await store.list_messages("s1")
        assert [(m.content, m.item, m.removed_at) for m in messages] == [
            ("still here?", None, None)
        ]
        stored_run = await store.get_run("r1")
        assert stored_run is not None
        assert (stored_run.goal, stored_run.status, stored_run.worker_id) == (
            "an old goal",
            RunStatus.RUNNING,
            "w",
        )
        assert stored_run.traceparent is None
        item = await store.get_memory(scope=MemoryScope.SESSION, scope_id="s1", key="python")
        assert item is not None and item.value == "3.9"
        events = await store.list_events(session_id="s1")
        assert [e.type for e in events] == ["session.created", "message.added"]
    finally:
        await store.close()
    assert [v for v, _ in _versions(path)] == list(range(1, LATEST + 1))


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not a sqlite database, not at all" * 100)
    with pytest.raises(StoreError, match=r"garbage\.db.*as a tether database"):
        SqliteStore(path)


async def test_version_four_recounts_sessions_whose_runs_were_deleted_before_it(
    tmp_path: Path,
) -> None:
    """Up to version 3 a deleted run stayed in its session's run count and usage."""
    path = tmp_path / "v3.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " applied_at TEXT NOT NULL)"
        )
        for migration in MIGRATIONS[:3]:
            for statement in _statements(migration.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_version VALUES (?, ?, 'then')",
                (migration.version, migration.name),
            )
        for statement in SCHEMA_3_DELETED_RUN:
            conn.execute(statement)
    store = SqliteStore(path)
    try:
        await check_recounted(store)
    finally:
        await store.close()


async def test_the_conversation_core_keeps_memory_and_messages_and_adds_the_app_scope(
    tmp_path: Path,
) -> None:
    """The conversation-core migration rebuilds the memory table (SQLite cannot widen a CHECK
    in place)."""
    path = tmp_path / "before.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " applied_at TEXT NOT NULL)"
        )
        for migration in before_conversation_core(MIGRATIONS):
            for statement in _statements(migration.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_version VALUES (?, ?, 'then')",
                (migration.version, migration.name),
            )
        for statement in ROWS_BEFORE_CONVERSATION_CORE:
            conn.execute(statement)
    store = SqliteStore(path)
    try:
        await check_conversation_core(store)
    finally:
        await store.close()
    with sqlite3.connect(path) as conn:
        indexes = {
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memory'"
            )
        }
    assert {"memory_by_session", "memory_by_update", "memory_by_source_run"} <= indexes


def _at_version_before(path: Path, name: str, rows: tuple[str, ...]) -> None:
    """A file with every migration before the one named applied, and rows written then."""
    names = [m.name for m in MIGRATIONS]
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " applied_at TEXT NOT NULL)"
        )
        for migration in MIGRATIONS[: names.index(name)]:
            for statement in _statements(migration.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_version VALUES (?, ?, 'then')",
                (migration.version, migration.name),
            )
        for statement in rows:
            conn.execute(statement)


def _activity(path: Path) -> dict[str, tuple[int, int]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT id, last_activity_at, activity_second FROM sessions")
        return {r[0]: (r[1], r[2]) for r in rows}


#: Sessions written before version 12: two active within one second (s1, then s2), one before
#: (with no TTL).
ROWS_BEFORE_LEAN_APPENDS = tuple(
    "INSERT INTO sessions (id, owner, status, ttl_seconds, created_at, updated_at,"
    f" last_activity_at) VALUES ('{sid}', 'alice', 'active', {ttl}, 0, 0, {at})"
    for sid, ttl, at in (
        ("s0", "NULL", 1_000_250_000),
        ("s1", 60, 5_000_100_000),
        ("s2", 60, 5_000_900_000),
    )
)


async def test_version_twelve_keys_session_activity_by_the_second_and_keeps_the_order(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v11.db"
    _at_version_before(path, "lean_appends", ROWS_BEFORE_LEAN_APPENDS)
    store = SqliteStore(path)
    try:
        assert await store.schema_version() == LATEST
        assert _activity(path) == {
            "s0": (1_000_250_000, 1_000),
            "s1": (5_000_100_000, 5_000),
            "s2": (5_000_900_000, 5_000),
        }
        now = datetime.fromtimestamp(5_001, UTC)
        page = await store.list_sessions(owner="alice", now=now)
        assert [s.id for s in page.data] == ["s2", "s1", "s0"]
        # The column follows every write of the time: a new session, and activity.
        await store.add_message(
            session_id="s0", owner=None, role=Role.USER, content="back", now=now
        )
        created = await store.create_session(
            Session(
                id="s3",
                owner="alice",
                title=None,
                status=SessionStatus.ACTIVE,
                created_at=now,
                updated_at=now,
                last_activity_at=now - timedelta(seconds=2.5),
            )
        )
        assert created.id == "s3"
        activity = _activity(path)
        assert activity["s0"] == (5_001_000_000, 5_001)
        assert activity["s3"] == (4_998_500_000, 4_998)
        page = await store.list_sessions(owner="alice", now=now)
        assert [s.id for s in page.data] == ["s0", "s2", "s1", "s3"]
        # Expiry stays exact: s1 expires at 5,060.1 s, s2 at 5,060.9 s.
        swept = await store.expire_sessions(now=datetime.fromtimestamp(5_060.5, UTC))
        assert [s.id for s in swept] == ["s1"]
    finally:
        await store.close()


#: Events written before version 12: five, of which the two newest were deleted since; and the
#: conversation they told, one message of it popped.
EVENTS_BEFORE_LEAN_APPENDS = (
    "INSERT INTO sessions (id, owner, status, created_at, updated_at, last_activity_at,"
    " message_count) VALUES ('s1', 'alice', 'active', 0, 0, 0, 3)",
    "INSERT INTO messages (id, session_id, seq, role, content, metadata, created_at, item)"
    " VALUES ('m1', 's1', 1, 'user', 'one', '{\"k\": 1}', 1, NULL)",
    "INSERT INTO messages (id, session_id, seq, role, content, created_at, item)"
    " VALUES ('m2', 's1', 2, 'assistant', '', 2, '{\"type\": \"note\"}')",
    "INSERT INTO messages (id, session_id, seq, role, content, created_at, removed_at)"
    " VALUES ('m3', 's1', 3, 'user', 'popped', 3, 4)",
    *(
        "INSERT INTO events (type, owner, session_id, data, created_at)"
        f" VALUES ('message.added', 'alice', 's1', '{{\"n\": {n}}}', {n})"
        for n in range(1, 6)
    ),
    "DELETE FROM events WHERE id > 3",
)


async def test_version_twelve_keeps_the_events_and_never_reuses_a_deleted_id(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v11.db"
    _at_version_before(path, "lean_appends", EVENTS_BEFORE_LEAN_APPENDS)
    store = SqliteStore(path)
    try:
        events = await store.list_events(session_id="s1")
        assert [(e.id, e.data, e.created_at.timestamp()) for e in events] == [
            (n, {"n": n}, n / 1_000_000) for n in (1, 2, 3)
        ]
        kept = await store.list_messages("s1", include_removed=True)
        assert [(m.id, m.seq, m.content, m.metadata, m.item, m.removed_at) for m in kept] == [
            ("m1", 1, "one", {"k": 1}, None, None),
            ("m2", 2, "", {}, {"type": "note"}, None),
            ("m3", 3, "popped", {}, None, datetime.fromtimestamp(4 / 1_000_000, UTC)),
        ]
        message = await store.add_message(
            session_id="s1", owner=None, role=Role.USER, content="next", now=datetime.now(UTC)
        )
        assert message.seq == 4
        added = await store.list_events(session_id="s1", after_id=3)
        assert [(e.id, e.data["message"]["id"]) for e in added] == [(6, message.id)]
    finally:
        await store.close()
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "events_autoincrement" not in tables
    assert {"events_by_session", "events_by_run", "events_ids_are_never_reused"} <= tables


#: Messages written before version 13, of every role (one popped).
MESSAGES_BEFORE_ROLE_CHECK = (
    "INSERT INTO sessions (id, owner, status, created_at, updated_at, last_activity_at,"
    " message_count) VALUES ('s1', 'alice', 'active', 0, 0, 0, 4)",
    *(
        "INSERT INTO messages (id, session_id, seq, role, content, created_at, removed_at)"
        f" VALUES ('m{seq}', 's1', {seq}, '{role}', 'said by {role}', {seq}, {removed})"
        for seq, role, removed in (
            (1, "system", "NULL"),
            (2, "user", "NULL"),
            (3, "assistant", 5),
            (4, "tool", "NULL"),
        )
    ),
)
ROLE_CHECK = "CHECK (role = 'user' OR role = 'assistant' OR role = 'system' OR role = 'tool')"


def _schema(path: Path) -> list[tuple[str, str, str | None]]:
    """Every table, index and trigger's text (but the runner's own table, which the helper
    above writes out differently)."""
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT type, name, sql FROM sqlite_schema WHERE name <> 'schema_version'"
            " ORDER BY type, name"
        ).fetchall()


def _refused_role(conn: sqlite3.Connection) -> str:
    """What the messages table says to a row with a role it does not know."""
    with pytest.raises(sqlite3.IntegrityError) as refused:
        conn.execute(
            "INSERT INTO messages (id, session_id, seq, role, content, created_at)"
            " VALUES ('bad', 's1', 99, 'robot', 'beep', 0)"
        )
    return str(refused.value)


async def test_version_thirteen_checks_a_role_without_a_list_in_place(tmp_path: Path) -> None:
    """The messages table's CHECK is edited in its schema text (no rebuild): a file upgraded
    from version 12 with messages ends with the schema of a new file, intact, with its rows,
    and every connection to it, one opened before the upgrade included, refuses a role it
    does not know; tether refuses one before any SQL, in words."""
    fresh, old = tmp_path / "fresh.db", tmp_path / "v12.db"
    await SqliteStore(fresh).close()
    _at_version_before(old, "role_check_without_a_list", MESSAGES_BEFORE_ROLE_CHECK)
    before = sqlite3.connect(old, isolation_level=None)
    assert "role IN ('user', 'assistant', 'system', 'tool')" in _refused_role(before)

    store = SqliteStore(old)
    try:
        assert await store.schema_version() == LATEST
        kept = await store.list_messages("s1", include_removed=True)
        assert [(m.id, m.role.value, m.content) for m in kept] == [
            (f"m{seq}", role, f"said by {role}")
            for seq, role in ((1, "system"), (2, "user"), (3, "assistant"), (4, "tool"))
        ]
        # The connection that migrated the file checks with the new text too (RESET).
        assert isinstance(store.database, SqliteDatabase)
        assert ROLE_CHECK[7:-1] in _refused_role(store.database._conn)
    finally:
        await store.close()

    assert _schema(old) == _schema(fresh)
    [(messages,)] = sqlite3.connect(fresh).execute(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'messages'"
    )
    assert ROLE_CHECK in messages and " IN (" not in messages
    for path in (fresh, old):
        with sqlite3.connect(path, isolation_level=None) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            assert conn.execute("PRAGMA writable_schema").fetchone() == (0,)
            assert ROLE_CHECK[7:-1] in _refused_role(conn)
    # The schema cookie moved on: a connection that read the old schema reads the new one.
    assert ROLE_CHECK[7:-1] in _refused_role(before)
    before.close()

    with tether.open(old, worker=False) as tt:
        session = tt.sessions.create(title="after")
        for add in (
            lambda: session.messages.add(role="robot", content="beep"),
            lambda: session.messages.add_many(
                [{"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"}]
            ),
        ):
            with pytest.raises(UsageError, match=r"role must be one of user, assistant, system"):
                add()
        assert session.messages.list() == []


def _refusing_schema_edits(action: int, name: str | None, value: str | None, *_: str | None) -> int:
    """An authorizer that refuses what SQLite in defensive mode refuses: editing sqlite_schema's
    rows by hand, here by refusing to turn writable_schema on (Python 3.11 cannot turn defensive
    mode on). Ordinary schema changes (a CREATE VIEW, a CREATE TABLE) go through, as there."""
    on = value is not None and value.upper() != "RESET"
    if action == sqlite3.SQLITE_PRAGMA and name == "writable_schema" and on:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


async def test_a_sqlite_that_refuses_schema_edits_opens_the_file_without_version_thirteen_s_edit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Version 13 is optional: where SQLite refuses to edit its schema text, the file keeps
    its IN (…) check (the same constraint), is recorded at the newest version, stays intact and
    opens; the log says what was skipped."""
    old = tmp_path / "v12.db"
    _at_version_before(old, "role_check_without_a_list", MESSAGES_BEFORE_ROLE_CHECK)
    database = SqliteDatabase(old, migrate=False)
    try:
        database._conn.set_authorizer(_refusing_schema_edits)
        assert database.migrate() == (12, LATEST)
        database._conn.set_authorizer(None)
        assert tuple(database._conn.execute("PRAGMA writable_schema").fetchone()) == (0,)
    finally:
        database.close_now()
    assert "schema change 0013 (role_check_without_a_list) skipped" in caplog.text
    with sqlite3.connect(old, isolation_level=None) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert "role IN ('user', 'assistant', 'system', 'tool')" in _refused_role(conn)
    store = SqliteStore(old)
    try:
        assert await store.schema_version() == LATEST
        assert len(await store.list_messages("s1", include_removed=True)) == 4
    finally:
        await store.close()
