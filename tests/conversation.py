"""One walk through the conversation API of the library facade, run by the tests on a local
database (``tether.open``), over HTTP (``tether.connect``) and with the async twin: the same
calls must give the same answers whatever the backend."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tether
from tether.core.errors import AlreadyExists, NotFound, UsageError
from tether.core.message import Role

#: A Responses-API message with list content, keys out of order, a float that must stay 1.0.
ITEM: dict[str, Any] = {
    "type": "message",
    "role": "user",
    "content": [{"type": "input_text", "text": "Hi"}, {"type": "input_text", "text": "there"}],
    "z": {"score": 1.0, "big": 2**64, "ε": "ünï"},
    "a": [None, True, -0.0],
}
CALL = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}


def walkthrough(tt: tether.Tether, key: str) -> None:
    """Keys, get-or-create, items, batches, tail reads, pop and clear, app memory."""
    s = tt.sessions.get_or_create(key, title="keyed", app="shop")
    assert (s.external_key, s.app, s.title) == (key, "shop", "keyed")
    assert tt.sessions.get_or_create(key, title="other").id == s.id
    assert tt.sessions.get(key=key).id == s.id
    with pytest.raises(NotFound):
        tt.sessions.get(key=s.id)  # an id is not a key
    with pytest.raises(UsageError):
        tt.sessions.get(s.id, key=key)
    with pytest.raises(AlreadyExists):
        tt.sessions.create(external_key=key)
    assert [x.id for x in tt.sessions.list(query=key)] == [s.id]
    assert [x.id for x in tt.sessions.list(app="shop", key_prefix=key)] == [s.id]

    first = s.messages.add(item=ITEM)
    assert (first.role, first.content) == (Role.USER, "Hi\nthere")
    assert json.dumps(first.item) == json.dumps(ITEM) and first.item == ITEM
    plain = s.messages.add("assistant", "noted", source="test")
    assert plain.metadata == {"source": "test"} and plain.item is None
    items: list[dict[str, Any]] = [
        {"item": CALL},
        {"role": "tool", "content": "42", "metadata": {"tool_call_id": "c1"}},
    ]
    batch = s.messages.add_many(items + [{"content": f"m{n}"} for n in range(10)])
    assert [m.seq for m in batch] == list(range(3, 15))
    listed = s.messages.list()
    assert [m.seq for m in listed] == list(range(1, 15))
    assert json.dumps(listed[0].item) == json.dumps(ITEM)
    assert [m.seq for m in s.messages.tail(3)] == [12, 13, 14]
    assert [m.seq for m in s.messages.tail(2, before=3)] == [1, 2]
    assert [m.seq for m in s.messages.tail(100)] == list(range(1, 15))

    popped = s.messages.pop()
    assert popped is not None and popped.seq == 14 and popped.removed_at is not None
    assert [m.seq for m in s.messages.tail(1)] == [13]
    assert s.messages.clear() == 13
    assert s.messages.list() == [] and s.messages.pop() is None and s.messages.clear() == 0
    assert len(s.messages.list(include_removed=True)) == 14
    assert [e.type for e in s.events()][-2:] == ["message.removed", "messages.cleared"]

    s.app_memory["currency"] = "EUR"
    assert tt.app_memory("shop")["currency"] == "EUR"
    assert dict(tt.app_memory("shop")) == {"currency": "EUR"}
    del tt.app_memory("shop")["currency"]
    with pytest.raises(KeyError):
        tt.app_memory("shop")["currency"]
    moved = s.update(external_key=f"{key}-moved", app=None)
    assert (moved.external_key, moved.app) == (f"{key}-moved", None)
    with pytest.raises(UsageError, match="no app"):
        moved.app_memory  # noqa: B018 -- the property is what refuses
    with pytest.raises(NotFound):
        tt.sessions.get(key=key)


async def async_walkthrough(tt: tether.AsyncTether, key: str) -> None:
    """The same calls through the async twin."""
    s = await tt.sessions.get_or_create(key, app="shop")
    assert (await tt.sessions.get_or_create(key)).id == s.id
    assert (await tt.sessions.get(key=key)).id == s.id
    first = await s.messages.add(item=ITEM)
    assert json.dumps(first.item) == json.dumps(ITEM)
    await s.messages.add_many([{"content": f"m{n}"} for n in range(5)])
    assert [m.seq for m in await s.messages.tail(2)] == [5, 6]
    assert [m.seq for m in await s.messages.tail(2, before=2)] == [1]
    popped = await s.messages.pop()
    assert popped is not None and popped.seq == 6
    assert await s.messages.clear() == 5
    assert await s.messages.list() == []
    await s.app_memory.set("k", [1, 2])
    assert await tt.app_memory("shop").get("k") == [1, 2]
    assert [i.key for i in await tt.app_memory("shop").items()] == ["k"]
    await tt.app_memory("shop").delete("k")
    assert await tt.app_memory("shop").get("k", "gone") == "gone"
    assert [x.id for x in await tt.sessions.list(key_prefix=key)] == [s.id]
