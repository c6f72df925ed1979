"""SqliteStore: the Store protocol on an embedded SQLite file."""

from __future__ import annotations

from pathlib import Path

from tether.store.sql.store import SqlStore
from tether.store.sqlite.database import Durability, SqliteDatabase


class SqliteStore(SqlStore):
    """tether's default store: one SQLite file in WAL mode; ``:memory:`` for tests."""

    def __init__(
        self,
        path: str | Path,
        *,
        durability: Durability = "normal",
        group_commit: bool = False,
        migrate: bool = True,
    ) -> None:
        self.database = SqliteDatabase(
            path, durability=durability, group_commit=group_commit, migrate=migrate
        )
        super().__init__(self.database)
