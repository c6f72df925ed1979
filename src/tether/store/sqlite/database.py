"""SQLite connection handling: WAL, one writer, named queries, migrations on open.

Two connections per file: the writer, guarded by a lock, so there is exactly one writer in the
process, and a reader for everything outside write transactions (in memory, one connection does
both). Write transactions use BEGIN IMMEDIATE so writers in other processes queue on the file
lock instead of failing mid-transaction.

Statements run inline (no thread hop) as long as SQLite can run them at once; a single message
append runs its statements in one call (append_message) when nothing has to wait. When the file
is busy (another process holds its write lock), the statement is handed to a waiting thread that
retries it for up to ``BUSY_SECONDS``, so the event loop never blocks on the lock: other
requests, SSE heartbeats and lease renewals go on (reads on the reader connection, other writes
queued behind this one). A write that cannot get the lock in time fails with StoreUnavailable
(HTTP 503).

At durability ``full`` each COMMIT flushes the WAL (``synchronous=FULL``: the least latency for
one writer), unless the database is opened with ``group_commit`` (``tether serve`` and ``tether
worker`` do): then writes commit at ``synchronous=NORMAL`` and wait for a shared flush of the
WAL, off the loop (flush.py), so concurrent writers share flushes and the loop never waits for
the disk.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import cache, partial
from itertools import chain, count
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal, TypeVar

from tether.core.errors import StoreError, StoreUnavailable, UsageError
from tether.core.ids import new_id
from tether.store.changes import ChangeFeed
from tether.store.factory import check_durability
from tether.store.migrate import Migration, load_migrations, pending
from tether.store.sql.collector import uncollected
from tether.store.sql.database import Events, Row
from tether.store.sql.queries import load_queries
from tether.store.sql.rows import message_event_ref
from tether.store.sql.text import check_json, check_params, check_values, not_unicode
from tether.store.sqlite.flush import GroupCommit
from tether.store.sqlite.lock import ConnectionLock

T = TypeVar("T")
log = logging.getLogger("tether.store")

Durability = Literal["normal", "full"]
_PACKAGE = "tether.store.sqlite"
_QUERIES = load_queries("sqlite")
#: How long a statement waits for another process's lock before StoreUnavailable.
BUSY_SECONDS = 10.0
#: json.dumps with these options, without building an encoder on every call.
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
#: The most rows one statement of a batch insert takes: rows of up to 15 values stay below
#: the 999 parameters older SQLite builds allow a statement.
MAX_ROWS = 64
#: A :named parameter, and one (that or a ?) of a statement.
_NAMED = re.compile(r"(?<![:\w]):(\w+)")
_PARAMETER = re.compile(rf"{_NAMED.pattern}|\?")
#: What a statement may raise that SqliteDatabase.after turns into tether's errors.
_FAILURES = (sqlite3.Error, UnicodeEncodeError)


#: A string literal (left as it is) or a :named parameter.
_LITERAL_OR_NAMED = re.compile(r"'(?:[^']|'')*'|(?<![:\w]):(\w+)")
_Positional = tuple[str, Callable[[Mapping[str, Any]], tuple[Any, ...]]]


def _positional(sql: str, nulls: tuple[str, ...] = ()) -> _Positional:
    """sql with its :named parameters numbered (?1, ?2 …, in the order they first appear) but
    those of nulls, written NULL; and what takes the numbered ones' values out of a dict of
    them, in order. Bound by position, a value costs sqlite3 no name to look up (a str made and
    hashed for each), and a NULL written out no None to adapt (sqlite3 looks for an adapter
    for every None it binds: ~3,000 instructions)."""
    names = dict.fromkeys(m[1] for m in _LITERAL_OR_NAMED.finditer(sql) if m[1])
    kept = [name for name in names if name not in nulls]
    assert len(kept) > 1 and "?" not in sql, "two :named parameters or more, and no ?"

    def number(match: re.Match[str]) -> str:
        name = match[1]
        if not name:
            return match[0]
        return "NULL" if name in nulls else f"?{kept.index(name) + 1}"

    return _LITERAL_OR_NAMED.sub(number, sql), itemgetter(*kept)


#: The single append's statements (append_message), bound by position: the session's touch
#: without its RETURNING (whose rows SQLite gathers in a b-tree it makes and drops for the
#: statement: touched_session reads the changed row back for less); the message, in a form for
#: each of its run_id and item being None or not (index: run_id is None + 2 * item is None);
#: its event, in a form for each of its run_id being None or not.
_TOUCH = _positional(_QUERIES["touch_active_session"].partition("\nRETURNING ")[0])
_TOUCHED = _QUERIES["touched_session"]
_MESSAGE = [
    _positional(_QUERIES["insert_message"], nulls)
    for nulls in ((), ("run_id",), ("item",), ("run_id", "item"))
]
_EVENT = [_positional(_QUERIES["insert_event"], nulls) for nulls in ((), ("run_id",))]


class _Tx:
    """Named queries on one of the database's connections; topics are published after commit."""

    def __init__(self, db: SqliteDatabase, conn: sqlite3.Connection) -> None:
        self._db = db
        self._conn = conn
        self.topics: list[str] = []
        self.committed: list[Callable[[], None]] = []

    def _statement(self, query: str, params: dict[str, Any]) -> str:
        check_params(params)
        return _QUERIES[query]

    async def one(self, query: str, /, **params: Any) -> Row | None:
        sql, conn = self._statement(query, params), self._conn
        try:  # (db.call, inlined: the statements of every append run here)
            row: Row | None = conn.execute(sql, params).fetchone()
        except _FAILURES as exc:
            row = await self._db.after(
                exc, conn, lambda: conn.execute(sql, params).fetchone(), query
            )
        return row

    async def all(self, query: str, /, **params: Any) -> list[Row]:
        sql, conn = self._statement(query, params), self._conn
        rows: list[Row] = await self._db.call(
            conn, lambda: conn.execute(sql, params).fetchall(), query
        )
        return rows

    async def records(
        self, query: str, decode: Callable[[Iterable[Any]], list[T]], /, **params: Any
    ) -> list[T]:
        sql, conn = self._statement(query, params), self._conn

        def fetch() -> list[T]:
            cursor = conn.cursor()
            cursor.row_factory = None  # plain tuples
            rows = cursor.execute(sql, params)  # (waits for a busy file: collector untouched)
            # Every row fetched, then decoded: two loops each in its own code, up to a tenth
            # cheaper than decoding each row as the cursor steps to it.
            return uncollected(lambda: decode(rows.fetchall()))

        return await self._db.call(conn, fetch, query)

    async def batch(self, calls: list[tuple[str, dict[str, Any]]], /) -> list[list[Row]]:
        return [await self.all(query, **params) for query, params in calls]

    async def run(self, query: str, /, **params: Any) -> int:
        sql, conn = self._statement(query, params), self._conn
        try:  # (db.call, inlined)
            count: int = conn.execute(sql, params).rowcount
        except _FAILURES as exc:
            count = await self._db.after(
                exc, conn, lambda: conn.execute(sql, params).rowcount, query
            )
        return count

    async def many(self, query: str, rows: list[dict[str, Any]], /) -> None:
        for row in rows:
            check_params(row)
        sql, conn = _QUERIES[query], self._conn
        await self._db.call(conn, lambda: conn.executemany(sql, rows), query)

    async def later(self, query: str, /, **params: Any) -> None:
        sql, conn = self._statement(query, params), self._conn
        try:  # (db.call, inlined)
            conn.execute(sql, params)
        except _FAILURES as exc:
            await self._db.after(exc, conn, partial(conn.execute, sql, params), query)

    async def insert_rows(self, query: str, rows: list[tuple[Any, ...]], /, **params: Any) -> None:
        values = list(chain.from_iterable(rows))
        check_values(values)
        await self._insert(query, values, params)

    async def append_events(self, events: Events, /) -> None:
        # One writer at a time: ids are allocated in commit order already. The first event takes
        # the id after the highest ever deleted too (insert_event); the others follow it.
        type_, owner, session_id, run_id, created_at, data = events
        if not data:
            return
        shared = {
            "type": type_,
            "owner": owner,
            "session_id": session_id,
            "run_id": run_id,
            "created_at": created_at,
        }
        await self.run("insert_event", **shared, data=data[0])
        if len(data) > 1:  # (JSON texts: no NUL in them)
            await self._insert("insert_events", data[1:], shared)

    async def _insert(self, query: str, values: list[Any], params: dict[str, Any]) -> None:
        """Run the named INSERT … VALUES (row) for every row of values (the values the ? of
        each row take, one row after the other) beside params, in statements of at most
        MAX_ROWS rows: powers of two, so that whatever the batch sizes a query is prepared in
        a few forms only (and the cached statements are reused)."""
        _, names, width = _insert_form(query, 1)
        shared, conn = [params[name] for name in names], self._conn
        start, total = 0, len(values) // width
        while start < total:
            rows = min(MAX_ROWS, 1 << ((total - start).bit_length() - 1))
            bound = shared + values[start * width : (start + rows) * width]
            execute = partial(conn.execute, _insert_form(query, rows)[0], bound)
            await self._db.call(conn, execute, query)
            start += rows

    def publish(self, *topics: str) -> None:
        self.topics.extend(topics)

    def after_commit(self, action: Callable[[], None]) -> None:
        self.committed.append(action)


