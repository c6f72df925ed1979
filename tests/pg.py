"""The PostgreSQL test server: reachability (skip, or fail under CI), a migrated template
database built once per test session, and a database like it per test (a clone, or a database
an earlier test used, emptied).

``TETHER_TEST_POSTGRES`` names the server (a URL of any existing database on it; default the
local CI server). Databases made here are named ``tether_t…`` and dropped afterwards.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

#: Clones prepared ahead, in as many threads.
SPARES = 2
#: Databases dropped at once. DROP DATABASE waits for a checkpoint (seconds on a busy server);
#: drops running together share one.
DROPPERS = 8
#: What a test could change in a database beyond its rows: a database whose answer differs from
#: the template's is dropped, not emptied and used again.
SCHEMA = """
SELECT md5(string_agg(x, E'\\n' ORDER BY x)) FROM (
  SELECT format('relation %s %s', relname, relkind) AS x FROM pg_class
    WHERE relnamespace = current_schema()::regnamespace
  UNION ALL SELECT format('column %s.%s %s %s %s', table_name, column_name, data_type,
                          is_nullable, column_default)
    FROM information_schema.columns WHERE table_schema = current_schema()
  UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = current_schema()
  UNION ALL SELECT format('constraint %s %s', conname, pg_get_constraintdef(oid))
    FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
  UNION ALL SELECT 'trigger ' || tgname FROM pg_trigger WHERE NOT tgisinternal
  UNION ALL SELECT 'function ' || oid::regprocedure::text FROM pg_proc
    WHERE pronamespace = current_schema()::regnamespace
  UNION ALL SELECT format('version %s %s', version, name) FROM schema_version
  UNION ALL SELECT 'setting ' || array_to_string(setconfig, ',') FROM pg_db_role_setting
    WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
) AS schema
"""
#: The tables whose rows a test writes: all but schema_version.
TABLES_SQL = """
SELECT string_agg(quote_ident(tablename), ', ' ORDER BY tablename) FROM pg_tables
WHERE schemaname = current_schema() AND tablename <> 'schema_version'
"""
ADMIN_URL = os.environ.get("TETHER_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def database_url(name: str) -> str:
    """The URL of database name on the test server. Its sessions commit without waiting for
    the WAL flush (a few ms per commit on a slow disk): nothing a test checks depends on
    surviving a crash of the server itself."""
    parts = urlsplit(ADMIN_URL)
    query = [*parse_qsl(parts.query), ("options", "-c synchronous_commit=off")]
    return urlunsplit(parts._replace(path=f"/{name}", query=urlencode(query, quote_via=quote)))


def admin(statement: sql.Composed | str) -> None:
    """Run one statement on the server, outside any transaction (CREATE/DROP DATABASE)."""
    with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
        conn.execute(statement)


def drop_database(name: str) -> None:
    admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def require_server() -> None:
    """Skip when no server answers, with the reason; under CI=true, fail instead."""
    try:
        with psycopg.connect(ADMIN_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        message = f"PostgreSQL is not reachable at {ADMIN_URL}: {exc}".strip()
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI=true: a missing server is a failure)", pytrace=False)
        pytest.skip(message)


class Databases:
    """Fresh, migrated databases cloned from one template.

    Cloning takes a fraction of a second, but dropping takes seconds (a checkpoint). So a
    clone is prepared in the background while a test runs, and after the test its database is
    emptied in the background and used again, unless the test changed more than rows (its
    schema, its settings): then it is dropped, by threads of their own. Whatever is left is
    dropped at the end.
    """

    def __init__(self, template: str) -> None:
        self.template = template
        self._counter = itertools.count(1)
        self._made: list[str] = []
        self._empty: set[str] = set()
        with psycopg.connect(database_url(template), autocommit=True) as conn:
            self._schema = _one(conn, SCHEMA)
            self._tables = _one(conn, TABLES_SQL)
        self._cloner = ThreadPoolExecutor(max_workers=SPARES, thread_name_prefix="pg-clone")
        self._dropper = ThreadPoolExecutor(max_workers=DROPPERS, thread_name_prefix="pg-drop")
        self._spares: deque[Future[str]] = deque()
        self._emptied: deque[str] = deque()
        self._emptying: list[Future[None]] = []
        self._lock = threading.Lock()

    def new_url(self) -> str:
        """A fresh clone of the template (or a database emptied back to one)."""
        with self._lock:
            name = self._emptied.popleft() if self._emptied else None
        if name is None:
            while len(self._spares) <= SPARES:
                self._spares.append(self._cloner.submit(self._clone))
            name = self._spares.popleft().result()
        self._made.append(name)
        return database_url(name)

    def empty_url(self) -> str:
        """A database with no schema at all (for migration tests)."""
        name = f"{self.template}_{next(self._counter)}"
        admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        self._made.append(name)
        self._empty.add(name)
        return database_url(name)

    def scratch(self) -> Callable[[], str]:
        """URLs for throwaway stores opened one after the other (each closed before the next is
        opened): one clone, emptied for each."""
        made: list[str] = []

        def url() -> str:
            if not made:
                made.append(self.new_url())
            else:
                with psycopg.connect(made[0], autocommit=True) as conn:
                    conn.execute(f"TRUNCATE {self._tables} RESTART IDENTITY")
            return made[0]

        return url

    def drop_made(self) -> None:
        """Empty this test's databases for the next tests, or drop them (in the background)."""
        while self._made:
            self._emptying.append(self._cloner.submit(self._empty_or_drop, self._made.pop()))

    def close(self) -> None:
        """Finish the background work and drop what is left."""
        self._made.extend(spare.result() for spare in self._spares)
        for emptying in self._emptying:
            emptying.result()
        self._made.extend(self._emptied)
        dropping = [self._dropper.submit(drop_database, name) for name in self._made]
        for done in dropping:
            done.result()
        self._cloner.shutdown()
        self._dropper.shutdown()

    def _clone(self) -> str:
        name = f"{self.template}_{next(self._counter)}"
        admin(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(self.template)
            )
        )
        return name

    def _empty_or_drop(self, name: str) -> None:
        """Rows gone and sequences restarted if the schema is the template's; else dropped."""
        if name not in self._empty:
            try:
                with psycopg.connect(database_url(name), autocommit=True) as conn:
                    conn.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    )
                    if _one(conn, SCHEMA) == self._schema:
                        conn.execute(f"TRUNCATE {self._tables} RESTART IDENTITY")
                        with self._lock:
                            self._emptied.append(name)
                        return
            except psycopg.Error:
                pass  # a test left it unreachable (no connections allowed, …): dropped below
        self._dropper.submit(drop_database, name).result()


def _one(conn: psycopg.Connection[tuple[str]], query: str) -> str:
    row = conn.execute(query).fetchone()
    assert row is not None
    return row[0]


def template_databases() -> Iterator[Databases]:
    """Build the template (schema migrated once); yield the cloner; drop everything after."""
    from tether.store.postgres.database import PostgresDatabase

    require_server()
    template = f"tether_t{os.getpid()}"
    drop_database(template)
    admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(template)))
    try:
        PostgresDatabase(database_url(template)).migrate()
        databases = Databases(template)
        try:
            yield databases
        finally:
            databases.close()
    finally:
        drop_database(template)
