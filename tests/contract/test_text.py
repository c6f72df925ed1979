"""Text both backends store alike: a NUL character is refused as a usage error (PostgreSQL cannot
store it), in plain text and inside JSON, and nothing of the refused write remains; so is text
that is not Unicode (a lone surrogate), in writes and in reads."""

from __future__ import annotations

import pytest

from tests.support import Factory
from tether.core.clock import ManualClock
from tether.core.errors import UsageError
from tether.core.memory import MemoryScope
from tether.core.message import Role
from tether.store.base import Store


async def test_a_message_with_a_nul_character_is_refused_and_not_written(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    clock.advance(5)
    with pytest.raises(UsageError, match="NUL"):
        await store.add_message(
            session_id=session.id, owner=None, role=Role.USER, content="a\x00b", now=clock.now()
        )
    with pytest.raises(UsageError, match="NUL"):
        await store.add_message(
            session_id=session.id,
            owner=None,
            role=Role.USER,
            content="fine",
            now=clock.now(),
            metadata={"note": "x\x00y"},
        )
    assert await store.list_messages(session.id) == []
    stored = await store.get_session(session.id)
    assert stored is not None and stored.last_activity_at == session.last_activity_at
    # the store is still usable, and an escaped backslash before "u0000" is ordinary text
    message = await store.add_message(
        session_id=session.id, owner=None, role=Role.USER, content="\\u0000", now=clock.now()
    )
    assert (await store.list_messages(session.id)) == [message]
    assert message.seq == 1


async def test_memory_values_and_reads_with_a_nul_character_are_refused(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    with pytest.raises(UsageError, match="NUL"):
        await store.put_memory(
            scope=MemoryScope.SESSION,
            scope_id=session.id,
            key="k",
            value={"list": ["ok", "\x00"]},
            owner=None,
            now=clock.now(),
        )
    with pytest.raises(UsageError, match="NUL"):
        await store.get_memory(scope=MemoryScope.SESSION, scope_id=session.id, key="k\x00")
    assert (await store.get_memory(scope=MemoryScope.SESSION, scope_id=session.id, key="k")) is None


async def test_text_with_a_lone_surrogate_is_refused_in_writes_and_reads(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    with pytest.raises(UsageError, match="not valid Unicode"):
        await store.add_message(
            session_id=session.id, owner=None, role=Role.USER, content="a\ud800", now=clock.now()
        )
    with pytest.raises(UsageError, match="not valid Unicode"):
        await store.get_memory(scope=MemoryScope.SESSION, scope_id=session.id, key="k\udcff")
    with pytest.raises(UsageError, match="not valid Unicode"):
        await store.list_sessions(owner="bad\udcff", now=clock.now())
    assert await store.list_messages(session.id) == []
    message = await store.add_message(
        session_id=session.id, owner=None, role=Role.USER, content="fine", now=clock.now()
    )
    assert (await store.list_messages(session.id)) == [message]
