"""Migrations from many nodes at once, the schema version guard, and the named queries."""

from __future__ import annotations

import threading

import psycopg
import pytest

from tether.core.errors import SchemaTooNew, StoreUnavailable, UsageError
from tether.store.factory import migrate_store, open_store
from tether.store.migrate import load_migrations
from tether.store.postgres.database import PostgresDatabase
from tether.store.sql.queries import load_queries

from ..pg import Databases
from ..support import (
    ROWS_BEFORE_CONVERSATION_CORE,
    SCHEMA_3_DELETED_RUN,
    before_conversation_core,
    check_conversation_core,
    check_recounted,
)
from .helpers import run, sql

pytestmark = pytest.mark.postgres

MIGRATIONS = load_migrations("tether.store.postgres")


def test_many_nodes_migrating_at_once_apply_each_migration_once(pg: Databases) -> None:
    url = pg.empty_url()
    results: list[tuple[int, int]] = []
    errors: list[BaseException] = []

    def node() -> None:
        try:
            results.append(PostgresDatabase(url, migrate=False).migrate())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=node) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    migrations = load_migrations("tether.store.postgres")
    latest = migrations[-1].version
    assert sorted(results) == [(0, latest)] + [(latest, latest)] * 7
    assert sql(url, "SELECT version, name FROM schema_version ORDER BY 1") == [
        (m.version, m.name) for m in migrations
    ]
    assert migrate_store(url) == (latest, latest)


def test_a_database_from_a_newer_tether_is_refused(pg_url: str) -> None:
    sql(pg_url, "INSERT INTO schema_version (version, name) VALUES (99, 'future')")
    with pytest.raises(SchemaTooNew, match="99"):
        open_store(pg_url)


def test_an_unreachable_server_is_a_retryable_error_and_the_password_stays_secret() -> None:
    url = "postgresql://tether:s3cret@127.0.0.1:1/none?connect_timeout=1"
    with pytest.raises(StoreUnavailable) as raised:
        open_store(url)
    assert "s3cret" not in str(raised.value)
    database = PostgresDatabase(url, migrate=False)
    assert database.location == "postgresql://tether@127.0.0.1:1/none"


def test_pool_options_come_from_the_url(pg_url: str) -> None:
    async def main() -> int:
        joiner = "&" if "?" in pg_url else "?"
        store = open_store(f"{pg_url}{joiner}pool_min_size=2&pool_max_size=3&pool_timeout=2")
        try:
            return await store.schema_version()
        finally:
            await store.close()

    assert run(main()) == len(load_migrations("tether.store.postgres"))


def test_both_backends_have_the_same_migrations() -> None:
    sqlite = [(m.version, m.name) for m in load_migrations("tether.store.sqlite")]
    assert [(m.version, m.name) for m in load_migrations("tether.store.postgres")] == sqlite


def test_both_backends_name_the_same_queries() -> None:
    sqlite = set(load_queries("tether.store.sqlite"))
    postgres = set(load_queries("tether.store.postgres"))
    # PostgreSQL appends a transaction's events in one statement, under its sessions' locks,
    # with its notifications, and looks for a claimable run before claiming.
    assert sqlite - postgres == {"insert_event"}
    assert postgres - sqlite == {"append_events", "notify", "claimable"}


@pytest.mark.parametrize("query", ["pool_max_size=x", "pool_min_size=0", "pool_timeout=-1"])
def test_bad_pool_options_are_usage_errors(query: str) -> None:
    with pytest.raises(UsageError, match="pool"):
        PostgresDatabase(f"postgresql://u@127.0.0.1/db?{query}", migrate=False)


def test_version_four_recounts_sessions_whose_runs_were_deleted_before_it(pg: Databases) -> None:
    url = pg.empty_url()
    migrations = load_migrations("tether.store.postgres")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for migration in migrations[:3]:
            conn.execute(migration.sql.encode())
            conn.execute(
                "INSERT INTO schema_version (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
        for statement in SCHEMA_3_DELETED_RUN:
            conn.execute(statement)

    async def check() -> None:
        store = open_store(url)
        try:
            await check_recounted(store)
        finally:
            await store.close()

    run(check())


def test_the_conversation_core_keeps_memory_and_messages_and_adds_the_app_scope(
    pg: Databases,
) -> None:
    url = pg.empty_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for migration in before_conversation_core(MIGRATIONS):
            conn.execute(migration.sql.encode())
            conn.execute(
                "INSERT INTO schema_version (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
        for statement in ROWS_BEFORE_CONVERSATION_CORE:
            conn.execute(statement)

    async def check() -> None:
        store = open_store(url)
        try:
            await check_conversation_core(store)
        finally:
            await store.close()

    run(check())
