"""tether db copy carries the highest event id the source ever handed out: a stream cursor taken
on the source (events deleted since included) never skips an event written on the target."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tether.core.message import Role
from tether.runtime.service import Service
from tether.store.copy import copy_url
from tether.store.factory import open_store


async def deleted_top(url: str) -> tuple[str, int]:
    """A session kept, and the highest event id, which belonged to a session deleted since."""
    store = open_store(url)
    try:
        svc = Service(store)
        kept = await svc.create_session(title="kept")
        await svc.add_message(kept.id, Role.USER, "hello")
        gone = await svc.create_session(title="gone")
        await svc.add_messages(gone.id, [{"content": f"m{i}"} for i in range(5)])
        top = max(e.id for e in await store.list_events(session_id=gone.id, limit=100))
        await svc.delete_session(gone.id)
        return kept.id, top
    finally:
        await store.close()


async def next_event_id(url: str, session_id: str) -> int:
    store = open_store(url)
    try:
        await Service(store).add_message(session_id, Role.USER, "after the move")
        return (await store.list_events(session_id=session_id, limit=1000))[-1].id
    finally:
        await store.close()


def test_new_events_follow_the_ids_the_source_deleted(tmp_path: Path) -> None:
    source, target = str(tmp_path / "source.db"), str(tmp_path / "target.db")
    kept, top = asyncio.run(deleted_top(source))
    assert asyncio.run(copy_url(source, target)).verified
    assert asyncio.run(next_event_id(target, kept)) > top


def test_a_replaced_target_keeps_its_own_ids_unused_too(tmp_path: Path) -> None:
    source, target = str(tmp_path / "source.db"), str(tmp_path / "target.db")
    kept, _ = asyncio.run(deleted_top(source))
    for _ in range(3):  # the target's own ids climb above the source's
        _, target_top = asyncio.run(deleted_top(target))
    assert asyncio.run(copy_url(source, target, replace=True)).verified
    assert asyncio.run(next_event_id(target, kept)) > target_top
