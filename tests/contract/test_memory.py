"""Memory scopes at the store: a run's working memory is its own, session memory belongs to one
session, user memory to one owner; promotion records its source; ended runs' memory is kept
read-only."""

from __future__ import annotations

import pytest

from tests.support import WORKER, Factory
from tether.core.clock import ManualClock
from tether.core.errors import Conflict, NotFound
from tether.core.memory import MemoryScope
from tether.core.status import RunStatus
from tether.store.base import Store

RUN, SESSION, USER = MemoryScope.RUN, MemoryScope.SESSION, MemoryScope.USER


async def _keys(store: Store, scope: MemoryScope, scope_id: str) -> dict[str, object]:
    return {i.key: i.value for i in await store.list_memory(scope=scope, scope_id=scope_id)}


async def test_run_memory_is_visible_to_its_run_only(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    first = await make.held(session.id)
    second = await make.run(session.id)  # queued in the same session
    await store.put_memory(
        scope=RUN,
        scope_id=first.id,
        key="hypothesis",
        value="requests",
        owner=None,
        now=clock.now(),
    )
    await store.put_memory(
        scope=RUN, scope_id=second.id, key="plan", value="verify", owner=None, now=clock.now()
    )
    assert await _keys(store, RUN, first.id) == {"hypothesis": "requests"}
    assert await _keys(store, RUN, second.id) == {"plan": "verify"}
    assert await store.get_memory(scope=RUN, scope_id=second.id, key="hypothesis") is None
    # Working memory is not session memory.
    assert await _keys(store, SESSION, session.id) == {}
    item = await store.get_memory(scope=RUN, scope_id=first.id, key="hypothesis")
    assert item is not None and item.source_run_id == first.id


async def test_session_memory_belongs_to_one_session(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    one, two = await make.session(), await make.session()
    await store.put_memory(
        scope=SESSION, scope_id=one.id, key="python", value="3.9", owner=None, now=clock.now()
    )
    assert await _keys(store, SESSION, one.id) == {"python": "3.9"}
    assert await _keys(store, SESSION, two.id) == {}


async def test_user_memory_crosses_sessions_of_one_owner_only(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    await store.put_memory(
        scope=USER, scope_id="alice", key="tone", value="brief", owner="alice", now=clock.now()
    )
    assert await _keys(store, USER, "alice") == {"tone": "brief"}
    assert await _keys(store, USER, "bob") == {}
    with pytest.raises(NotFound):  # bob cannot write alice's memory
        await store.put_memory(
            scope=USER, scope_id="alice", key="tone", value="long", owner="bob", now=clock.now()
        )
    assert await _keys(store, USER, "alice") == {"tone": "brief"}


async def test_another_owner_cannot_write_a_session_or_run_memory(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session(owner="alice")
    run = await make.held(session.id)
    for scope, scope_id in ((SESSION, session.id), (RUN, run.id)):
        with pytest.raises(NotFound):
            await store.put_memory(
                scope=scope, scope_id=scope_id, key="k", value=1, owner="bob", now=clock.now()
            )
    with pytest.raises(NotFound):
        await store.promote_memory(run_id=run.id, key="k", owner="bob", now=clock.now())


async def test_promotion_records_its_source_run_and_an_event(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    run = await make.held(session.id)
    await store.put_memory(
        scope=RUN,
        scope_id=run.id,
        key="finding",
        value={"module": "x"},
        owner=None,
        now=clock.now(),
    )
    await store.finish_run(run.id, worker_id=WORKER, status=RunStatus.COMPLETED, now=clock.now())
    clock.advance(3)

    promoted = await store.promote_memory(
        run_id=run.id, key="finding", owner=None, now=clock.now(), as_key="cause"
    )

    assert promoted.scope is SESSION
    assert promoted.scope_id == session.id
    assert promoted.key == "cause"
    assert promoted.value == {"module": "x"}
    assert promoted.source_run_id == run.id
    stored = await store.get_memory(scope=SESSION, scope_id=session.id, key="cause")
    assert stored == promoted
    events = await store.list_events(session_id=session.id)
    last = events[-1]
    assert last.type == "memory.promoted"
    assert last.run_id == run.id
    assert last.data["source_run_id"] == run.id
    assert last.data["from_key"] == "finding"
    assert last.data["item"]["key"] == "cause"
    # The run's own item is still there, unchanged.
    assert await _keys(store, RUN, run.id) == {"finding": {"module": "x"}}
    # Promotion is activity.
    after = await store.get_session(session.id)
    assert after is not None and after.last_activity_at == clock.now()


async def test_promoting_a_missing_key_fails_without_writing(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    run = await make.held(session.id)
    before = await store.list_events(session_id=session.id)
    with pytest.raises(NotFound):
        await store.promote_memory(run_id=run.id, key="nope", owner=None, now=clock.now())
    assert await store.list_events(session_id=session.id) == before
    assert await _keys(store, SESSION, session.id) == {}


@pytest.mark.parametrize(
    "outcome", [RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.TIMED_OUT, RunStatus.CANCELLED]
)
async def test_run_memory_is_read_only_once_the_run_ended(
    store: Store, make: Factory, clock: ManualClock, outcome: RunStatus
) -> None:
    session = await make.session()
    run = await make.held(session.id)
    await store.put_memory(
        scope=RUN, scope_id=run.id, key="k", value="v", owner=None, now=clock.now()
    )
    if outcome is RunStatus.CANCELLED:
        await store.cancel_run(run.id, owner=None, now=clock.now(), reason="test")
    else:
        await store.finish_run(run.id, worker_id=WORKER, status=outcome, now=clock.now())
    before = await store.list_events(run_id=run.id)

    with pytest.raises(Conflict, match="read-only"):
        await store.put_memory(
            scope=RUN, scope_id=run.id, key="k", value="changed", owner=None, now=clock.now()
        )
    with pytest.raises(Conflict, match="read-only"):
        await store.put_memory(
            scope=RUN, scope_id=run.id, key="new", value=1, owner=None, now=clock.now()
        )
    with pytest.raises(Conflict, match="read-only"):
        await store.delete_memory(scope=RUN, scope_id=run.id, key="k", owner=None, now=clock.now())

    assert await _keys(store, RUN, run.id) == {"k": "v"}  # kept for audit
    assert await store.list_events(run_id=run.id) == before


async def test_memory_writes_are_events_and_activity(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    clock.advance(10)
    item = await store.put_memory(
        scope=SESSION, scope_id=session.id, key="k", value=[1, 2], owner=None, now=clock.now()
    )
    assert item.created_at == item.updated_at == clock.now()
    clock.advance(10)
    updated = await store.put_memory(
        scope=SESSION, scope_id=session.id, key="k", value=[3], owner=None, now=clock.now()
    )
    assert updated.created_at == item.created_at
    assert updated.updated_at == clock.now()
    assert await store.delete_memory(
        scope=SESSION, scope_id=session.id, key="k", owner=None, now=clock.now()
    )
    assert not await store.delete_memory(
        scope=SESSION, scope_id=session.id, key="k", owner=None, now=clock.now()
    )
    events = await store.list_events(session_id=session.id)
    assert [e.type for e in events] == [
        "session.created",
        "memory.set",
        "memory.set",
        "memory.deleted",
    ]
    after = await store.get_session(session.id)
    assert after is not None and after.last_activity_at == clock.now()


async def test_user_memory_namespaces(store: Store, clock: ManualClock) -> None:
    for namespace, key in ((("prefs",), "a"), (("prefs", "ui"), "b"), (("other",), "c"), ((), "d")):
        await store.put_memory(
            scope=USER,
            scope_id="alice",
            key=key,
            value=key,
            owner="alice",
            now=clock.now(),
            namespace=namespace,
        )
    top = await store.list_memory(scope=USER, scope_id="alice")
    assert [i.key for i in top] == ["d"]
    prefs = await store.list_memory(scope=USER, scope_id="alice", namespace_prefix=("prefs",))
    assert sorted(i.key for i in prefs) == ["a", "b"]
    everything = await store.list_memory(scope=USER, scope_id="alice", namespace_prefix=None)
    assert sorted(i.key for i in everything) == ["a", "b", "c", "d"]
    assert await store.list_namespaces(owner="alice") == [("other",), ("prefs",), ("prefs", "ui")]
    assert await store.list_namespaces(owner="alice", prefix=("prefs",)) == [
        ("prefs",),
        ("prefs", "ui"),
    ]
    assert await store.list_namespaces(owner="bob") == []


async def test_app_memory_is_shared_by_an_app_and_isolated_between_owners(
    store: Store, clock: ManualClock
) -> None:
    app = MemoryScope.APP
    await store.put_memory(
        scope=app, scope_id="shop", key="tone", value=1, owner="alice", now=clock.now()
    )
    await store.put_memory(
        scope=app, scope_id="shop", key="tone", value=2, owner="bob", now=clock.now()
    )
    await store.put_memory(
        scope=app, scope_id="blog", key="tone", value=3, owner="alice", now=clock.now()
    )

    async def values(owner: str, name: str) -> dict[str, object]:
        items = await store.list_memory(scope=app, scope_id=name, owner=owner)
        assert all(i.scope is app and i.scope_id == name for i in items)
        return {i.key: i.value for i in items}

    assert await values("alice", "shop") == {"tone": 1}
    assert await values("bob", "shop") == {"tone": 2}
    assert await values("alice", "blog") == {"tone": 3}
    assert await values("carol", "shop") == {}
    item = await store.get_memory(scope=app, scope_id="shop", key="tone", owner="bob")
    assert item is not None and item.value == 2
    assert await store.delete_memory(
        scope=app, scope_id="shop", key="tone", owner="bob", now=clock.now()
    )
    assert await values("bob", "shop") == {}
    assert await values("alice", "shop") == {"tone": 1}
    with pytest.raises(ValueError, match="owner"):  # an app's items always belong to an owner
        await store.list_memory(scope=app, scope_id="shop")


async def test_memory_of_run_reads_what_a_run_starts_with_in_one_call(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    run = await make.held(session.id)
    other = await make.run(session.id)
    owner = run.owner

    async def put(
        scope: MemoryScope, scope_id: str, key: str, namespace: tuple[str, ...] = ()
    ) -> None:
        clock.advance(1)
        await store.put_memory(
            scope=scope,
            scope_id=scope_id,
            key=key,
            value=key,
            owner=owner,
            now=clock.now(),
            namespace=namespace,
        )

    await put(RUN, run.id, "mine")
    await put(RUN, other.id, "not mine")
    await put(SESSION, session.id, "older")
    await put(SESSION, session.id, "newer")
    await put(USER, owner, "liked")
    await put(USER, owner, "nested", ("langgraph",))
    await put(MemoryScope.APP, "shop", "tone")

    found = await store.memory_of_run(run)
    assert {scope: [i.key for i in items] for scope, items in found.items()} == {
        RUN: ["mine"],
        SESSION: ["newer", "older"],  # newest-updated first, as list_memory gives them
        USER: ["liked"],  # the root namespace only
    }
    for scope, scope_id in ((RUN, run.id), (SESSION, session.id), (USER, owner)):
        assert found[scope] == await store.list_memory(scope=scope, scope_id=scope_id)
    with_app = await store.memory_of_run(run, app="shop", limit=1)
    assert [i.key for i in with_app[MemoryScope.APP]] == ["tone"]
    assert with_app[MemoryScope.APP][0].scope_id == "shop"
    assert [i.key for i in with_app[SESSION]] == ["newer"]  # at most limit of each scope
    assert (await store.memory_of_run(run, app="blog"))[MemoryScope.APP] == []
