"""A listing or a search of sessions (each decoded in one pass from its own columns) reads each
session as get_session reads it: every field, of every shape, on every page, filter and sort."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from tests.support import OWNER, WORKER, Factory
from tether.core.clock import ManualClock
from tether.core.ids import new_id
from tether.core.run import Activity
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.store.base import Store


async def _spend(store: Store, make: Factory, session_id: str) -> None:
    """Two runs that spent tokens, the second deleted (the count and usage net of it)."""
    for tokens in (100, 7):
        run = await make.held(session_id)
        await store.record_step(
            run_id=run.id,
            worker_id=WORKER,
            position=1,
            kind=StepKind.MODEL_CALL,
            name="model",
            input={},
            now=make.clock.now(),
            usage=Usage(tokens, tokens // 10, 1),
        )
        await store.finish_run(
            run.id, worker_id=WORKER, status=RunStatus.COMPLETED, now=make.clock.now()
        )
    await store.delete_run(run.id, owner=None)


async def _sessions_of_every_shape(store: Store, make: Factory, clock: ManualClock) -> None:
    base = await make.session(title='"café" \\ 世界 😀 \x01\u2028')
    await store.create_session(
        replace(
            base,
            id=new_id(),
            title=None,
            ttl_seconds=None,
            metadata={"k": ["ü", 1.5, 2**70, None, True, {"x": {}}]},
            project={"workspace": "./calc"},
            external_key="key ü",
            app="app-1",
        )
    )
    clock.advance(0.5)
    changed = await make.session(ttl_seconds=60)
    closed = await make.session()
    clock.advance(1.25)
    await store.update_session(changed.id, owner=None, now=clock.now(), metadata={"n": 1})
    await store.close_session(closed.id, owner=None, now=clock.now())
    await make.message(base.id)
    used = await make.session(project={"n": [1, 2]})
    await _spend(store, make, used.id)
    clock.advance(120)
    assert [s.id for s in await store.expire_sessions(now=clock.now())] == [changed.id]
    await make.session(owner="bob")


async def test_a_listing_reads_each_session_as_get_session_does(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    await _sessions_of_every_shape(store, make, clock)
    filters: list[dict[str, Any]] = [
        {},
        {"limit": 1},
        {"limit": 2},
        {"status": SessionStatus.ACTIVE},
        {"status": SessionStatus.CLOSED},
        {"status": SessionStatus.EXPIRED},
        {"query": "ü"},
        {"metadata": {"n": 1}},
        {"app": "app-1"},
    ]
    listed: set[str] = set()
    for given in filters:
        cursor = None
        while True:
            page = await store.list_sessions(owner=OWNER, now=clock.now(), cursor=cursor, **given)
            assert page.data, given
            for session in page.data:
                assert type(session) is Session
                assert session == await store.get_session(session.id), given
                listed.add(session.id)
            cursor = page.next_cursor
            if cursor is None:
                break
    everything = await store.list_sessions(owner=OWNER, now=clock.now(), limit=1000)
    assert {s.id for s in everything.data} == listed and len(listed) == 5
    shapes = {
        name: {repr(getattr(s, name)) for s in everything.data}
        for name in (f.name for f in fields(Session))
    }
    assert all(len(values) > 1 for name, values in shapes.items() if name != "owner"), shapes
    assert {s.usage for s in everything.data} >= {Usage(100, 10, 1)}
    assert {s.run_count for s in everything.data} == {0, 1}


async def test_a_search_reads_each_session_as_get_session_does(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    await _sessions_of_every_shape(store, make, clock)
    everything = await store.search_sessions(owner=OWNER, limit=1000)
    searches: list[dict[str, Any]] = [
        {"limit": 2, "offset": 1},
        {"sort": "activity_at"},
        {"sort": "updated_at", "descending": False},
        {"sort": "activity"},
        {"metadata": {"n": 1}},
        {"project": {"workspace": "./calc"}},
        {"ids": [s.id for s in everything[:2]]},
        {"activity": Activity.IDLE},
    ]
    for given in [{}, *searches]:
        found = await store.search_sessions(owner=OWNER, **{"limit": 1000, **given})
        assert found, given
        for session in found:
            assert type(session) is Session
            assert session == await store.get_session(session.id), given
    assert len(everything) == 5
    shapes = {
        name: {repr(getattr(s, name)) for s in everything}
        for name in (f.name for f in fields(Session))
    }
    assert all(len(values) > 1 for name, values in shapes.items() if name != "owner"), shapes
    assert {s.usage for s in everything} >= {Usage(100, 10, 1)}
    assert {s.run_count for s in everything} == {0, 1}
