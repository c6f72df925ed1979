"""The adapters' fast reads, on both backends: the conversation's tail as stored (JSON as its
exact text, decoded by the caller) and the memory a session sees (its own, its app's, its
user's) in one read."""

from __future__ import annotations

import json

from tests.support import OWNER, Factory
from tether.core.clock import ManualClock
from tether.core.memory import MemoryScope, MemoryWrite
from tether.core.message import NewMessage, Role
from tether.store.base import Store


async def test_stored_messages_are_the_tail_with_items_as_stored(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    item = {"type": "function_call", "z": 1.5, "a": [None, True], "id": "c1"}
    await store.add_messages(
        session_id=session.id,
        owner=OWNER,
        messages=[
            NewMessage(Role.USER, "one"),
            NewMessage(Role.ASSISTANT, "calling", {"tool_calls": []}, item),
            NewMessage(Role.TOOL, "three", {"tool_call_id": "c1"}),
            NewMessage(Role.USER, "popped"),
        ],
        now=clock.now(),
    )
    await store.pop_message(session.id, owner=OWNER, now=clock.now())
    rows = await store.stored_messages(session.id, owner=OWNER, limit=10)
    assert [(r[1], r[2], r[3]) for r in rows] == [
        (3, "tool", "three"),
        (2, "assistant", ""),  # the text of a message carrying an item: the item says it
        (1, "user", "one"),
    ]
    assert json.loads(rows[0][4]) == {"tool_call_id": "c1"} and rows[0][5] is None
    assert rows[1][5] is not None and list(json.loads(rows[1][5]).items()) == list(item.items())
    messages = await store.list_messages(session.id, newest_first=True)
    assert [r[0] for r in rows] == [m.id for m in messages]
    older = await store.stored_messages(session.id, owner=OWNER, limit=1, before_seq=3)
    assert [r[1] for r in older] == [2]
    bare = await store.stored_messages(session.id, owner=OWNER, limit=10, items=False)
    assert [r[:5] for r in bare] == [r[:5] for r in rows]  # all but the items
    assert [r[5] for r in bare] == [None, None, None]


async def test_stored_messages_leave_out_a_clear_and_another_owner(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    await make.message(session.id, "before")
    await store.clear_messages(session.id, owner=OWNER, now=clock.now())
    await make.message(session.id, "after")
    rows = await store.stored_messages(session.id, owner=OWNER, limit=10)
    assert [r[3] for r in rows] == ["after"]
    assert await store.stored_messages(session.id, owner="bob", limit=10) == []
    assert await store.stored_messages("no-such-session", owner=OWNER, limit=10) == []


async def test_layered_memory_reads_the_three_scopes_a_session_sees(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    other = await make.session()
    await store.add_messages(
        session_id=session.id,
        owner=OWNER,
        messages=[],
        now=clock.now(),
        memory=[
            MemoryWrite(MemoryScope.SESSION, session.id, "k", 1),
            MemoryWrite(MemoryScope.SESSION, session.id, "hidden", 2, ("adk",)),
            MemoryWrite(MemoryScope.APP, "app", "flag", True),
            MemoryWrite(MemoryScope.APP, "other-app", "flag", False),
            MemoryWrite(MemoryScope.USER, OWNER, "pref", "dark", ("adk", "app", "u1")),
            MemoryWrite(MemoryScope.USER, OWNER, "pref", "light", ("adk", "app", "u2")),
        ],
    )
    await store.put_memory(
        scope=MemoryScope.SESSION, scope_id=other.id, key="k", value=3, owner=OWNER, now=clock.now()
    )
    await store.put_memory(
        scope=MemoryScope.APP, scope_id="app", key="flag", value=False, owner="bob", now=clock.now()
    )
    items = await store.layered_memory(
        session.id, owner=OWNER, app="app", user_namespace=("adk", "app", "u1")
    )
    seen = sorted((i.scope.value, i.scope_id, i.namespace, i.key, i.value) for i in items)
    assert seen == [
        ("app", "app", (), "flag", True),
        ("session", session.id, (), "k", 1),
        ("session", session.id, ("adk",), "hidden", 2),
        ("user", OWNER, ("adk", "app", "u1"), "pref", "dark"),
    ]
    theirs = await store.layered_memory(
        session.id, owner="bob", app="app", user_namespace=("adk", "app", "u1")
    )
    # bob sees his own app and user memory, never the session memory of OWNER's session
    assert [(i.scope.value, i.key, i.value) for i in theirs] == [("app", "flag", False)]


async def test_session_tail_is_the_stored_tail_and_the_layered_memory_in_one_read(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    await store.add_messages(
        session_id=session.id,
        owner=OWNER,
        messages=[NewMessage(Role.USER, str(i), {}, {"n": i}) for i in range(5)],
        now=clock.now(),
        memory=[
            MemoryWrite(MemoryScope.SESSION, session.id, "k", 1),
            MemoryWrite(MemoryScope.APP, "app", "flag", True),
            MemoryWrite(MemoryScope.USER, OWNER, "pref", "dark", ("adk", "app", "u1")),
        ],
    )
    namespace = ("adk", "app", "u1")
    for items in (True, False):
        rows, memory = await store.session_tail(
            session.id, owner=OWNER, limit=3, items=items, app="app", user_namespace=namespace
        )
        assert rows == await store.stored_messages(session.id, owner=OWNER, limit=3, items=items)
        assert [r[1] for r in rows] == [5, 4, 3]
        assert memory == await store.layered_memory(
            session.id, owner=OWNER, app="app", user_namespace=namespace
        )
        assert sorted(i.key for i in memory) == ["flag", "k", "pref"]
    rows, _ = await store.session_tail(
        session.id, owner="bob", limit=3, items=True, app="app", user_namespace=namespace
    )
    assert rows == []  # another owner's conversation reads as empty
