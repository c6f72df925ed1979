"""tether db copy carries every column of the schema: its list is the schema's, and a column it
does not know is refused before anything is written, never dropped and reported "verified"."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path

import pytest

from tether.core.errors import StoreError
from tether.store.copy import DERIVED, TABLES, columns, copy_url
from tether.store.factory import open_store
from tether.store.sql.queries import Backend, load_queries
from tether.store.sql.store import SqlStore


def _schema_columns(path: Path) -> dict[str, tuple[str, ...]]:
    async def read() -> dict[str, tuple[str, ...]]:
        store = open_store(str(path))
        try:
            assert isinstance(store, SqlStore)
            return {t.name: await columns(store.database, t.name) for t in TABLES}
        finally:
            await store.close()

    return asyncio.run(read())


def test_the_copy_carries_exactly_the_columns_of_every_table(tmp_path: Path) -> None:
    schema = _schema_columns(tmp_path / "t.db")
    with sqlite3.connect(tmp_path / "t.db") as conn:
        pragma = {
            t.name: tuple(r[1] for r in conn.execute(f"PRAGMA table_info({t.name})"))
            for t in TABLES
        }
    assert schema == pragma
    for table in TABLES:
        carried = [c for c in schema[table.name] if (table.name, c) not in DERIVED]
        assert sorted(table.columns) == sorted(carried), table.name
        assert table.json <= set(table.columns), table.name


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_each_insert_of_the_copy_writes_every_column(backend: Backend) -> None:
    queries = load_queries(backend)
    style = r":(\w+)" if backend == "sqlite" else r"%\((\w+)\)s"
    for table in TABLES:
        insert = queries[f"copy_insert_{table.name}"]
        listed = re.search(r"\(([^)]*)\)", insert)
        assert listed is not None
        named = [c.strip() for c in listed.group(1).split(",")]
        assert sorted(named) == sorted(table.columns), table.name
        assert sorted(re.findall(style, insert)) == sorted(table.columns), table.name


@pytest.mark.parametrize("side", ["source", "target"])
def test_a_column_the_copy_does_not_know_is_refused_and_nothing_written(
    tmp_path: Path, side: str
) -> None:
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    asyncio.run(_made(source))
    asyncio.run(_made(target))
    with sqlite3.connect(source) as conn:
        conn.execute(
            "INSERT INTO api_keys (id, owner, key_hash, prefix, name, created_at)"
            " VALUES ('k', 'o', 'h', 'tk_', 'n', 0)"
        )
    with sqlite3.connect(source if side == "source" else target) as conn:
        conn.execute("ALTER TABLE messages ADD COLUMN mood TEXT DEFAULT 'calm'")
    with pytest.raises(
        StoreError, match=r"table messages has columns the copy would drop \(mood\)"
    ):
        asyncio.run(copy_url(str(source), str(target)))
    with sqlite3.connect(target) as conn:
        assert conn.execute("SELECT count(*) FROM api_keys").fetchone() == (0,)


async def _made(path: Path) -> None:
    store = open_store(str(path))
    await store.close()
