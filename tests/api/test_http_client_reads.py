"""A conversation read through the client is the library's, record for record: every field,
metadata and structured items, removed messages, any unicode, in the sync and async clients,
whole or by its tail."""

from __future__ import annotations

import asyncio
from typing import Any

import tether
from tests.api.httpkit import Server
from tether.client.records import message_from_data, messages_from_data
from tether.core.message import Message
from tether.core.serde import from_data, to_data

TEXTS = ("plain", "世界 👍🏽 e\u0301", "line\nbreak \u2028 \x1b[31m", "", "x" * 3000)


def fill(session: tether.SessionHandle) -> None:
    """Messages of every kind, some taken out of the conversation."""
    session.messages.add_many(
        [
            {"role": role, "content": text, "metadata": {"n": n, "tags": ["a", text]}}
            for n, (role, text) in enumerate(
                (role, text) for role in ("user", "assistant", "system") for text in TEXTS
            )
        ]
    )
    session.messages.add(item={"type": "function_call", "call_id": "c1", "name": "f"})
    session.messages.add(item={"type": "message", "role": "user", "content": "hi 世界"})
    session.messages.add("tool", "result", metadata={"tool_call_id": "c1"})
    session.messages.pop()
    session.messages.add("user", "after the pop")


def test_the_client_reads_the_records_the_library_reads(server: Server) -> None:
    with tether.connect(server.url, api_key=server.keys["alice"]) as remote:
        session = remote.sessions.create(title="reads")
        fill(session)
        read = remote.sessions.get(session.id).messages
        over_http = (
            read.list(),
            read.list(include_removed=True),
            read.tail(5),
            read.tail(4, before=9),
        )

    async def read_async() -> tuple[list[Message], ...]:
        async with tether.connect_async(server.url, api_key=server.keys["alice"]) as att:
            messages = (await att.sessions.get(session.id)).messages
            return (
                await messages.list(),
                await messages.list(include_removed=True),
                await messages.tail(5),
                await messages.tail(4, before=9),
            )

    with tether.open(server.db, owner="alice", worker=False) as local:
        read = local.sessions.get(session.id).messages
        library = (
            read.list(),
            read.list(include_removed=True),
            read.tail(5),
            read.tail(4, before=9),
        )
    assert over_http == library == asyncio.run(read_async())
    whole, with_removed = library[:2]
    assert len(with_removed) == len(whole) + 1 and with_removed[-2].removed_at is not None
    assert [m.content for m in whole[:5]] == list(TEXTS)
    assert {m.item["type"] for m in whole if m.item} == {"function_call", "message"}


def test_a_message_is_built_as_from_data_builds_it() -> None:
    with tether.open(":memory:", worker=False) as tt:
        session = tt.sessions.create()
        fill(session)
        records = session.messages.list(include_removed=True)
    page: list[dict[str, Any]] = to_data(records)
    page[3] = {k: v for k, v in page[3].items() if k != "metadata"}  # one from an older server
    page[4] = {**page[4], "role": None}  # one from_data makes without a role
    assert messages_from_data(page) == [from_data(Message, d) for d in page]
    assert messages_from_data(page)[5:] == records[5:]
    for message in records:
        data: dict[str, Any] = to_data(message)
        assert message_from_data(data) == from_data(Message, data) == message
        # a server older than a field: the field's default, as from_data gives it
        older = {k: v for k, v in data.items() if k not in ("item", "removed_at", "run_id")}
        assert message_from_data(older) == from_data(Message, older)
        nulls = {**data, "run_id": None, "removed_at": None, "item": None}
        assert message_from_data(nulls) == from_data(Message, nulls)
