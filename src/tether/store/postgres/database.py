"""PostgreSQL connection handling: a psycopg 3 async pool, named queries, NOTIFY, migrations.

Connections are autocommit; a write transaction is a pipeline on one pooled connection, whose
statements up to its Sync are one implicit transaction (no BEGIN, no COMMIT: the Sync commits;
a failure sends ROLLBACK before it). Its events are appended last, just before the Sync, after
taking a transaction-level advisory lock per session (tether_lock_key, computed by the server;
keys sorted, so two writers never wait on each other in a cycle): event ids of a session are
therefore allocated, and committed, in lock order. Its change topics are sent with pg_notify
in the same transaction, so other nodes hear of them at commit. A claim and a finish append
their run event inside their own statement (tether_run_event, under the same lock), committed
on its own (commit_one).

A pooled connection found dead when a transaction starts (the server restarted) is replaced
transparently, and so is one a read statement fails on; work in flight on a connection that dies
fails with StoreUnavailable. The pool opens on first use, on the event loop using the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import secrets
import select
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from itertools import chain
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import psycopg
from psycopg import AsyncCursor
from psycopg import errors as pg_errors
from psycopg.pq import ExecStatus
from psycopg.rows import dict_row
from psycopg.types.string import TextLoader
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from tether.core.errors import StoreError, StoreUnavailable, UsageError
from tether.store.changes import ChangeFeed
from tether.store.factory import redact_url
from tether.store.migrate import load_migrations, pending
from tether.store.postgres.listener import Listener, notify_payloads
from tether.store.sql.collector import uncollected
from tether.store.sql.database import Events, Row
from tether.store.sql.queries import load_queries
from tether.store.sql.text import NUL_REFUSED, check_json, check_values, not_unicode

_PACKAGE = "tether.store.postgres"
_QUERIES = load_queries("postgres")
T = TypeVar("T")
#: pg_advisory_lock(int, int) key serialising migrations across nodes (its own key space).
_MIGRATION_LOCK = (0x7E7E, 1)
#: tether's own URL parameters (the rest go to libpq), with their defaults.
_POOL_OPTIONS = {"pool_min_size": 1, "pool_max_size": 10, "pool_timeout": 10.0}
#: SQLSTATEs of losing a race with a concurrent transaction: serialization failure, deadlock,
#: unique violation (e.g. two claims into one session, refused by the one-active-run index).
_RACES = frozenset({"40001", "40P01", "23505"})
#: json.dumps, compact, without a new encoder per call.
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
#: Statements left for later that go into the commit's statement at most (the ones before
#: them go on their own, in the same round trip): a few statement texts, few parameters.
_MAX_WITH = 4
#: A %(name)s (or %(name)b) parameter of a statement.
_PLACEHOLDER = re.compile(r"%\((\w+)\)([sb])")

AsyncConn = psycopg.AsyncConnection[dict[str, Any]]


class ConcurrentUpdate(StoreUnavailable):
    """A concurrent transaction got in the way (deadlock, serialization failure, a racing
    insert, a schema change under a prepared statement); the whole operation can be retried."""

    code = "concurrent_update"


class _Reader:
    """Reads: each statement on a pooled autocommit connection, so it is its own snapshot."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    async def one(self, query: str, /, **params: Any) -> Row | None:
        rows = await self._db.fetch(_QUERIES[query], params)
        return rows[0] if rows else None

    async def all(self, query: str, /, **params: Any) -> list[Row]:
        return await self._db.fetch(_QUERIES[query], params)

    async def records(
        self, query: str, decode: Callable[[Iterable[Any]], list[T]], /, **params: Any
    ) -> list[T]:
        rows = await self._db.fetch(_QUERIES[query], params)
        return uncollected(lambda: decode(row.values() for row in rows))

    async def batch(self, calls: list[tuple[str, dict[str, Any]]], /) -> list[list[Row]]:
        """The reads in one round trip, on one connection (each its own snapshot)."""
        return await self._db.fetch_many([(_QUERIES[query], params) for query, params in calls])


