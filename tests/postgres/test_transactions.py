"""A write transaction on PostgreSQL is one pipeline whose Sync commits it: whatever ends it
early (an exception in tether's code, a statement the server refuses, a cancellation) must roll
back what it wrote before, and leave the store usable."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from tests.postgres.helpers import run, sql, with_stores
from tether.core.errors import StoreError
from tether.runtime.service import Service
from tether.store.base import Store
from tether.store.postgres.store import PostgresStore
from tether.store.sql.rows import to_us

pytestmark = pytest.mark.postgres


def touch(session_id: str) -> dict[str, object]:
    """touch_active_session's parameters: five messages more."""
    now = to_us(datetime.now(UTC))
    return {"id": session_id, "owner": None, "now": now, "add_messages": 5, "add_runs": 0}


def message_count(url: str, session_id: str) -> int:
    return int(sql(url, "SELECT message_count FROM sessions WHERE id = %s", session_id)[0][0])


def test_an_exception_after_a_write_rolls_it_back(pg_url: str) -> None:
    async def body(store: Store) -> str:
        assert isinstance(store, PostgresStore)
        session = await Service(store, owner="alice").create_session()
        with pytest.raises(RuntimeError, match="changed my mind"):
            async with store.database.write() as tx:
                assert await tx.one("touch_active_session", **touch(session.id)) is not None
                raise RuntimeError("changed my mind")
        async with store.database.write() as tx:  # the connection is fine afterwards
            await tx.one("touch_active_session", **touch(session.id))
        return session.id

    session_id = run(with_stores(pg_url, 1, body))
    assert message_count(pg_url, session_id) == 5


def test_a_refused_statement_rolls_back_the_ones_before_it(pg_url: str) -> None:
    async def body(store: Store) -> str:
        assert isinstance(store, PostgresStore)
        session = await Service(store, owner="alice").create_session()
        refused = {**touch(session.id), "now": "not a time"}  # the server refuses the cast
        with pytest.raises(StoreError, match="invalid input syntax"):
            async with store.database.write() as tx:
                await tx.one("touch_active_session", **touch(session.id))
                await tx.batch([("touch_active_session", touch(session.id))])
                await tx.one("touch_active_session", **refused)
        async with store.database.write() as tx:
            await tx.one("touch_active_session", **touch(session.id))
        return session.id

    session_id = run(with_stores(pg_url, 1, body))
    assert message_count(pg_url, session_id) == 5


def test_a_cancelled_transaction_commits_nothing(pg_url: str) -> None:
    async def body(store: Store) -> str:
        assert isinstance(store, PostgresStore)
        session = await Service(store, owner="alice").create_session()
        wrote, never = asyncio.Event(), asyncio.Event()

        async def write() -> None:
            async with store.database.write() as tx:
                await tx.one("touch_active_session", **touch(session.id))
                wrote.set()
                await never.wait()

        task = asyncio.create_task(write())
        await wrote.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        async with store.database.write() as tx:
            await tx.one("touch_active_session", **touch(session.id))
        return session.id

    session_id = run(with_stores(pg_url, 1, body))
    assert message_count(pg_url, session_id) == 5
