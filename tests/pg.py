"""The PostgreSQL test server: reachability (skip, or fail under CI), a migrated template
database built once per test session, and a fresh clone of it per test.

``TETHER_TEST_POSTGRES`` names the server (a URL of any existing database on it; default the
local CI server). Databases made here are named ``tether_t…`` and dropped afterwards.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from tether.store.copy import TABLES as COPIED_TABLES

#: Every table of the schema but schema_version.
TABLES = ", ".join(table.name for table in COPIED_TABLES)
#: Clones prepared ahead, in as many threads.
SPARES = 2
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

    Cloning and dropping take a noticeable fraction of a second each, so a clone is prepared in
    the background while a test runs and dropped in the background after it.
    """

    def __init__(self, template: str) -> None:
        self.template = template
        self._counter = itertools.count(1)
        self._made: list[str] = []
        self._background = ThreadPoolExecutor(max_workers=SPARES, thread_name_prefix="pg-tests")
        self._spares: deque[Future[str]] = deque()
        self._dropping: list[Future[None]] = []

    def new_url(self) -> str:
        """A fresh clone of the template."""
        while len(self._spares) <= SPARES:
            self._spares.append(self._background.submit(self._clone))
        name = self._spares.popleft().result()
        self._made.append(name)
        return database_url(name)

    def empty_url(self) -> str:
        """A database with no schema at all (for migration tests)."""
        name = f"{self.template}_{next(self._counter)}"
        admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        self._made.append(name)
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
                    conn.execute(f"TRUNCATE {TABLES} RESTART IDENTITY")
            return made[0]

        return url

    def drop_made(self) -> None:
        """Drop this test's databases (in the background)."""
        while self._made:
            self._dropping.append(self._background.submit(drop_database, self._made.pop()))

    def close(self) -> None:
        """Finish the background work and drop what is left."""
        self._made.extend(spare.result() for spare in self._spares)
        self.drop_made()
        for dropping in self._dropping:
            dropping.result()
        self._background.shutdown()

    def _clone(self) -> str:
        name = f"{self.template}_{next(self._counter)}"
        admin(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(self.template)
            )
        )
        return name


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