class _Tx:
    """One write transaction on one connection: a pipeline of the autocommit connection, whose
    statements up to its Sync are one implicit transaction that the Sync commits (no BEGIN, no
    COMMIT). Results are read with flush requests, which leave the transaction open."""

    def __init__(self, db: PostgresDatabase, pool: AsyncConnectionPool[AsyncConn]) -> None:
        self._db = db
        self._pool = pool
        self.conn: AsyncConn | None = None
        self.topics: list[str] = []
        self.committed: list[Callable[[], None]] = []
        self._events: list[Events] = []
        self._later: list[tuple[str, dict[str, Any]]] = []
        self._pipeline: contextlib.AsyncExitStack | None = None

    async def _begun(self) -> AsyncConn:
        """The transaction's connection, in its pipeline."""
        if self.conn is None:
            self.conn = await self._db.idle_connection(self._pool)
            self._pipeline = contextlib.AsyncExitStack()
            await self._pipeline.enter_async_context(self.conn.pipeline())
        return self.conn

    async def _execute(self, query: str, params: dict[str, Any]) -> AsyncCursor[Row]:
        return await (await self._begun()).execute(_QUERIES[query], params)

    async def one(self, query: str, /, **params: Any) -> Row | None:
        rows = await _rows(await self._execute(query, params))
        return rows[0] if rows else None

    async def all(self, query: str, /, **params: Any) -> list[Row]:
        return await _rows(await self._execute(query, params))

    async def records(
        self, query: str, decode: Callable[[Iterable[Any]], list[T]], /, **params: Any
    ) -> list[T]:
        rows = await self.all(query, **params)
        return uncollected(lambda: decode(row.values() for row in rows))

    async def run(self, query: str, /, **params: Any) -> int:
        cur = await self._execute(query, params)
        await _rows(cur)
        return cur.rowcount

    async def batch(self, calls: list[tuple[str, dict[str, Any]]], /) -> list[list[Row]]:
        """The statements in one round trip."""
        cursors = [await self._execute(query, params) for query, params in calls]
        return [await _rows(cur) for cur in cursors]

    async def many(self, query: str, rows: list[dict[str, Any]], /) -> None:
        async with (await self._begun()).cursor() as cur:
            await cur.executemany(_QUERIES[query], rows)

    async def later(self, query: str, /, **params: Any) -> None:
        self._later.append((_QUERIES[query], params))

    async def insert_rows(self, query: str, rows: list[tuple[Any, ...]], /, **params: Any) -> None:
        check_values(chain.from_iterable(rows))  # (in binary arrays, psycopg does not)
        columns = zip(*rows, strict=True)
        params.update({f"rows_{n}": list(values) for n, values in enumerate(columns)})
        await self._execute(query, params)

    async def append_events(self, events: Events, /) -> None:
        self._events.append(events)

    def publish(self, *topics: str) -> None:
        self.topics.extend(topics)

    def after_commit(self, action: Callable[[], None]) -> None:
        self.committed.append(action)

    async def commit(self, source: str) -> None:
        """The statements left for later, the events under their sessions' locks with the
        notifications (one statement), and the Sync that commits: one round trip."""
        if self.conn is None and not (self._later or self._events or self.topics):
            return  # nothing was written
        conn = await self._begun()
        payloads = notify_payloads(source, self.topics) if self.topics else []
        if self._events:
            groups = self._events
            locks = {g.session_id or f"owner:{g.owner}" for g in groups}
            params = {
                "events": _dumps(
                    [
                        [g.type, g.owner, g.session_id, g.run_id, g.created_at]
                        for g in groups
                        for _ in g.data
                    ]
                ),
                "data": f"[{','.join(text for g in groups for text in g.data)}]",  # JSON texts
                "locks": _dumps(list(locks)),
                "payloads": _dumps(payloads),
            }
            last = _QUERIES["append_events"]
        elif payloads:
            last, params = _QUERIES["notify"], {"payloads": _dumps(payloads)}
        else:
            last, params = "SELECT 1", {}
        cut = max(0, len(self._later) - _MAX_WITH)
        for sql, values in self._later[:cut]:
            await conn.execute(sql, values)
        await conn.execute(*_with_later(self._later[cut:], last, params))
        pipeline, self._pipeline = self._pipeline, None
        assert pipeline is not None
        try:
            await pipeline.aclose()  # an error here: the server rolled back at the Sync
        except BaseException as exc:
            if not isinstance(exc, psycopg.Error):  # cancelled: in an unknown state
                await conn.close()
            raise

    async def abandon(self, exc: BaseException) -> None:
        """Roll back after exc. A statement the server refused aborted the transaction
        already; otherwise ROLLBACK goes before the Sync. A connection in an unknown state
        (cancelled while it talked to the server) is closed, which rolls back too."""
        conn, pipeline, self._pipeline = self.conn, self._pipeline, None
        if conn is None or pipeline is None or conn.broken:
            return
        if not isinstance(exc, Exception):
            await conn.close()
            return
        try:
            if not (isinstance(exc, psycopg.Error) and exc.sqlstate):
                await conn.execute("ROLLBACK")
            await pipeline.__aexit__(type(exc), exc, exc.__traceback__)
        except BaseException:
            await conn.close()
            raise


