"""The PostgreSQL test server: reachability (skip, or fail under CI), a migrated template
database built once per test session, and a fresh clone of it per test.

``TETHER_TEST_POSTGRES`` names the server (a URL of any existing database on it; default the
local CI server). Databases made here are named ``tether_t…`` and dropped afterwards.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

ADMIN_URL = os.environ.get("TETHER_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def database_url(name: str) -> str:
    """The URL of database name on the test server."""
    return urlunsplit(urlsplit(ADMIN_URL)._replace(path=f"/{name}"))


def admin(statement: sql.Composable | str) -> None:
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
    """Fresh, migrated databases cloned from one template."""

    def __init__(self, template: str) -> None:
        self.template = template
        self._counter = itertools.count(1)
        self._made: list[str] = []

    def new_url(self) -> str:
        name = f"{self.template}_{next(self._counter)}"
        admin(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(self.template)
            )
        )
        self._made.append(name)
        return database_url(name)

    def empty_url(self) -> str:
        """A database with no schema at all (for migration tests)."""
        name = f"{self.template}_{next(self._counter)}"
        admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        self._made.append(name)
        return database_url(name)

    def drop_made(self) -> None:
        while self._made:
            drop_database(self._made.pop())


def template_databases() -> Iterator[Databases]:
    """Build the template (schema migrated once); yield the cloner; drop everything after."""
    from tether.store.postgres.database import PostgresDatabase

    require_server()
    template = f"tether_t{os.getpid()}"
    drop_database(template)
    admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(template)))
    try:
        PostgresDatabase(database_url(template)).migrate()
        yield Databases(template)
    finally:
        drop_database(template)
