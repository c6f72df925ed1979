"""External keys at the store, on both backends: a key names at most one session of an owner
(another owner may use the same key), is looked up only as a key, can be set, moved and cleared,
and get-or-create gives one session per key even when many processes race to create it."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tests.support import OWNER, Backend, Factory
from tether.core.clock import ManualClock
from tether.core.errors import AlreadyExists, SessionClosed
from tether.core.ids import new_id
from tether.core.session import Session
from tether.core.status import SessionStatus
from tether.store.base import Store


def new_session(
    clock: ManualClock, key: str | None, *, owner: str = OWNER, app: str | None = None
) -> Session:
    now = clock.now()
    return Session(
        id=new_id(),
        owner=owner,
        title=None,
        status=SessionStatus.ACTIVE,
        created_at=now,
        updated_at=now,
        last_activity_at=now,
        external_key=key,
        app=app,
    )


async def test_a_key_names_one_session_per_owner(store: Store, clock: ManualClock) -> None:
    mine = await store.create_session(new_session(clock, "user_123", app="shop"))
    theirs = await store.create_session(new_session(clock, "user_123", owner="bob"))
    assert mine.id != theirs.id
    found = await store.get_session_by_key("user_123", owner=OWNER)
    assert found is not None and (found.id, found.external_key, found.app) == (
        mine.id,
        "user_123",
        "shop",
    )
    other = await store.get_session_by_key("user_123", owner="bob")
    assert other is not None and other.id == theirs.id
    assert await store.get_session_by_key("user_123", owner="carol") is None
    with pytest.raises(AlreadyExists, match="user_123"):
        await store.create_session(new_session(clock, "user_123"))
    stored = await store.get_session(mine.id)
    assert stored is not None and stored.external_key == "user_123"


async def test_keys_are_compared_exactly(store: Store, clock: ManualClock) -> None:
    keys = ["app/user/session", "App/User/Session", "é", "e\u0301", " padded ", "%_\\"]
    made = {key: await store.create_session(new_session(clock, key)) for key in keys}
    for key, session in made.items():
        found = await store.get_session_by_key(key, owner=OWNER)
        assert found is not None and found.id == session.id, key
    assert await store.get_session_by_key("app/user/%", owner=OWNER) is None


async def test_a_key_that_looks_like_an_id_names_its_own_session(
    store: Store, clock: ManualClock
) -> None:
    first = await store.create_session(new_session(clock, None))
    second = await store.create_session(new_session(clock, first.id))
    by_key = await store.get_session_by_key(first.id, owner=OWNER)
    by_id = await store.get_session(first.id, owner=OWNER)
    assert by_key is not None and by_key.id == second.id
    assert by_id is not None and by_id.id == first.id


async def test_get_or_create_returns_the_session_the_key_names(
    store: Store, clock: ManualClock
) -> None:
    created, was_new = await store.get_or_create_session(new_session(clock, "k", app="a"))
    again, again_new = await store.get_or_create_session(new_session(clock, "k", app="other"))
    assert (was_new, again_new) == (True, False)
    assert again.id == created.id and again.app == "a"  # returned as stored, not changed
    events = await store.list_events(session_id=created.id)
    assert [e.type for e in events] == ["session.created"]


async def test_update_sets_moves_and_clears_a_key(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    one = await store.create_session(new_session(clock, "taken"))
    two = await store.create_session(new_session(clock, None))
    with pytest.raises(AlreadyExists):
        await store.update_session(two.id, owner=OWNER, now=clock.now(), external_key="taken")
    same = await store.update_session(one.id, owner=OWNER, now=clock.now(), external_key="taken")
    assert same.external_key == "taken"  # setting a session's own key again is no conflict
    cleared = await store.update_session(one.id, owner=OWNER, now=clock.now(), external_key=None)
    assert cleared.external_key is None
    moved = await store.update_session(
        two.id, owner=OWNER, now=clock.now(), external_key="taken", app="shop"
    )
    assert (moved.external_key, moved.app) == ("taken", "shop")
    found = await store.get_session_by_key("taken", owner=OWNER)
    assert found is not None and found.id == two.id
    event = (await store.list_events(session_id=two.id))[-1]
    assert event.type == "session.updated" and event.data["changed"] == ["app", "external_key"]
    await store.close_session(two.id, owner=OWNER, now=clock.now())
    with pytest.raises(SessionClosed):
        await store.update_session(two.id, owner=OWNER, now=clock.now(), external_key="new")
    closed = await store.get_session_by_key("taken", owner=OWNER)
    assert closed is not None and closed.status is SessionStatus.CLOSED  # its key stays


async def test_listing_finds_sessions_by_key_text_app_and_key_prefix(
    store: Store, clock: ManualClock
) -> None:
    a = await store.create_session(new_session(clock, "shop/alice/1", app="shop"))
    b = await store.create_session(new_session(clock, "shop/bob/1", app="shop"))
    c = await store.create_session(new_session(clock, "blog/alice/1", app="blog"))
    await store.create_session(new_session(clock, "shop/alice/2", owner="bob", app="shop"))

    async def ids(**filters: Any) -> set[str]:
        page = await store.list_sessions(owner=OWNER, now=clock.now(), **filters)
        return {s.id for s in page.data}

    assert await ids(query="alice") == {a.id, c.id}
    assert await ids(app="shop") == {a.id, b.id}
    assert await ids(key_prefix="shop/") == {a.id, b.id}
    assert await ids(key_prefix="shop/alice/") == {a.id}
    assert await ids(key_prefix="shop_") == set()  # a prefix is text, not a pattern
    assert await ids(key_prefix="%") == set()


async def test_get_or_create_racing_from_many_processes_gives_one_session_per_key(
    backend: Backend, db_url: str, store: Store
) -> None:
    """Four stores (each its own connection or pool, on its own thread and event loop, as four
    processes would be) get-or-create the same keys at once."""
    keys = [f"racer-{n}" for n in range(15)]
    barrier = threading.Barrier(4)
    seen: list[list[tuple[str, str, bool]]] = []
    errors: list[BaseException] = []

    def racer() -> None:
        async def work() -> list[tuple[str, str, bool]]:
            mine = backend.open(db_url)
            clock = ManualClock()
            try:
                barrier.wait()
                got = []
                for key in keys:
                    session, created = await mine.get_or_create_session(new_session(clock, key))
                    got.append((key, session.id, created))
                return got
            finally:
                await mine.close()

        try:
            seen.append(asyncio.run(work()))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=racer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for key in keys:
        answers = [(sid, created) for got in seen for k, sid, created in got if k == key]
        assert len({sid for sid, _ in answers}) == 1, key
        assert sum(created for _, created in answers) == 1, key
    listed = await store.list_sessions(owner=OWNER, now=ManualClock().now(), limit=100)
    assert sorted(s.external_key or "" for s in listed.data) == sorted(keys)