class PostgresDatabase:
    """A tether database in PostgreSQL, shared by any number of processes and machines."""

    #: The pool and the listener belong to the event loop that opened them.
    any_loop = False
    message_refs = False

    def __init__(self, url: str, *, migrate: bool = True) -> None:
        self._conninfo, options = _split_url(url)
        self.location = redact_url(url)
        self.changes = ChangeFeed()
        #: This store's name in its notifications (its listener skips them: it publishes its
        #: own topics itself, right after its commits).
        self.source = secrets.token_hex(6)
        try:
            self._min_size = int(options["pool_min_size"])
            self.max_size = int(options["pool_max_size"])
            self._timeout = float(options["pool_timeout"])
        except ValueError as exc:
            raise UsageError(f"invalid pool option in the database URL: {exc}") from exc
        if not 1 <= self._min_size <= self.max_size or self._timeout <= 0:
            raise UsageError(
                "the database URL needs 1 <= pool_min_size <= pool_max_size and pool_timeout > 0"
            )
        self._pool: AsyncConnectionPool[AsyncConn] | None = None
        self._opening = asyncio.Lock()
        self._listener = Listener(self._conninfo, self.changes, self.source)
        self._listening: asyncio.Task[None] | None = None
        self._closed = False
        if migrate:
            self.migrate()

    # -- Database protocol ---------------------------------------------------------------------

    @asynccontextmanager
    async def write(self) -> AsyncIterator[_Tx]:
        pool = await self._open()
        tx = _Tx(self, pool)
        try:
            try:
                yield tx
                await tx.commit(self.source)
            except BaseException as exc:
                await tx.abandon(exc)
                if isinstance(exc, UnicodeEncodeError):
                    raise not_unicode(exc) from exc
                if isinstance(exc, psycopg.Error):
                    if _stale_plan(exc) and tx.conn is not None:
                        await tx.conn.close()
                    raise _store_error(exc, self.location) from exc
                raise
        finally:
            if tx.conn is not None:
                await pool.putconn(tx.conn)
        if tx.topics:
            self.changes.publish(tx.topics)
        for action in tx.committed:
            action()

    @asynccontextmanager
    async def read(self) -> AsyncIterator[_Reader]:
        await self._open()
        yield _Reader(self)

    def append_message(self, message: dict[str, Any], owner: str | None) -> str | None:
        """None: an append is a pipelined transaction here (the general path)."""
        return None

    def dump_json(self, value: Any) -> str | None:
        if value is None:
            return None
        return check_json(_dumps(value))

    def load_json(self, column: Any) -> Any:
        return None if column is None else json.loads(column)

    def is_unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, pg_errors.UniqueViolation) or isinstance(
            exc.__cause__, pg_errors.UniqueViolation
        )

    async def schema_version(self) -> int:
        rows = await self.fetch("SELECT COALESCE(MAX(version), 0) AS v FROM schema_version", {})
        return int(rows[0]["v"])

    async def close(self) -> None:
        self._closed = True
        if self._listening is not None:
            self._listening.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listening
            self._listening = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    # -- statements ----------------------------------------------------------------------------

    async def fetch(self, sql: str, params: dict[str, Any]) -> list[Row]:
        """Run a read statement; retried on another connection when its connection was dead."""
        (rows,) = await self.fetch_many([(sql, params)])
        return rows

    async def write_one(self, query: str, /, **params: Any) -> Row | None:
        """One write statement, committed on its own (autocommit: no BEGIN, no COMMIT); run
        again on another connection when its connection was dead, so it must be idempotent."""
        rows = await self.fetch_many([(_QUERIES[query], params)])
        return rows[0][0] if rows[0] else None

    async def commit_one(self, query: str, /, **params: Any) -> list[Row]:
        """One write statement (with the events it appends itself), committed on its own
        (autocommit): its rows. As a transaction's: a dead idle connection is replaced first,
        while a statement in flight when its connection dies fails (it may have committed)."""
        pool = await self._open()
        conn: AsyncConn | None = None
        try:
            conn = await self.idle_connection(pool)
            cur = await conn.execute(_QUERIES[query], params)
            return list(await cur.fetchall()) if _has_rows(cur) else []
        except UnicodeEncodeError as exc:
            raise not_unicode(exc) from exc
        except psycopg.Error as exc:
            if _stale_plan(exc) and conn is not None:
                await conn.close()
            raise _store_error(exc, self.location) from exc
        finally:
            if conn is not None:
                await pool.putconn(conn)

    async def fetch_many(self, statements: list[tuple[str, dict[str, Any]]]) -> list[list[Row]]:
        """Run statements in one round trip (one implicit transaction, each statement its own
        snapshot); every one's rows. Retried on another connection when its connection was
        dead."""
        pool = await self._open()
        for attempt in range(self.max_size + 1):
            conn = await self.getconn(pool)
            try:
                cursors = await _pipelined(conn, statements)
                return [list(await cur.fetchall()) if _has_rows(cur) else [] for cur in cursors]
            except UnicodeEncodeError as exc:
                raise not_unicode(exc) from exc
            except psycopg.Error as exc:
                if _stale_plan(exc):
                    await conn.close()
                if not ((conn.broken or _stale_plan(exc)) and attempt < self.max_size):
                    raise _store_error(exc, self.location) from exc
            finally:
                await pool.putconn(conn)
        raise AssertionError("unreachable")

    async def idle_connection(self, pool: AsyncConnectionPool[AsyncConn]) -> AsyncConn:
        """A pooled connection for a transaction. One with something to read while idle (the
        server may have closed it) is tried first: a dead one is replaced, while a statement
        in flight when its connection dies fails."""
        for attempt in range(self.max_size + 1):
            conn = await self.getconn(pool)
            if _quiet(conn):
                return conn
            try:
                await conn.execute("SELECT 1")
            except psycopg.Error:
                await pool.putconn(conn)
                if not (conn.broken and attempt < self.max_size):
                    raise
                continue
            return conn
        raise AssertionError("unreachable")

    async def getconn(self, pool: AsyncConnectionPool[AsyncConn]) -> AsyncConn:
        try:
            return await pool.getconn()
        except PoolTimeout as exc:
            raise StoreUnavailable(
                f"{self.location}: no database connection within {self._timeout:g} s ({exc})"
            ) from exc

    async def _open(self) -> AsyncConnectionPool[AsyncConn]:
        if self._closed:
            raise StoreError(f"the store {self.location} is closed")
        if self._pool is not None:
            return self._pool
        async with self._opening:
            if self._pool is None:
                pool: AsyncConnectionPool[AsyncConn] = AsyncConnectionPool(
                    self._conninfo,
                    open=False,
                    min_size=self._min_size,
                    max_size=self.max_size,
                    timeout=self._timeout,
                    kwargs={"autocommit": True, "row_factory": dict_row},
                    configure=_configure,
                    name="tether",
                )
                await pool.open()
                self._listening = asyncio.create_task(self._listener.run(), name="tether listen")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._listener.ready.wait(), self._timeout)
                self._pool = pool
        return self._pool

    # -- migrations ----------------------------------------------------------------------------

    def migrate(self) -> tuple[int, int]:
        """Bring the database to the newest schema; (version before, version after). Safe to
        run from many nodes at once: they queue on an advisory lock."""
        migrations = load_migrations(_PACKAGE)
        try:
            with psycopg.connect(self._conninfo, autocommit=True) as conn:
                before = _current_version(conn)
                if not pending(migrations, before, self.location):
                    return before, before
                conn.execute("SELECT pg_advisory_lock(%s, %s)", _MIGRATION_LOCK)
                try:
                    conn.execute(
                        "CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY,"
                        " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
                    )
                    before = _current_version(conn)  # another node may have migrated meanwhile
                    todo = pending(migrations, before, self.location)
                    for migration in todo:
                        with conn.transaction():
                            conn.execute(migration.sql.encode())
                            conn.execute(
                                "INSERT INTO schema_version (version, name) VALUES (%s, %s)",
                                (migration.version, migration.name),
                            )
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s, %s)", _MIGRATION_LOCK)
        except psycopg.Error as exc:
            raise _store_error(exc, self.location) from exc
        return before, todo[-1].version if todo else before


