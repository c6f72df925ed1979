"""An append that sets memory (session, user and app scope) commits or fails as one, on both
backends: what the ADK adapter's append_event relies on (an event and its state delta)."""

from __future__ import annotations

import pytest

from tests.support import OWNER, Factory
from tether.core.errors import SessionClosed, UsageError
from tether.core.event import EventType
from tether.core.memory import MemoryScope, MemoryWrite
from tether.core.message import NewMessage, Role
from tether.runtime.service import Service
from tether.store.base import Store


async def test_messages_and_memory_of_three_scopes_commit_together(
    store: Store, make: Factory
) -> None:
    session = await make.session()
    writes = [
        MemoryWrite(MemoryScope.SESSION, session.id, "k", {"v": 1}),
        MemoryWrite(MemoryScope.USER, OWNER, "pref", "dark", ("adk", "app", "u1")),
        MemoryWrite(MemoryScope.APP, "app", "flag", None),
    ]
    added = await store.add_messages(
        session_id=session.id,
        owner=OWNER,
        messages=[NewMessage(Role.USER, "hi")],
        now=make.clock.now(),
        memory=writes,
    )
    assert [m.seq for m in added] == [1]
    got = await store.get_memory(scope=MemoryScope.SESSION, scope_id=session.id, key="k")
    user = await store.get_memory(
        scope=MemoryScope.USER, scope_id=OWNER, key="pref", namespace=("adk", "app", "u1")
    )
    app = await store.get_memory(scope=MemoryScope.APP, scope_id="app", key="flag", owner=OWNER)
    assert got is not None and got.value == {"v": 1}
    assert user is not None and user.value == "dark"
    assert app is not None and app.value is None
    events = await store.list_events(session_id=session.id)
    kinds = [e.type for e in events]
    assert kinds.count(EventType.MEMORY_SET) == 1  # user and app items belong to no session
    assert EventType.MESSAGE_ADDED in kinds


async def test_memory_alone_needs_no_message(store: Store, make: Factory) -> None:
    session = await make.session()
    added = await store.add_messages(
        session_id=session.id,
        owner=OWNER,
        messages=[],
        now=make.clock.now(),
        memory=[MemoryWrite(MemoryScope.SESSION, session.id, "k", 1)],
    )
    assert added == []
    assert await store.list_messages(session.id) == []
    got = await store.get_memory(scope=MemoryScope.SESSION, scope_id=session.id, key="k")
    assert got is not None and got.value == 1


async def test_a_refused_memory_write_rolls_the_messages_back(store: Store, make: Factory) -> None:
    session = await make.session()
    other = await make.session()
    with pytest.raises(UsageError):
        await store.add_messages(
            session_id=session.id,
            owner=OWNER,
            messages=[NewMessage(Role.USER, "hi")],
            now=make.clock.now(),
            memory=[
                MemoryWrite(MemoryScope.SESSION, session.id, "k", 1),
                MemoryWrite(MemoryScope.SESSION, other.id, "k", 2),
            ],
        )
    assert await store.list_messages(session.id) == []
    assert await store.get_memory(scope=MemoryScope.SESSION, scope_id=session.id, key="k") is None


async def test_a_closed_session_takes_neither(store: Store, make: Factory) -> None:
    session = await make.session()
    await store.close_session(session.id, owner=OWNER, now=make.clock.now())
    with pytest.raises(SessionClosed):
        await store.add_messages(
            session_id=session.id,
            owner=OWNER,
            messages=[],
            now=make.clock.now(),
            memory=[MemoryWrite(MemoryScope.APP, "app", "k", 1)],
        )
    assert (
        await store.get_memory(scope=MemoryScope.APP, scope_id="app", key="k", owner=OWNER) is None
    )


async def test_memory_of_many_sessions_in_one_read(store: Store, make: Factory) -> None:
    first, second, empty = await make.session(), await make.session(), await make.session()
    theirs = await make.session(owner="bob")
    for session, owner in ((first, OWNER), (second, OWNER), (theirs, "bob")):
        await store.add_messages(
            session_id=session.id,
            owner=owner,
            messages=[],
            now=make.clock.now(),
            memory=[
                MemoryWrite(MemoryScope.SESSION, session.id, "k", session.id),
                MemoryWrite(MemoryScope.SESSION, session.id, "hidden", 1, ("adk",)),
            ],
        )
    found = await store.memory_of_sessions([first.id, second.id, empty.id, theirs.id], owner=OWNER)
    assert set(found) == {first.id, second.id}  # bob's session is not alice's to read
    assert {(i.namespace, i.key, i.value) for i in found[first.id]} == {
        ((), "k", first.id),
        (("adk",), "hidden", 1),
    }
    assert await store.memory_of_sessions([], owner=OWNER) == {}


async def test_the_service_checks_what_an_append_sets(service: Service) -> None:
    session = await service.create_session()
    other = await service.create_session()
    refused = [
        MemoryWrite(MemoryScope.SESSION, other.id, "k", 1),
        MemoryWrite(MemoryScope.USER, "bob", "k", 1),
        MemoryWrite(MemoryScope.RUN, session.id, "k", 1),
        MemoryWrite(MemoryScope.APP, "a/b", "k", 1),
        MemoryWrite(MemoryScope.SESSION, session.id, "", 1),
        MemoryWrite(MemoryScope.SESSION, session.id, "k", float("nan")),
    ]
    for write in refused:
        with pytest.raises(UsageError):
            await service.add_messages(session.id, [], memory=[write])
    with pytest.raises(UsageError, match="a batch holds 1"):
        await service.add_messages(session.id, [])
    write = MemoryWrite(MemoryScope.SESSION, session.id, "k", 1)
    assert await service.add_messages(session.id, [], memory=[write]) == []
    assert (await service.get_session_memory(session.id, "k")).value == 1
