"""The conversation core through the Service, as every edge uses it: what a structured item
shows as, how input is checked, tail reads and their cursors, external keys and get-or-create,
and the app memory scope as native agents see it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.waiting import WAIT
from tether.core.errors import AlreadyExists, NotFound, UsageError
from tether.core.message import Role
from tether.core.run import Run
from tether.core.status import RunStatus
from tether.runtime import limits
from tether.runtime.agent import AgentRegistry
from tether.runtime.run_context import RunContext
from tether.runtime.service import Service

CALL = {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"c": 1}'}
RESULT = {"type": "function_call_output", "call_id": "c1", "output": "sunny"}


@pytest.mark.parametrize(
    ("item", "role", "content"),
    [
        ({"role": "user", "content": "hi"}, Role.USER, "hi"),
        ({"type": "message", "role": "developer", "content": "be brief"}, Role.SYSTEM, "be brief"),
        (
            {
                "type": "message",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": "a"},
                    {"type": "output_text", "text": "b"},
                ],
            },
            Role.ASSISTANT,
            "a\nb",
        ),
        (CALL, Role.ASSISTANT, ""),
        (RESULT, Role.TOOL, "sunny"),
        (
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]},
            Role.ASSISTANT,
            "thinking",
        ),
        ({"type": "something_new"}, Role.ASSISTANT, ""),
    ],
)
async def test_an_item_alone_gives_the_message_its_role_and_text(
    service: Service, item: dict[str, Any], role: Role, content: str
) -> None:
    session = await service.create_session()
    message = await service.add_message(session.id, item=item)
    assert (message.role, message.content, message.item) == (role, content, item)


async def test_a_given_role_or_content_wins_over_the_item(service: Service) -> None:
    session = await service.create_session()
    message = await service.add_message(session.id, "system", "shown", item=RESULT)
    assert (message.role, message.content, message.item) == (Role.SYSTEM, "shown", RESULT)
    plain = await service.add_message(session.id, content="no role: a user's")
    assert plain.role is Role.USER and plain.item is None


@pytest.mark.parametrize(
    ("item", "error"),
    [
        ([1, 2], "item must be a JSON object"),
        ({"a": (1, 2)}, "tuple"),
        ({"a": {1: "x"}}, "not a string"),
        ({"a": float("nan")}, "not JSON"),
        ({"a": {1.5}}, "set"),
    ],
)
async def test_an_item_json_cannot_hold_exactly_is_refused(
    service: Service, item: Any, error: str
) -> None:
    session = await service.create_session()
    with pytest.raises(UsageError, match=error):
        await service.add_message(session.id, item=item)


async def test_an_item_nested_too_deeply_is_refused(service: Service) -> None:
    session = await service.create_session()
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(limits.MAX_ITEM_DEPTH + 1):
        inner["x"] = {}
        inner = inner["x"]
    with pytest.raises(UsageError, match="deeper"):
        await service.add_message(session.id, item=deep)


async def test_a_message_without_content_or_item_is_refused(service: Service) -> None:
    session = await service.create_session()
    with pytest.raises(UsageError, match="content must be a string"):
        await service.add_message(session.id, "user")


async def test_batches_are_bounded_and_checked_whole(service: Service) -> None:
    session = await service.create_session()
    with pytest.raises(UsageError, match="1 to 1000 messages"):
        await service.add_messages(session.id, [])
    with pytest.raises(UsageError, match=r"1 to 1000 messages \(got 1001\)"):
        await service.add_messages(session.id, [{"content": "x"}] * 1001)
    with pytest.raises(UsageError, match=r"messages\[1\]: role must be one of"):
        await service.add_messages(
            session.id, [{"content": "x"}, {"role": "nobody", "content": "y"}]
        )
    with pytest.raises(UsageError, match=r"messages\[0\] has unknown fields: seq"):
        await service.add_messages(session.id, [{"content": "x", "seq": 3}])
    with pytest.raises(UsageError, match="a list of message objects"):
        await service.add_messages(session.id, {"content": "x"})  # type: ignore[dict-item]
    assert (await service.list_messages(session.id)).data == []
    added = await service.add_messages(
        session.id, [{"role": "user", "content": "q"}, {"item": CALL}, {"item": RESULT}]
    )
    assert [(m.seq, m.role, m.content) for m in added] == [
        (1, Role.USER, "q"),
        (2, Role.ASSISTANT, ""),
        (3, Role.TOOL, "sunny"),
    ]


async def test_tail_reads_and_their_cursors(service: Service) -> None:
    session = await service.create_session()
    await service.add_messages(session.id, [{"content": f"m{n}"} for n in range(1, 8)])
    first = await service.list_messages(session.id, limit=3, newest_first=True)
    assert [m.seq for m in first.data] == [7, 6, 5] and first.next_cursor
    second = await service.list_messages(
        session.id, limit=3, newest_first=True, cursor=first.next_cursor
    )
    assert [m.seq for m in second.data] == [4, 3, 2]
    before = await service.list_messages(session.id, limit=2, newest_first=True, before_seq=4)
    assert [m.seq for m in before.data] == [3, 2]
    forward = await service.list_messages(session.id, limit=2, before_seq=4)
    assert [m.seq for m in forward.data] == [1, 2] and forward.next_cursor
    rest = await service.list_messages(
        session.id, limit=5, before_seq=4, cursor=forward.next_cursor
    )
    assert [m.seq for m in rest.data] == [3] and rest.next_cursor is None
    with pytest.raises(UsageError, match="before_seq"):
        await service.list_messages(session.id, before_seq=0)


async def test_reading_another_owners_conversation_is_not_found(service: Service) -> None:
    session = await service.create_session()
    await service.add_message(session.id, "user", "secret")
    bob = service.for_owner("bob")
    with pytest.raises(NotFound):
        await bob.list_messages(session.id)
    with pytest.raises(NotFound):
        await bob.list_messages("01900000-0000-7000-8000-000000000000")
    with pytest.raises(NotFound):
        await bob.pop_message(session.id)
    with pytest.raises(NotFound):
        await bob.get_session_by_key("nothing")


async def test_pop_and_clear_through_the_service(service: Service) -> None:
    session = await service.create_session()
    assert await service.pop_message(session.id) is None
    await service.add_messages(session.id, [{"content": "a"}, {"content": "b"}, {"content": "c"}])
    popped = await service.pop_message(session.id)
    assert popped is not None and popped.content == "c" and popped.removed_at is not None
    assert await service.clear_messages(session.id) == 2
    assert (await service.list_messages(session.id)).data == []
    everything = await service.list_messages(session.id, include_removed=True)
    assert [m.content for m in everything.data] == ["a", "b", "c"]


async def test_external_keys_through_the_service(service: Service) -> None:
    session = await service.create_session(title="t", external_key="user_123", app="shop")
    assert (await service.get_session_by_key("user_123")).id == session.id
    again, created = await service.get_or_create_session("user_123", title="ignored")
    assert (again.id, again.title, created) == (session.id, "t", False)
    fresh, created = await service.get_or_create_session("user_456", app="shop", ttl_seconds=None)
    assert created and fresh.app == "shop" and fresh.ttl_seconds is None
    with pytest.raises(AlreadyExists):
        await service.create_session(external_key="user_123")
    bob = service.for_owner("bob")
    theirs, created = await bob.get_or_create_session("user_123")
    assert created and theirs.id != session.id
    found = await service.list_sessions(query="user_4")
    assert [s.id for s in found.data] == [fresh.id]


@pytest.mark.parametrize(
    ("key", "error"),
    [
        ("", "non-empty string"),
        ("x" * (limits.MAX_EXTERNAL_KEY + 1), "at most 256"),
        ("nul\x00", "NUL"),
        ("lone \ud800", "not valid Unicode"),
        (42, "non-empty string"),
    ],
)
async def test_a_bad_external_key_is_refused(service: Service, key: Any, error: str) -> None:
    with pytest.raises(UsageError, match=error):
        await service.create_session(external_key=key)
    with pytest.raises(UsageError, match=error):
        await service.get_or_create_session(key)


@pytest.mark.parametrize("app", ["", " shop", "a/b", "tab\there", "x" * (limits.MAX_APP + 1)])
async def test_a_bad_app_name_is_refused(service: Service, app: str) -> None:
    with pytest.raises(UsageError, match="app must be"):
        await service.create_session(app=app)
    with pytest.raises(UsageError, match="app must be"):
        await service.set_app_memory(app, "k", 1)


async def test_any_unicode_key_up_to_the_bound_is_kept(service: Service) -> None:
    prefix = "app/üser 1/会话/"
    key = prefix + "😀" * (limits.MAX_EXTERNAL_KEY - len(prefix))  # 4 bytes each in UTF-8
    assert len(key) == limits.MAX_EXTERNAL_KEY
    session = await service.create_session(external_key=key)
    assert (await service.get_session_by_key(key)).id == session.id


# -- the app scope in real runs ---------------------------------------------------------------


async def app_agent(ctx: RunContext) -> dict[str, Any]:
    seen = ctx.memory.app.to_dict()
    for key, value in ctx.input.get("write", {}).items():
        ctx.memory.app[key] = value
    context_app = {i["key"]: i["value"] for i in ctx.context["app_memory"]}
    return {"seen": seen, "context": context_app}


@pytest.fixture
def with_app_agent(agents: AgentRegistry) -> None:
    agents.register("app_agent", app_agent)


async def _run(service: Service, session_id: str, **run_input: Any) -> Run:
    run = await service.create_run(session_id, "use app memory", agent="app_agent", input=run_input)
    return await service.wait_run(run.id, timeout=WAIT)


@pytest.mark.usefixtures("worker", "with_app_agent")
async def test_native_agents_share_their_apps_memory(service: Service) -> None:
    one = await service.create_session(app="shop")
    two = await service.create_session(app="shop")
    other_app = await service.create_session(app="blog")
    first = await _run(service, one.id, write={"currency": "EUR"})
    assert first.status is RunStatus.COMPLETED and first.output["seen"] == {}
    second = await _run(service, two.id)
    assert second.output == {"seen": {"currency": "EUR"}, "context": {"currency": "EUR"}}
    elsewhere = await _run(service, other_app.id)
    assert elsewhere.output == {"seen": {}, "context": {}}
    item = await service.get_app_memory("shop", "currency")
    assert item.value == "EUR" and item.source_run_id == first.id
    assert await service.for_owner("bob").list_app_memory("shop") == []


@pytest.mark.usefixtures("worker", "with_app_agent")
async def test_a_session_without_an_app_has_no_app_memory_to_write(service: Service) -> None:
    session = await service.create_session()
    done = await _run(service, session.id)
    assert done.status is RunStatus.COMPLETED and done.output == {"seen": {}, "context": {}}
    failed = await _run(service, session.id, write={"k": 1})
    assert failed.status is RunStatus.FAILED and failed.error is not None
    assert "belongs to no app" in failed.error.message


async def test_context_keeps_an_items_tool_call_with_its_result(service: Service) -> None:
    session = await service.create_session()
    await service.add_messages(
        session.id, [{"content": "weather?"}, {"item": CALL}, {"item": RESULT}]
    )
    context = await service.get_context(session.id)
    assert context["messages"] == [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": "",
            "type": "function_call",
            "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": '{"c": 1}'}],
        },
        {"role": "tool", "content": "sunny", "type": "function_call_output", "tool_call_id": "c1"},
    ]
    await service.pop_message(session.id)
    context = await service.get_context(session.id)
    assert [m["content"] for m in context["messages"]] == ["weather?", ""]
