"""TetherSession: the Agents SDK's Session protocol over a tether session — items come back
exactly as added, pop and clear are recorded removals, the SDK's session id is the tether
session's external key, and the Runner's conversation is tether's."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

import tether
from tests.integrations import framework
from tests.pg import Databases
from tether.core.event import EventType
from tether.core.message import Role

framework("agents", "openai-agents")

from agents import Agent, Runner  # noqa: E402
from agents.items import TResponseInputItem  # noqa: E402
from agents.memory import Session  # noqa: E402
from agents.testing import ScriptedModel, assistant_message  # noqa: E402

from tether.integrations.openai_agents import TetherSession  # noqa: E402

pytestmark = pytest.mark.usefixtures("close_the_default_loop")

#: Responses-API items of every shape a conversation holds.
ITEMS: list[Any] = [
    {"role": "user", "content": "What is 2 + 2?"},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "Look at this"},
            {"type": "input_image", "image_url": "https://example.test/a.png", "detail": "auto"},
        ],
    },
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Adding two numbers."}],
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "add",
        "arguments": '{"a": 2, "b": 2}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "4"},
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "It is 4.", "annotations": [], "logprobs": []}],
    },
    {"role": "developer", "content": "Answer briefly.", "score": 0.5, "tags": None},
]


def content(item: TResponseInputItem) -> object:
    """The content of an item that has one (every item the tests add is a message)."""
    return dict(item)["content"]


@pytest.fixture
def tt(tmp_path: Path) -> Any:
    opened = tether.open(tmp_path / "t.db", worker=False)
    yield opened
    opened.close()


async def test_it_is_a_session_and_items_come_back_exactly_as_added(tt: tether.Tether) -> None:
    session = TetherSession("user_123", tt)
    assert isinstance(session, Session)
    await session.add_items(ITEMS)
    assert await session.get_items() == ITEMS
    assert await session.get_items(limit=2) == ITEMS[-2:]
    assert await session.get_items(limit=0) == []
    # as tether messages: each shows a role and its text, and carries the item
    shown = [(m.role, m.content) for m in tt.sessions.get(key="user_123").messages.list()]
    assert shown == [
        (Role.USER, "What is 2 + 2?"),
        (Role.USER, "Look at this"),
        (Role.ASSISTANT, "Adding two numbers."),
        (Role.ASSISTANT, ""),
        (Role.TOOL, "4"),
        (Role.ASSISTANT, "It is 4."),
        (Role.SYSTEM, "Answer briefly."),
    ]
    session.close()


async def test_session_settings_limit_reads_the_newest_items(tt: tether.Tether) -> None:
    session = TetherSession("limited", tt, session_settings={"limit": 3})
    await session.add_items([{"role": "user", "content": str(i)} for i in range(10)])
    assert [content(item) for item in await session.get_items()] == ["7", "8", "9"]
    assert len(await session.get_items(limit=5)) == 5
    session.close()


async def test_messages_written_without_an_item_read_as_items(tt: tether.Tether) -> None:
    session = TetherSession("mixed", tt)
    await session.add_items([ITEMS[0]])
    handle = tt.sessions.get(key="mixed")
    handle.messages.add("assistant", "a native agent's answer")
    handle.messages.add("tool", "42", tool_call_id="call_9")
    await session.add_items([ITEMS[4]])
    assert await session.get_items() == [
        ITEMS[0],
        {"role": "assistant", "content": "a native agent's answer"},
        {"type": "function_call_output", "call_id": "call_9", "output": "42"},
        ITEMS[4],
    ]
    assert await session.get_items(limit=2) == [
        {"type": "function_call_output", "call_id": "call_9", "output": "42"},
        ITEMS[4],
    ]
    session.close()


async def test_a_long_conversation_reads_whole_and_by_its_tail(tt: tether.Tether) -> None:
    session = TetherSession("long", tt)
    items: list[TResponseInputItem] = [{"role": "user", "content": str(i)} for i in range(2_345)]
    await session.add_items(items)
    assert await session.get_items() == items
    assert await session.get_items(limit=1_500) == items[-1_500:]
    session.close()


async def test_pop_and_clear_are_recorded_removals(tt: tether.Tether) -> None:
    session = TetherSession("audited", tt)
    await session.add_items(ITEMS[:3])
    assert await session.pop_item() == ITEMS[2]
    assert await session.get_items() == ITEMS[:2]
    await session.clear_session()
    assert await session.get_items() == []
    assert await session.pop_item() is None
    handle = tt.sessions.get(key="audited")
    kinds = [e.type for e in handle.events()]
    assert kinds.count(EventType.MESSAGE_REMOVED) == 1
    assert kinds.count(EventType.MESSAGES_CLEARED) == 1
    kept = handle.messages.list(include_removed=True)
    assert [m.item for m in kept] == ITEMS[:3]  # the audit trail keeps every item
    assert all(m.removed_at is not None for m in kept)
    await session.add_items([ITEMS[0]])  # the conversation goes on after a clear
    assert await session.get_items() == [ITEMS[0]]
    session.close()


async def test_the_session_id_is_the_external_key(tt: tether.Tether, tmp_path: Path) -> None:
    reader = TetherSession("user_456", tt)
    assert await reader.get_items() == [] and await reader.pop_item() is None
    assert tt.sessions.list(key_prefix="user_") == []  # reading creates nothing
    path = tmp_path / "t.db"
    one, two = TetherSession("user_456", path), TetherSession("user_456", path)
    other = TetherSession("user_789", path)
    await one.add_items([ITEMS[0]])
    await two.add_items([ITEMS[4]])
    assert await one.get_items() == await two.get_items() == [ITEMS[0], ITEMS[4]]
    assert await other.get_items() == []
    found = tt.sessions.get(key="user_456")
    assert found.id == one.tether_session_id == two.tether_session_id
    assert [s.external_key for s in tt.sessions.list(key_prefix="user_")] == ["user_456"]
    for session in (reader, one, two, other):
        session.close()


async def test_a_closed_session_refuses_calls_and_closing_twice_is_fine() -> None:
    session = TetherSession("closing")  # :memory:, private to the instance
    await session.add_items([ITEMS[0]])
    session.close()
    session.close()
    with pytest.raises(tether.UsageError, match="closed"):
        await session.add_items([])


@pytest.mark.parametrize("operation", ["add", "pop", "clear"])
async def test_a_write_cancelled_while_it_waits_for_the_file_lock_still_ends(
    tmp_path: Path, operation: str
) -> None:
    path = tmp_path / "t.db"
    session = TetherSession("waits", path)
    await session.add_items([ITEMS[0]])
    other = sqlite3.connect(path, isolation_level=None)  # another process's writer, as it were
    other.execute("BEGIN IMMEDIATE")
    calls: dict[str, Callable[[], Coroutine[Any, Any, Any]]] = {
        "add": lambda: session.add_items([ITEMS[4]]),
        "pop": session.pop_item,
        "clear": session.clear_session,
    }
    write: asyncio.Task[Any] = asyncio.ensure_future(calls[operation]())
    try:
        await asyncio.sleep(0)  # one turn of the loop: the write starts and waits for the lock
        assert not write.done()
        write.cancel()
        other.rollback()
        with pytest.raises(asyncio.CancelledError):
            await write
    finally:
        other.close()
    expected = {"add": [ITEMS[0], ITEMS[4]], "pop": [], "clear": []}[operation]
    assert await session.get_items() == expected  # written once: no retry needed, none lost
    session.close()


def test_threads_with_their_own_loops_share_one_conversation(tmp_path: Path) -> None:
    session = TetherSession("threads", tmp_path / "t.db")
    barrier = threading.Barrier(4)

    def add(i: int) -> None:
        barrier.wait()
        asyncio.run(session.add_items([{"role": "user", "content": f"m{i}"}]))

    threads = [threading.Thread(target=add, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    found = asyncio.run(session.get_items())
    assert sorted(str(content(item)) for item in found) == ["m0", "m1", "m2", "m3"]
    session.close()


@pytest.mark.postgres
def test_a_postgresql_url_holds_the_conversation(pg_databases: Databases) -> None:
    url = pg_databases.new_url()
    try:
        session = TetherSession("pg-user", url)
        asyncio.run(session.add_items(ITEMS))
        assert asyncio.run(session.get_items(limit=3)) == ITEMS[-3:]
        session.close()
        with tether.open(url, worker=False) as tt:
            assert len(tt.sessions.get(key="pg-user").messages.list()) == len(ITEMS)
    finally:
        pg_databases.drop_made()


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(tether.UsageError, match="external_key"):
        TetherSession("")
    session = TetherSession("bad")
    not_json: Any = {"role": "user", "content": float("nan")}  # what the item types forbid
    with pytest.raises(tether.UsageError, match="not JSON"):
        asyncio.run(session.add_items([not_json]))
    session.close()


def test_the_runner_keeps_its_conversation_in_tether(tt: tether.Tether) -> None:
    model = ScriptedModel([[assistant_message("Hello!")], [assistant_message("Still here.")]])
    agent = Agent(name="greeter", instructions="Greet.", model=model)
    session = TetherSession("chat", tt)
    assert Runner.run_sync(agent, "Hi", session=session).final_output == "Hello!"
    assert Runner.run_sync(agent, "Are you there?", session=session).final_output == "Still here."
    # the second call saw the first exchange as its history
    assert [i.get("content") for i in model.calls[1].input][:1] == ["Hi"]
    shown = [(m.role, m.content) for m in tt.sessions.get(key="chat").messages.list()]
    assert shown == [
        (Role.USER, "Hi"),
        (Role.ASSISTANT, "Hello!"),
        (Role.USER, "Are you there?"),
        (Role.ASSISTANT, "Still here."),
    ]
    session.close()
