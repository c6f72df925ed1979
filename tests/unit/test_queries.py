"""The named SQL: one shared file, a small one per backend, and the rules that keep them so."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from tether.store.sql.queries import Backend, load_queries, parse_queries, render

BACKENDS: tuple[Backend, ...] = ("sqlite", "postgres")
#: Statements only one backend has: PostgreSQL appends a transaction's events in one statement,
#: under its sessions' locks (SQLite one event, or events that share all but their data, at a
#: time), notifies other nodes, looks for a claimable run before claiming, claims a resumed
#: or a ready run in one statement (SQLite in two), and appends a claim's and a finish's run
#: event in the statement that claims or finishes the run; SQLite's single append reads back
#: the session row it touched without RETURNING.
ONLY = {
    "sqlite": {
        "insert_event",
        "insert_events",
        "claim_resumed_run",
        "claim_ready_run",
        "touched_session",
    },
    "postgres": {"append_events", "notify", "claimable", "claim_run", "finish_run_told"},
}


def file_of(package: str) -> dict[str, str]:
    text = resources.files(package).joinpath("queries.sql").read_text(encoding="utf-8")
    return parse_queries(text, package)


def neutral(postgres: str) -> str:
    """A PostgreSQL statement as the shared file would hold it, rendered for SQLite."""
    text = re.sub(r"%\((\w+)\)s", r":\1", postgres).replace("%%", "%")
    return " ".join(render(text, "sqlite").split())


def test_each_name_is_written_once_for_each_backend() -> None:
    shared = file_of("tether.store.sql")
    own = {backend: file_of(f"tether.store.{backend}") for backend in BACKENDS}
    for backend in BACKENDS:
        assert not shared.keys() & own[backend].keys(), backend
        assert set(load_queries(backend)) == shared.keys() | own[backend].keys()
    sqlite, postgres = (set(own[b]) for b in BACKENDS)
    assert sqlite - postgres == ONLY["sqlite"]
    assert postgres - sqlite == ONLY["postgres"]


def test_no_statement_of_a_backend_could_be_shared() -> None:
    sqlite, postgres = file_of("tether.store.sqlite"), file_of("tether.store.postgres")
    same = [
        n
        for n in sqlite.keys() & postgres.keys()
        if neutral(postgres[n]) == " ".join(sqlite[n].split())
    ]
    assert same == [], (
        f"the same on both backends: move {sorted(same)} to tether/store/sql/queries.sql"
    )


def test_the_shared_file_names_most_statements() -> None:
    shared, sqlite = file_of("tether.store.sql"), load_queries("sqlite")
    assert len(shared) > 3 * (len(sqlite) - len(shared))


@pytest.mark.parametrize(
    ("shared", "sqlite", "postgres"),
    [
        (
            "SELECT * FROM s WHERE id = :id AND (:owner::text IS NULL OR owner = :owner)",
            "SELECT * FROM s WHERE id = :id AND (:owner IS NULL OR owner = :owner)",
            "SELECT * FROM s WHERE id = %(id)s AND (%(owner)s::text IS NULL OR owner = %(owner)s)",
        ),
        (
            "UPDATE r SET v = COALESCE(:v::jsonb, 'null'::jsonb), ids = :ids::text[]",
            "UPDATE r SET v = COALESCE(:v, 'null'), ids = :ids",
            "UPDATE r SET v = COALESCE(%(v)s::jsonb, 'null'::jsonb), ids = %(ids)s::text[]",
        ),
        (
            "SELECT 'a:b ::c', n FROM t WHERE n LIKE '10%' AND m = :m",
            "SELECT 'a:b ::c', n FROM t WHERE n LIKE '10%' AND m = :m",
            "SELECT 'a:b ::c', n FROM t WHERE n LIKE '10%%' AND m = %(m)s",
        ),
    ],
)
def test_a_shared_statement_is_rendered_for_each_backend(
    shared: str, sqlite: str, postgres: str
) -> None:
    assert render(shared, "sqlite") == sqlite
    assert render(shared, "postgres") == postgres


def test_a_name_written_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="'a' is defined twice"):
        parse_queries("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n", "here")


def test_every_postgres_statement_is_short_enough_for_psycopg_to_cache() -> None:
    # psycopg converts a statement's %(name)s placeholders once per text only for texts of at
    # most 4096 bytes (psycopg._queries.MAX_CACHED_STATEMENT_LENGTH); a longer one is parsed
    # again on every execution (claim_run, once per run, was 4562 bytes at first).
    long = {
        n: len(q.encode()) for n, q in load_queries("postgres").items() if len(q.encode()) > 4096
    }
    assert long == {}
