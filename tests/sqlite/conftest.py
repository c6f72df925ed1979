"""Fixtures of the SQLite-only tests."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.store.factory import open_store
from tether.store.sql.store import SqlStore


@pytest.fixture
def sqlite_store(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> Iterator[SqlStore]:
    """A migrated store on a new SQLite file, closed after the test."""
    store = open_store(str(tmp_path / "t.db"))
    assert isinstance(store, SqlStore)
    yield store
    loop.run_until_complete(store.close())