class _Write:
    """``async with db.write() as tx``: one transaction on the writer connection, under its
    lock."""

    __slots__ = ("_changes", "_db", "_tx")

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db
        self._tx = _Tx(db, db._conn)
        self._changes = 0

    async def __aenter__(self) -> _Tx:
        db = self._db
        if not db._lock.take():
            await db._lock.acquire()
        try:
            db._check_open()
            if db._group is not None and db._group.failed is not None:
                raise StoreUnavailable(db._group.failed)
            conn = db._conn
            try:  # (db.call, inlined: every write begins here)
                conn.execute("BEGIN IMMEDIATE")
            except _FAILURES as exc:
                await db.after(exc, conn, partial(conn.execute, "BEGIN IMMEDIATE"), "begin")
        except BaseException:
            db._abandon()
            raise
        if db._group is not None:
            self._changes = db._conn.total_changes
        return self._tx

    async def __aexit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        db, flushed = self._db, None
        try:
            if exc_type is not None:
                db._conn.rollback()
                return
            conn = db._conn
            try:
                try:  # (db.call, inlined)
                    conn.execute("COMMIT")
                except _FAILURES as exc:
                    await db.after(exc, conn, partial(conn.execute, "COMMIT"), "commit")
            except BaseException:
                db._conn.rollback()  # never leave the shared connection inside a transaction
                raise
            if db._group is not None:
                changed = db._conn.total_changes != self._changes
                flushed = db._group.committed(self._announce, changed=changed)
        finally:
            db._lock.release()
        if flushed is None:
            self._announce()
        else:
            await flushed

    def _announce(self) -> None:
        tx = self._tx
        if tx.topics:
            self._db.changes.publish(tx.topics)
        for action in tx.committed:
            action()


