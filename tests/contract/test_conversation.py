"""The conversation at the store, on both backends: structured items come back exactly as
added, batches append in one transaction with an event per message, pop and clear take messages
out of what the conversation returns (recorded as events, the rows kept), and tail reads page
backwards from the newest message."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import OWNER, Backend, Factory
from tether.core.clock import ManualClock
from tether.core.errors import NotFound, SessionClosed, UsageError
from tether.core.message import Message, NewMessage, Role
from tether.core.serde import from_data, to_data
from tether.store.base import Store

#: A Responses-API-like item with what JSON can hold: nested lists and objects, floats that
#: only round-trip when written exactly, a big integer, -0.0, unicode, keys out of order.
ITEM: dict[str, Any] = {
    "type": "message",
    "role": "assistant",
    "content": [
        {"type": "output_text", "text": "Hello, 世界 👋", "annotations": []},
        {"type": "output_text", "text": "second", "logprobs": [0.1, -2.5e-308, 1e300]},
    ],
    "id": "msg_1",
    "status": "completed",
    "zeta": {"b": 1, "a": 2.0, "n": None, "t": True, "big": 2**70, "neg": -0.0},
}


def exact(value: Any) -> Any:
    """value with every number tagged by its type: equal only when types match too (1 != 1.0,
    True != 1, -0.0 != 0.0)."""
    if isinstance(value, dict):
        return [(k, exact(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [exact(v) for v in value]
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, value)


async def test_an_item_comes_back_exactly_as_added(store: Store, make: Factory) -> None:
    session = await make.session()
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"x": 1.50}'}
    added = await store.add_message(
        session_id=session.id,
        owner=OWNER,
        role=Role.ASSISTANT,
        content="Hello",
        now=make.clock.now(),
        item=ITEM,
    )
    batch = await store.add_messages(
        session_id=session.id,
        owner=OWNER,
        messages=[NewMessage(Role.ASSISTANT, "", {}, call), NewMessage(Role.USER, "plain")],
        now=make.clock.now(),
    )
    assert exact(added.item) == exact(ITEM)
    forward = await store.list_messages(session.id)
    backward = await store.list_messages(session.id, newest_first=True)
    assert [exact(m.item) for m in forward] == [exact(ITEM), exact(call), exact(None)]
    assert [m.seq for m in backward] == [3, 2, 1]
    assert exact(backward[2].item) == exact(ITEM)
    assert [m.seq for m in batch] == [2, 3]
    assert batch[1].item is None


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"))
)
KEYS = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=8)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
JSON_OBJECTS = st.dictionaries(KEYS, JSON_VALUES, max_size=6)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(item=JSON_OBJECTS, batched=st.booleans())
def test_any_json_object_round_trips(
    store: Store, loop: asyncio.AbstractEventLoop, clock: ManualClock, item: Any, batched: bool
) -> None:
    async def round_trip() -> None:
        session = await Factory(store, clock).session()
        if batched:
            given_ = [NewMessage(Role.USER, "", {}, item), NewMessage(Role.USER, "x", {}, item)]
            await store.add_messages(
                session_id=session.id, owner=OWNER, messages=given_, now=clock.now()
            )
        else:
            await store.add_message(
                session_id=session.id,
                owner=OWNER,
                role=Role.USER,
                content="",
                now=clock.now(),
                item=item,
            )
        stored = await store.list_messages(session.id, limit=1, newest_first=True)
        assert exact(stored[0].item) == exact(item)
        assert json.dumps(stored[0].item) == json.dumps(item)  # key order too

    loop.run_until_complete(round_trip())


async def test_a_batch_appends_in_order_with_one_event_per_message(
    store: Store, make: Factory
) -> None:
    session = await make.session()
    await make.message(session.id, "before")
    added = await store.add_messages(
        session_id=session.id,
        owner=OWNER,
        messages=[NewMessage(Role.USER, f"m{n}") for n in range(100)],
        now=make.clock.now(),
    )
    assert [m.seq for m in added] == list(range(2, 102))
    assert [m.content for m in await store.list_messages(session.id, limit=200)] == [
        "before",
        *[f"m{n}" for n in range(100)],
    ]
    events = await store.list_events(session_id=session.id, limit=1000)
    added_events = [e for e in events if e.type == "message.added"]
    assert [e.data["message"]["seq"] for e in added_events] == list(range(1, 102))
    # Each event carries its message, in the form every other message event has.
    assert [from_data(Message, e.data["message"]) for e in added_events[1:]] == added
    assert added_events[1].data == to_data({"message": added[0]})


async def test_a_batch_is_one_transaction(store: Store, make: Factory) -> None:
    session = await make.session()
    bad = [NewMessage(Role.USER, "fine"), NewMessage(Role.USER, "nul \x00 inside")]
    with pytest.raises(UsageError):
        await store.add_messages(
            session_id=session.id, owner=OWNER, messages=bad, now=make.clock.now()
        )
    assert await store.list_messages(session.id) == []
    assert [e.type for e in await store.list_events(session_id=session.id)] == ["session.created"]
    again = await store.add_message(
        session_id=session.id, owner=OWNER, role=Role.USER, content="x", now=make.clock.now()
    )
    assert again.seq == 1  # the refused batch took no seq


async def test_pop_takes_the_newest_out_and_keeps_it_for_the_audit(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    for text in ("one", "two", "three"):
        await make.message(session.id, text)
    clock.advance(5)
    popped = await store.pop_message(session.id, owner=OWNER, now=clock.now())
    assert popped is not None and (popped.seq, popped.content) == (3, "three")
    assert popped.removed_at == clock.now()
    assert [m.content for m in await store.list_messages(session.id)] == ["one", "two"]
    tail = await store.list_messages(session.id, limit=1, newest_first=True)
    assert [m.content for m in tail] == ["two"]
    everything = await store.list_messages(session.id, include_removed=True)
    assert [(m.content, m.removed_at) for m in everything] == [
        ("one", None),
        ("two", None),
        ("three", clock.now()),
    ]
    event = (await store.list_events(session_id=session.id))[-1]
    assert (event.type, event.data) == ("message.removed", {"message_id": popped.id, "seq": 3})
    stored = await store.get_session(session.id)
    assert stored is not None and stored.last_activity_at == clock.now()
    # The next message still takes the next seq: nothing is renumbered.
    after = await make.message(session.id, "four")
    assert after.seq == 4
    assert [m.content for m in await store.list_messages(session.id)] == ["one", "two", "four"]


async def test_pop_of_an_empty_conversation_changes_nothing(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    clock.advance(5)
    assert await store.pop_message(session.id, owner=OWNER, now=clock.now()) is None
    assert await store.clear_messages(session.id, owner=OWNER, now=clock.now()) == 0
    stored = await store.get_session(session.id)
    assert stored is not None and stored.last_activity_at == session.last_activity_at
    assert [e.type for e in await store.list_events(session_id=session.id)] == ["session.created"]


async def test_clear_takes_everything_out_and_later_messages_read_alone(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    for n in range(5):
        await make.message(session.id, f"m{n}")
    await store.pop_message(session.id, owner=OWNER, now=clock.now())
    clock.advance(1)
    assert await store.clear_messages(session.id, owner=OWNER, now=clock.now()) == 4
    assert await store.list_messages(session.id) == []
    assert await store.list_messages(session.id, newest_first=True) == []
    assert await store.pop_message(session.id, owner=OWNER, now=clock.now()) is None
    event = (await store.list_events(session_id=session.id))[-1]
    assert event.type == "messages.cleared"
    assert event.data == {"after_seq": 0, "through_seq": 5, "removed": 4}
    await make.message(session.id, "fresh")
    assert [(m.seq, m.content) for m in await store.list_messages(session.id)] == [(6, "fresh")]
    assert await store.clear_messages(session.id, owner=OWNER, now=clock.now()) == 1
    second = (await store.list_events(session_id=session.id))[-1]
    assert second.data == {"after_seq": 5, "through_seq": 6, "removed": 1}
    everything = await store.list_messages(session.id, include_removed=True)
    assert [m.seq for m in everything] == [1, 2, 3, 4, 5, 6]
    assert all(m.removed_at is not None for m in everything)


async def test_tail_reads_page_backwards_from_the_newest(store: Store, make: Factory) -> None:
    session = await make.session()
    await store.add_messages(
        session_id=session.id,
        owner=OWNER,
        messages=[NewMessage(Role.USER, f"m{n}") for n in range(1, 11)],
        now=make.clock.now(),
    )
    newest = await store.list_messages(session.id, limit=3, newest_first=True)
    assert [m.seq for m in newest] == [10, 9, 8]
    before = await store.list_messages(session.id, limit=3, newest_first=True, before_seq=8)
    assert [m.seq for m in before] == [7, 6, 5]
    window = await store.list_messages(session.id, after_seq=2, before_seq=5)
    assert [m.seq for m in window] == [3, 4]


async def test_another_owner_reads_nothing_and_removes_nothing(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session(owner="alice")
    await make.message(session.id, "private")
    assert await store.list_messages(session.id, owner="bob") == []
    assert await store.list_messages(session.id, owner="bob", include_removed=True) == []
    assert len(await store.list_messages(session.id, owner="alice")) == 1
    with pytest.raises(NotFound):
        await store.pop_message(session.id, owner="bob", now=clock.now())
    with pytest.raises(NotFound):
        await store.clear_messages(session.id, owner="bob", now=clock.now())
    with pytest.raises(NotFound):
        await store.add_messages(
            session_id=session.id,
            owner="bob",
            messages=[NewMessage(Role.USER, "x")],
            now=clock.now(),
        )
    assert len(await store.list_messages(session.id)) == 1


async def test_a_closed_session_refuses_batches_pops_and_clears(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    await make.message(session.id, "kept")
    await store.close_session(session.id, owner=OWNER, now=clock.now())
    with pytest.raises(SessionClosed):
        await store.pop_message(session.id, owner=OWNER, now=clock.now())
    with pytest.raises(SessionClosed):
        await store.clear_messages(session.id, owner=OWNER, now=clock.now())
    with pytest.raises(SessionClosed):
        await store.add_messages(
            session_id=session.id,
            owner=OWNER,
            messages=[NewMessage(Role.USER, "x")],
            now=clock.now(),
        )
    assert [m.content for m in await store.list_messages(session.id)] == ["kept"]


async def test_pops_racing_appends_each_take_one_message(
    backend: Backend, db_url: str, make: Factory, clock: ManualClock
) -> None:
    """Appends and pops from two stores (two connections, or pools) on one database: every
    pop takes a distinct message, and the conversation is what was added minus what was popped.
    """
    session = await make.session()
    other = backend.open(db_url)
    try:
        stores = [make.store, other]

        async def append(n: int) -> None:
            await stores[n % 2].add_message(
                session_id=session.id,
                owner=OWNER,
                role=Role.USER,
                content=f"m{n}",
                now=clock.now(),
            )

        async def pop(n: int) -> str | None:
            popped = await stores[n % 2].pop_message(session.id, owner=OWNER, now=clock.now())
            return None if popped is None else popped.id

        for n in range(10):
            await append(100 + n)
        jobs: list[Any] = []
        for n in range(20):
            jobs.append(append(n))
            jobs.append(pop(n))
        results = await asyncio.gather(*jobs)
        popped = [r for r in results if isinstance(r, str)]
        assert len(popped) == len(set(popped)) == 20  # 30 added, 20 popped, none twice
        live = await make.store.list_messages(session.id, limit=100)
        everything = await make.store.list_messages(session.id, limit=100, include_removed=True)
        assert len(everything) == 30
        assert {m.id for m in everything if m.removed_at is not None} == set(popped)
        assert [m.id for m in live] == [m.id for m in everything if m.id not in set(popped)]
        removed_events = [
            e
            for e in await make.store.list_events(session_id=session.id, limit=1000)
            if e.type == "message.removed"
        ]
        assert sorted(e.data["message_id"] for e in removed_events) == sorted(popped)
    finally:
        await other.close()


#: A run id as any text: tether's own are UUIDs, but nothing a read does may depend on it.
RUN_IDS = st.none() | st.sampled_from(["", "{", "[1]", '{"a":1}', "null", "r1"]) | KEYS
#: Metadata PostgreSQL's jsonb keeps as given (one key: jsonb orders keys; no floats: it writes
#: 1e300 as an integer); what jsonb does to any other object is the same on every read path.
METADATA = st.dictionaries(
    KEYS,
    st.recursive(
        st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | KEYS,
        lambda inner: st.lists(inner, max_size=3),
        max_leaves=6,
    ),
    max_size=1,
)
MESSAGES = st.lists(
    st.tuples(
        st.sampled_from(list(Role)),
        st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
        METADATA,
        st.none() | JSON_OBJECTS,
        RUN_IDS,
        st.integers(min_value=0, max_value=2_000_000),
    ),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(messages=MESSAGES, popped=st.integers(min_value=0, max_value=3))
def test_a_conversation_reads_back_what_its_appends_returned(
    store: Store,
    loop: asyncio.AbstractEventLoop,
    clock: ManualClock,
    messages: list[tuple[Role, str, dict[str, Any], Any, str | None, int]],
    popped: int,
) -> None:
    """Every way of reading a conversation (kept or all, either order) gives each message as
    its append returned it, popped ones with their removal time: metadata and items with their
    numbers' types and keys' order, each message its own metadata dict."""

    async def check() -> None:
        session = await Factory(store, clock).session()
        added: list[Message] = []
        for role, content, metadata, item, run_id, step in messages:
            clock.advance(step / 1e6)  # equal times, a microsecond apart, seconds apart
            added.append(
                await store.add_message(
                    session_id=session.id,
                    owner=OWNER,
                    role=role,
                    content=content,
                    now=clock.now(),
                    run_id=run_id,
                    metadata=metadata,
                    item=item,
                )
            )
        for _ in range(popped):
            clock.advance(1)
            taken = await store.pop_message(session.id, owner=OWNER, now=clock.now())
            if taken is not None:
                added[taken.seq - 1] = taken
        kept = [m for m in added if m.removed_at is None]
        for include_removed, expected in ((True, added), (False, kept)):
            for newest_first in (False, True):
                read = await store.list_messages(
                    session.id,
                    limit=100,
                    include_removed=include_removed,
                    newest_first=newest_first,
                )
                assert read == (expected[::-1] if newest_first else expected)
                if newest_first:
                    read.reverse()
                assert [type(m) for m in read] == [Message] * len(expected)
                assert [(exact(m.metadata), exact(m.item)) for m in read] == [
                    (exact(m.metadata), exact(m.item)) for m in expected
                ]
                assert len({id(m.metadata) for m in read}) == len(read)

    loop.run_until_complete(check())


async def test_imported_metadata_that_is_not_an_object_reads_back(
    store: Store, make: Factory, backend: Backend
) -> None:
    # (an import stores a message's metadata as the archive has it; so did older versions)
    session = await make.session()
    for _ in range(3):
        await store.add_message(
            session_id=session.id, owner=OWNER, role=Role.USER, content="hi", now=make.clock.now()
        )
    archive = await store.export_session(session.id, owner=OWNER)
    shapes: list[Any] = [["{}", None, 5], [1, "two"], "text"]
    for message, metadata in zip(archive["messages"], shapes, strict=True):
        message["metadata"] = metadata
    other = backend.open(backend.new_url())
    try:
        await other.import_session(archive, owner=None)
        for newest_first in (False, True):
            read = await other.list_messages(session.id, newest_first=newest_first)
            assert sorted((m.seq, m.metadata) for m in read) == [
                (1, ["{}", None, 5]),
                (2, [1, "two"]),
                (3, "text"),
            ]
    finally:
        await other.close()
