"""Deleting a run while another transaction deletes it: the late one finds nothing to delete and
says so, and its session is counted once."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import psycopg
import pytest

from tests.postgres.helpers import run, service, waits_on_a_lock, with_stores
from tests.waiting import eventually
from tether.core.errors import NotFound
from tether.core.status import RunStatus
from tether.store.base import Store

pytestmark = pytest.mark.postgres


def test_a_delete_that_lost_the_race_is_not_found_and_not_counted(pg_url: str) -> None:
    async def body(store: Store) -> None:
        svc = service(store)
        session = await svc.create_session(title="race")
        made = await svc.create_run(session.id, "work", agent="echo")
        claimed = await store.claim_run(worker_id="w", now=datetime.now(UTC), lease_seconds=30)
        assert claimed is not None and claimed.id == made.id
        await store.finish_run(
            made.id, worker_id="w", status=RunStatus.COMPLETED, now=datetime.now(UTC)
        )
        async with await psycopg.AsyncConnection.connect(pg_url) as other:
            # Another node's delete holds the run's row, uncommitted ...
            await other.execute("DELETE FROM runs WHERE id = %s", (made.id,))
            late = asyncio.create_task(store.delete_run(made.id, owner=None))
            # ... while this one read the run and waits on its row
            await eventually(lambda: waits_on_a_lock(pg_url), what="the delete to wait")
            assert not late.done()
            await other.commit()
            with pytest.raises(NotFound):
                await late
        after = await store.get_session(session.id)
        assert after is not None and after.run_count == 1  # the late delete took nothing off

    run(with_stores(pg_url, 1, body))