class _Read:
    """``async with db.read() as tx``: statements on the reader connection (which a write
    waiting for another process's lock does not hold up)."""

    __slots__ = ("_db",)

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    async def __aenter__(self) -> _Tx:
        db = self._db
        await db._read_lock.acquire()
        try:
            db._check_open()
        except BaseException:
            db._read_lock.release()
            raise
        return _Tx(db, db._reader)

    async def __aexit__(self, *_: object) -> None:
        self._db._read_lock.release()


class SqliteDatabase:
    """A tether database in one SQLite file (or in memory, for tests)."""

    #: One connection under a thread lock: usable from any thread and any event loop.
    any_loop = True
    message_refs = True

    def __init__(
        self,
        path: str | Path,
        *,
        durability: Durability = "normal",
        group_commit: bool = False,
        migrate: bool = True,
    ) -> None:
        check_durability(durability)
        self.location = str(path)
        self.durability: Durability = durability
        self.changes = ChangeFeed()
        self._lock = ConnectionLock()
        grouped = group_commit and durability == "full" and self.location != ":memory:"
        synchronous = "normal" if grouped else durability  # (the flushes are the group's)
        self._conn = _connect(self.location, synchronous)
        self._cursor = self._conn.cursor()  # (append_message's, under the lock)
        self._cursor.row_factory = None  # plain tuples
        self._group = GroupCommit(_wal_path(self._conn)) if grouped else None
        self._closed = False
        self._waits: ThreadPoolExecutor | None = None
        if migrate:
            self.migrate()
        if self.location == ":memory:":  # another connection would be another database
            self._reader, self._read_lock = self._conn, self._lock
        else:
            self._reader, self._read_lock = _connect(self.location, synchronous), ConnectionLock()

    @property
    def flushes(self) -> int:
        """How many flushes of the WAL group commit made (0 without group commit)."""
        return 0 if self._group is None else self._group.flushes

    # -- Database protocol ---------------------------------------------------------------------

    def write(self) -> _Write:
        """A write transaction (BEGIN IMMEDIATE … COMMIT); topics are published after commit."""
        return _Write(self)

    def read(self) -> _Read:
        """Statements on the reader connection, outside any write."""
        return _Read(self)

    async def write_one(self, query: str, /, **params: Any) -> Row | None:
        async with self.write() as tx:
            return await tx.one(query, **params)

    def append_message(self, message: dict[str, Any], owner: str | None) -> str | None:
        """The single append's statements in one call of the caller's thread, as a write
        transaction runs them but without its awaits, keyword dicts and closures, their
        parameters bound by position on a cursor kept for it: only when the writer is free (no
        group commit), the file not locked by another process, every value storable and the
        session active; else nothing is written and the general path waits or raises why."""
        if self._group is not None or not self._lock.take():
            return None
        conn, cursor = self._conn, self._cursor
        try:
            if self._closed:  # (under the lock: closed by another thread just now, maybe)
                return None  # (the general path raises StoreError)
            try:
                check_params(message)
                cursor.execute("BEGIN IMMEDIATE")
            except (UsageError, sqlite3.Error):
                if conn.in_transaction:
                    conn.rollback()
                return None  # (a NUL: the general path refuses it; busy: it waits, off the loop)
            try:
                session_id, now = message["session_id"], message["created_at"]
                touch = {
                    "id": session_id,
                    "owner": owner,
                    "now": now,
                    "add_messages": 1,
                    "add_runs": 0,
                }
                sql, values = _TOUCH
                if cursor.execute(sql, values(touch)).rowcount != 1:
                    conn.rollback()
                    return None  # (the general path says why: closed, expired, not found)
                row = cursor.execute(_TOUCHED, (session_id,)).fetchone()
                owned: str = row[0]
                seq: int = row[1]
                message["id"], message["seq"] = new_id(), seq
                form = (message["run_id"] is None) + 2 * (message["item"] is None)
                sql, values = _MESSAGE[form]
                cursor.execute(sql, values(message))
                event = {
                    "type": "message.added",
                    "owner": owned,
                    "session_id": session_id,
                    "run_id": message["run_id"],
                    "data": message_event_ref(seq),
                    "created_at": now,
                }
                sql, values = _EVENT[form & 1]
                cursor.execute(sql, values(event))
                cursor.execute("COMMIT")
            except BaseException as exc:
                conn.rollback()
                if isinstance(exc, UnicodeEncodeError):
                    raise not_unicode(exc) from exc
                if isinstance(exc, sqlite3.Error):
                    raise _store_error("append_message", exc) from exc
                raise
        finally:
            self._lock.release()
        return owned

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
        if self._group is not None and self._group.failed is not None:  # (health: 503)
            raise StoreUnavailable(self._group.failed)
        async with self.read():
            reader = self._reader
            return await self.call(reader, lambda: _current_version(reader), "schema version")

    async def close(self) -> None:
        await self._lock.acquire()
        try:
            if self._group is not None:
                await self._group.idle()  # the commits before it flushed and announced
            if self._read_lock is not self._lock:
                await self._read_lock.acquire()
                try:
                    self._close()
                finally:
                    self._read_lock.release()
            else:
                self._close()
        finally:
            self._lock.release()

    def close_now(self) -> None:
        """Close the connections (from synchronous code)."""
        with self._lock.hold():
            if self._read_lock is self._lock:
                self._close()
                return
            with self._read_lock.hold():
                self._close()

    # -- statements ----------------------------------------------------------------------------

    async def call(self, conn: sqlite3.Connection, statement: Callable[[], T], where: str) -> T:
        """statement() on conn (whose lock the caller holds): inline, or, when the file is
        busy, in a waiting thread (see the module docstring)."""
        try:
            return statement()
        except _FAILURES as exc:
            return await self.after(exc, conn, statement, where)

    async def after(
        self,
        exc: sqlite3.Error | UnicodeEncodeError,
        conn: sqlite3.Connection,
        statement: Callable[[], T],
        where: str,
    ) -> T:
        """What call makes of statement() once it raised exc: run again in a waiting thread
        when the file was busy, else raised as tether's error."""
        if isinstance(exc, UnicodeEncodeError):
            raise not_unicode(exc) from exc
        if not _is_busy(exc):
            raise _store_error(where, exc) from exc
        return await self._patiently(conn, statement, where)

    async def _patiently(
        self, conn: sqlite3.Connection, statement: Callable[[], T], where: str
    ) -> T:
        """statement() in the wait thread with a busy timeout. A cancellation meanwhile takes
        effect once the thread is done (at most BUSY_SECONDS): until then it uses the
        connection."""

        def wait() -> T:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_SECONDS * 1000)}")
            try:
                return statement()
            finally:
                conn.execute("PRAGMA busy_timeout = 0")

        if self._waits is None:
            self._waits = ThreadPoolExecutor(2, thread_name_prefix="tether-sqlite-wait")
        job = asyncio.wrap_future(self._waits.submit(wait))
        cancelled = False
        while not job.done():
            try:
                await asyncio.wait({job})  # (never cancels the job, nor raises its error)
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            job.exception()  # retrieved: it no longer matters to a cancelled caller
            raise asyncio.CancelledError
        try:
            return job.result()
        except sqlite3.Error as exc:
            raise _store_error(where, exc) from exc
        except UnicodeEncodeError as exc:
            raise not_unicode(exc) from exc

    def _abandon(self) -> None:
        """Give up a write that could not begin: no transaction left open, the lock freed."""
        try:
            if not self._closed and self._conn.in_transaction:
                self._conn.rollback()
        finally:
            self._lock.release()

    # -- migrations ----------------------------------------------------------------------------

    def migrate(self) -> tuple[int, int]:
        """Bring the file to the newest schema; (version before, version after)."""
        migrations = load_migrations(_PACKAGE)
        with self._lock.hold():
            self._conn.execute(f"PRAGMA busy_timeout = {int(BUSY_SECONDS * 1000)}")
            try:
                return self._migrate(migrations)
            finally:
                self._conn.execute("PRAGMA busy_timeout = 0")

    def _migrate(self, migrations: list[Migration]) -> tuple[int, int]:
        self._execute("BEGIN IMMEDIATE")
        try:
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            before = _current_version(self._conn)
            todo = pending(migrations, before, self.location)
            for migration in todo:
                if migration.optional:
                    self._try_optional(migration)
                else:
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
        if todo and self._group is not None:
            self._group.sync()
        return before, todo[-1].version if todo else before

    def _try_optional(self, migration: Migration) -> None:
        """Apply an optional migration, or, when SQLite refuses it, leave the schema as it was
        (the version is recorded all the same: it changes no meaning)."""
        self._conn.execute("SAVEPOINT optional_migration")
        try:
            for statement in _statements(migration.sql):
                self._conn.execute(statement)
        except sqlite3.DatabaseError as exc:
            self._conn.execute("ROLLBACK TO optional_migration")
            self._conn.execute("PRAGMA writable_schema = RESET")  # (if it was the edit refused)
            log.warning(
                "%s: schema change %04d (%s) skipped, SQLite refused it: %s",
                self.location,
                migration.version,
                migration.name,
                exc,
            )
        self._conn.execute("RELEASE optional_migration")

    # -- internals -----------------------------------------------------------------------------

    def _execute(self, sql: str) -> None:
        try:
            self._conn.execute(sql)
        except sqlite3.Error as exc:
            raise _store_error(self.location, exc) from exc

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._group is not None:  # (first: its descriptor of the WAL, before SQLite's)
                self._group.close()
            self._conn.close()
            if self._reader is not self._conn:
                self._reader.close()
            if self._waits is not None:
                self._waits.shutdown(wait=False)


