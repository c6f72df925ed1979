"""Migrations from many nodes at once, the schema version guard, and the named queries."""

from __future__ import annotations

import threading

import psycopg
import pytest

from tether.core.errors import SchemaTooNew, StoreUnavailable, UsageError
from tether.core.usage import Usage
from tether.store.factory import migrate_store, open_store
from tether.store.migrate import load_migrations
from tether.store.postgres.database import PostgresDatabase
from tether.store.sql.queries import load_queries

from ..pg import Databases
from .helpers import run, sql

pytestmark = pytest.mark.postgres


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
    assert sorted(results) == [(0, 4)] + [(4, 4)] * 7
    assert sql(url, "SELECT version, name FROM schema_version ORDER BY 1") == [
        (1, "initial"),
        (2, "api_keys"),
        (3, "delete_indexes"),
        (4, "deleted_runs"),
    ]
    assert migrate_store(url) == (4, 4)


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
    # PostgreSQL appends a transaction's events in one batch, under its sessions' locks, and
    # looks for a claimable run before claiming.
    assert sqlite - postgres == {"insert_event"}
    assert postgres - sqlite == {"lock_sessions", "insert_events", "notify", "claimable"}


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
        # s1 had two runs (100 + 40 tokens) and lost one to a delete; s2 still has both
        for sid in ("s1", "s2"):
            conn.execute(
                "INSERT INTO sessions (id, owner, status, created_at, updated_at,"
                " last_activity_at, run_count, input_tokens, output_tokens, model_requests)"
                " VALUES (%s, 'local', 'active', 0, 0, 0, 2, 140, 14, 2)",
                (sid,),
            )
        for rid, sid, seq, tokens in (
            ("r1", "s1", 2, 40),
            ("r2", "s2", 1, 100),
            ("r3", "s2", 2, 40),
        ):
            conn.execute(
                "INSERT INTO runs (id, session_id, owner, seq, agent, goal, status, created_at,"
                " updated_at, input_tokens, output_tokens, model_requests)"
                " VALUES (%s, %s, 'local', %s, 'echo', 'g', 'completed', 0, 0, %s, %s, 1)",
                (rid, sid, seq, tokens, tokens // 10),
            )

    async def check() -> None:
        store = open_store(url)
        try:
            one, two = await store.get_session("s1"), await store.get_session("s2")
            assert one is not None and (one.run_count, one.usage) == (1, Usage(40, 4, 1))
            assert two is not None and (two.run_count, two.usage) == (2, Usage(140, 14, 2))
        finally:
            await store.close()

    run(check())
