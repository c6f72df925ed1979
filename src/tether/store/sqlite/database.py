"""SQLite connection handling: WAL, one writer, named queries, migrations on open.

One connection per store, guarded by a lock, so there is exactly one writer in the process; write
transactions use BEGIN IMMEDIATE so writers in other processes queue on the file lock instead of
failing mid-transaction. Statements are short and run inline (no thread hop): a committed append
costs about as much as a bare INSERT + COMMIT.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from tether.core.errors import StoreError, StoreUnavailable, UsageError
from tether.store.changes import ChangeFeed
from tether.store.migrate import load_migrations, pending
from tether.store.sql.database import Row
from tether.store.sql.queries import load_queries
from tether.store.sql.text import check_json, check_params, not_unicode

Durability = Literal["normal", "full"]
_PACKAGE = "tether.store.sqlite"
_QUERIES = load_queries(_PACKAGE)
#: json.dumps with these options, without building an encoder on every call.
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


class _Tx:
    """Named queries on the shared connection; topics are published after commit."""

    def __init__(self, conn: sqlite3.Connection, location: str) -> None:
        self._conn = conn
        self._location = location
        self.topics: list[str] = []
        self.committed: list[Callable[[], None]] = []

    def _execute(self, query: str, params: dict[str, Any]) -> sqlite3.Cursor:
        check_params(params)
        try:
            return self._conn.execute(_QUERIES[query], params)
        except UnicodeEncodeError as exc:
            raise not_unicode(exc) from exc
        except sqlite3.Error as exc:
            raise _store_error(f"{self._location}: {query}", exc) from exc

    async def one(self, query: str, /, **params: Any) -> Row | None:
        row: Row | None = self._execute(query, params).fetchone()
        return row

    async def all(self, query: str, /, **params: Any) -> list[Row]:
        return self._execute(query, params).fetchall()

    async def run(self, query: str, /, **params: Any) -> int:
        return self._execute(query, params).rowcount

    async def many(self, query: str, rows: list[dict[str, Any]], /) -> None:
        for row in rows:
            check_params(row)
        try:
            self._conn.executemany(_QUERIES[query], rows)
        except UnicodeEncodeError as exc:
            raise not_unicode(exc) from exc
        except sqlite3.Error as exc:
            raise StoreError(f"{self._location}: {query}: {exc}") from exc

    async def append_events(self, events: list[dict[str, Any]], /) -> None:
        # One writer at a time: ids are allocated in commit order already.
        if len(events) == 1:
            self._execute("insert_event", events[0])
        else:
            await self.many("insert_event", events)

    def publish(self, *topics: str) -> None:
        self.topics.extend(topics)

    def after_commit(self, action: Callable[[], None]) -> None:
        self.committed.append(action)


class _Write:
    """``async with db.write() as tx``: one transaction under the connection lock."""

    __slots__ = ("_db", "_tx")

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db
        self._tx = _Tx(db._conn, db.location)

    async def __aenter__(self) -> _Tx:
        db = self._db
        db._lock.acquire()
        try:
            db._check_open()
            db._execute("BEGIN IMMEDIATE")
        except BaseException:
            db._lock.release()
            raise
        return self._tx

    async def __aexit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        db = self._db
        try:
            if exc_type is not None:
                db._conn.rollback()
                return
            try:
                db._execute("COMMIT")
            except BaseException:
                db._conn.rollback()  # never leave the shared connection inside a transaction
                raise
        finally:
            db._lock.release()
        if self._tx.topics:
            db.changes.publish(self._tx.topics)
        for action in self._tx.committed:
            action()


class _Read:
    """``async with db.read() as tx``: statements under the connection lock."""

    __slots__ = ("_db",)

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    async def __aenter__(self) -> _Tx:
        db = self._db
        db._lock.acquire()
        try:
            db._check_open()
        except BaseException:
            db._lock.release()
            raise
        return _Tx(db._conn, db.location)

    async def __aexit__(self, *_: object) -> None:
        self._db._lock.release()


class SqliteDatabase:
    """A tether database in one SQLite file (or in memory, for tests)."""

    def __init__(
        self, path: str | Path, *, durability: Durability = "normal", migrate: bool = True
    ) -> None:
        if durability not in ("normal", "full"):
            raise UsageError(f"durability must be 'normal' or 'full', not {durability!r}")
        self.location = str(path)
        self.durability: Durability = durability
        self.changes = ChangeFeed()
        self._lock = threading.Lock()
        self._conn = _connect(self.location, durability)
        self._closed = False
        if migrate:
            self.migrate()

    # -- Database protocol ---------------------------------------------------------------------

    def write(self) -> _Write:
        """A write transaction (BEGIN IMMEDIATE … COMMIT); topics are published after commit."""
        return _Write(self)

    def read(self) -> _Read:
        """Statements under the connection lock, outside any write."""
        return _Read(self)

    def dump_json(self, value: Any) -> str | None:
        if value is None:
            return None
        if type(value) is dict and not value:  # the most common value by far (no metadata)
            return "{}"
        return check_json(_encode(value))

    def load_json(self, column: Any) -> Any:
        if column is None:
            return None
        if column == "{}":  # the most common value by far (empty metadata)
            return {}
        return json.loads(column)

    def is_unique_violation(self, exc: BaseException) -> bool:
        cause = exc.__cause__ if isinstance(exc, StoreError) else exc
        return isinstance(cause, sqlite3.IntegrityError) and "UNIQUE" in str(cause)

    async def schema_version(self) -> int:
        with self._lock:
            return _current_version(self._conn)

    async def close(self) -> None:
        self.close_now()

    def close_now(self) -> None:
        """Close the connection (from synchronous code)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    # -- migrations ----------------------------------------------------------------------------

    def migrate(self) -> tuple[int, int]:
        """Bring the file to the newest schema; (version before, version after)."""
        migrations = load_migrations(_PACKAGE)
        with self._lock:
            self._execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_version ("
                    " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
                before = _current_version(self._conn)
                todo = pending(migrations, before, self.location)
                for migration in todo:
                    for statement in _statements(migration.sql):
                        self._conn.execute(statement)
                    self._conn.execute(
                        "INSERT INTO schema_version (version, name, applied_at)"
                        " VALUES (?, ?, datetime('now'))",
                        (migration.version, migration.name),
                    )
            except BaseException:
                self._conn.rollback()
                raise
            self._execute("COMMIT")
        return before, todo[-1].version if todo else before

    # -- internals -----------------------------------------------------------------------------

    def _execute(self, sql: str) -> None:
        try:
            self._conn.execute(sql)
        except sqlite3.Error as exc:
            raise _store_error(self.location, exc) from exc

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the store {self.location} is closed")


def _store_error(where: str, exc: sqlite3.Error) -> StoreError:
    """The error to raise for a failed statement: retryable when the file was busy."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        return StoreUnavailable(f"{where}: the database is busy ({text}); retry shortly")
    return StoreError(f"{where}: {text}")


def _connect(location: str, durability: Durability) -> sqlite3.Connection:
    if location != ":memory:":
        parent = Path(location).expanduser().resolve().parent
        if not parent.is_dir():
            raise UsageError(f"cannot open {location}: the folder {parent} does not exist")
    try:
        conn = sqlite3.connect(
            location, isolation_level=None, check_same_thread=False, cached_statements=512
        )
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout = 10000")
        if location != ":memory:":
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(f"{location}: could not switch the journal to WAL ({mode})")
        conn.execute(f"PRAGMA synchronous = {durability.upper()}")
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot open {location} as a tether database: {exc}") from exc
    return conn


def _current_version(conn: sqlite3.Connection) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if exists is None:
        return 0
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
    return int(row[0])


def _statements(script: str) -> list[str]:
    """Split a migration script into complete statements."""
    statements, buffer = [], ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip() and not all(
        ln.strip().startswith("--") or not ln.strip() for ln in buffer.splitlines()
    ):
        raise StoreError("a migration ends with an incomplete statement")
    return statements