async def _configure(conn: AsyncConn) -> None:
    conn.adapters.register_loader("jsonb", TextLoader)  # JSON columns arrive as text
    conn.adapters.register_loader("json", TextLoader)


async def _pipelined(
    conn: AsyncConn, statements: list[tuple[str, dict[str, Any]]]
) -> list[AsyncCursor[Row]]:
    """Send statements in one round trip (a single one goes without a pipeline)."""
    if len(statements) == 1:
        sql, params = statements[0]
        return [await conn.execute(sql, params)]
    async with conn.pipeline():
        return [await conn.execute(sql, params) for sql, params in statements]


def _with_later(
    later: list[tuple[str, dict[str, Any]]], last: str, params: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """One statement: the statements left for later as data-modifying WITH clauses of the last
    (each runs once, to completion, in the last one's snapshot; their parameters renamed
    l<n>_name so none collide)."""
    clauses = []
    params = dict(params)
    for n, (sql, values) in enumerate(later):
        clauses.append(_clause(n, sql))
        params.update({f"l{n}_{name}": value for name, value in values.items()})
    return (f"WITH {', '.join(clauses)}\n{last}" if clauses else last), params


@functools.lru_cache(maxsize=256)
def _clause(n: int, sql: str) -> str:
    """sql as the WITH clause l<n>, its parameters renamed l<n>_name (a few texts, cached)."""
    renamed = _PLACEHOLDER.sub(f"%(l{n}_" + r"\1)\2", sql)
    return f"l{n} AS ({renamed})"


async def _rows(cur: AsyncCursor[Row]) -> list[Row]:
    """The rows of a statement sent in a pipeline ([] if it returns none): fetching them
    sends a flush request, which leaves the pipeline's transaction open."""
    try:
        return list(await cur.fetchall())
    except psycopg.ProgrammingError as exc:
        if exc.sqlstate is not None:  # the server's error, not "no rows to fetch"
            raise
        return []


def _has_rows(cur: AsyncCursor[Row]) -> bool:
    """Whether the statement returned rows (without building cur.description)."""
    result = cur.pgresult
    return result is not None and result.status == ExecStatus.TUPLES_OK


def _quiet(conn: AsyncConn) -> bool:
    """Nothing to read on an idle connection (a closed one reads as its end). poll, not
    select: a server with many open sockets has descriptors past select's limit."""
    if not hasattr(select, "poll"):  # Windows: no poll; BEGIN goes alone, as before
        return False
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    return not poller.poll(0)


def _stale_plan(exc: psycopg.Error) -> bool:
    """A prepared statement outlived a schema change (another node migrated): the connection
    is closed, and the statement works again on a fresh one."""
    return exc.sqlstate == "0A000" and "cached plan" in str(exc)


def _store_error(exc: psycopg.Error, location: str) -> StoreError | UsageError:
    """tether's error for a psycopg error."""
    if isinstance(exc, psycopg.DataError) and exc.sqlstate is None and "NUL (0x00)" in str(exc):
        return UsageError(NUL_REFUSED)  # psycopg's own refusal to send it
    if exc.sqlstate in _RACES or _stale_plan(exc):
        return ConcurrentUpdate(f"{location}: {exc.diag.message_primary or exc}")
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        reason = " ".join(str(exc).split())  # libpq's messages span several lines
        return StoreUnavailable(f"{location}: the database connection failed: {reason}")
    return StoreError(f"{location}: {exc}")


def _current_version(conn: psycopg.Connection[Any]) -> int:
    exists = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
    if not (exists and exists[0]):
        return 0
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def _split_url(url: str) -> tuple[str, dict[str, Any]]:
    """libpq's URL (tether's pool_* parameters removed, timeouts defaulted) and those options."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- parsing the port is what raises on a bad one
    except ValueError as exc:
        raise UsageError(f"invalid PostgreSQL URL {redact_url(url)!r}: {exc}") from exc
    query = parse_qsl(parts.query, keep_blank_values=True)
    options: dict[str, Any] = dict(_POOL_OPTIONS)
    rest = []
    for name, value in query:
        if name in _POOL_OPTIONS:
            options[name] = value
        else:
            rest.append((name, value))
    names = {name for name, _ in rest}
    if "connect_timeout" not in names:
        rest.append(("connect_timeout", "5"))
    if "application_name" not in names:
        rest.append(("application_name", "tether"))
    query_text = urlencode(rest, quote_via=quote)
    return f"{parts.scheme}://{parts.netloc}{parts.path}?{query_text}", options