def _is_busy(exc: sqlite3.Error) -> bool:
    """SQLITE_BUSY: another connection holds the lock this statement needs."""
    return exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY


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
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_SECONDS * 1000)}")  # opening waits
        if location != ":memory:":
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(f"{location}: could not switch the journal to WAL ({mode})")
        conn.execute(f"PRAGMA synchronous = {durability.upper()}")
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        conn.execute("PRAGMA busy_timeout = 0")  # statements wait off the loop (call)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot open {location} as a tether database: {exc}") from exc
    return conn


def _wal_path(conn: sqlite3.Connection) -> str:
    """The WAL file of conn's main database (SQLite names it after the path it resolved)."""
    for row in conn.execute("PRAGMA database_list").fetchall():
        if row[1] == "main":
            return f"{row[2]}-wal"
    raise StoreError("no main database on the connection")


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


@cache
def _insert_form(query: str, rows: int) -> tuple[str, tuple[str, ...], int]:
    """The named INSERT … VALUES (row) query with its row written rows times, every parameter
    numbered: its :named ones ?1, ?2 … (the same in every row), then each ?, row after row.
    Its text, the names in the order they are numbered, and how many ? a row has."""
    head, values, row = _QUERIES[query].rpartition("VALUES ")
    assert values and row.startswith("(") and row.endswith(")"), f"{query}: no VALUES (row)"
    names = tuple(dict.fromkeys(_NAMED.findall(row)))
    numbers = count(len(names) + 1)

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        return f"?{names.index(name) + 1 if name else next(numbers)}"

    text = ",".join(_PARAMETER.sub(number, row) for _ in range(rows))
    return f"{head}VALUES {text}", names, row.count("?")
