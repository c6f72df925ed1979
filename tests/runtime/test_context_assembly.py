"""Context assembly: what a run starts from fits the budget, holds every part (project,
memory, earlier runs, tool calls, newest messages), never splits a tool call from its results,
and costs the same for a long session as for a short one."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from tests.support import WORKER, Factory
from tether.core.clock import ManualClock
from tether.core.memory import MemoryScope
from tether.core.message import NewMessage, Role
from tether.core.run import ErrorInfo
from tether.core.session import Session
from tether.core.status import RunStatus, StepStatus
from tether.core.step import StepKind
from tether.runtime.context_assembly import assemble_context, estimate_tokens
from tether.runtime.service import Service
from tether.store.base import Store


class CountingStore:
    """The real store, counting the calls made through it (what assembly reads, and how much)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return attr(*args, **kwargs)

        return counted


async def _assemble(
    store: Store, session: Session, budget: int
) -> tuple[dict[str, Any], Counter[str]]:
    counting = CountingStore(store)
    fresh = await store.get_session(session.id)
    assert fresh is not None
    context = await assemble_context(counting, fresh, budget_tokens=budget)
    return context, counting.calls


async def _full_session(store: Store, make: Factory, clock: ManualClock) -> Session:
    session = await make.session(project={"workspace": "/work/calc", "language": "python"})
    await store.put_memory(
        scope=MemoryScope.SESSION,
        scope_id=session.id,
        key="python",
        value="3.9",
        owner=None,
        now=clock.now(),
    )
    await store.put_memory(
        scope=MemoryScope.USER,
        scope_id="alice",
        key="tone",
        value="brief",
        owner="alice",
        now=clock.now(),
    )
    await store.put_memory(
        scope=MemoryScope.USER,
        scope_id="bob",
        key="secret",
        value="x",
        owner="bob",
        now=clock.now(),
    )
    analyse = await make.held(session.id, goal="Analyse the failing tests")
    await store.record_step(
        run_id=analyse.id,
        worker_id=WORKER,
        position=1,
        kind=StepKind.TOOL_CALL,
        name="run_command",
        input={"arguments": {"command": "pytest"}},
        output={"exit_code": 1},
        now=clock.now(),
    )
    await store.finish_run(
        analyse.id,
        worker_id=WORKER,
        status=RunStatus.COMPLETED,
        now=clock.now(),
        output={"summary": "requests is missing"},
    )
    fix = await make.held(session.id, goal="Fix it")
    await store.record_step(
        run_id=fix.id,
        worker_id=WORKER,
        position=1,
        kind=StepKind.TOOL_CALL,
        name="write_file",
        input={"arguments": {"path": "a.py"}},
        status=StepStatus.FAILED,
        error=ErrorInfo("ToolError", "read-only file system"),
        now=clock.now(),
    )
    await store.finish_run(
        fix.id,
        worker_id=WORKER,
        status=RunStatus.FAILED,
        now=clock.now(),
        error=ErrorInfo("OSError", "disk"),
    )
    for i in range(3):
        await make.message(session.id, f"message {i}")
    return session


async def test_every_part_is_there(store: Store, make: Factory, clock: ManualClock) -> None:
    session = await _full_session(store, make, clock)
    context, _ = await _assemble(store, session, 8000)

    assert context["session_id"] == session.id
    assert context["budget_tokens"] == 8000
    assert context["project"] == {"workspace": "/work/calc", "language": "python"}
    assert [(m["key"], m["value"]) for m in context["session_memory"]] == [("python", "3.9")]
    assert [(m["key"], m["value"]) for m in context["user_memory"]] == [("tone", "brief")]
    analyse, fix = context["earlier_runs"]
    assert (analyse["seq"], analyse["goal"], analyse["status"]) == (
        1,
        "Analyse the failing tests",
        "completed",
    )
    assert analyse["output"] == {"summary": "requests is missing"}
    assert (fix["seq"], fix["status"], fix["error"]) == (2, "failed", "OSError: disk")
    assert "output" not in fix
    tools = context["recent_tool_calls"]
    assert [(t["tool"], t["status"]) for t in tools] == [
        ("run_command", "completed"),
        ("write_file", "failed"),
    ]
    assert tools[0]["input"] == {"command": "pytest"}
    assert tools[0]["output"] == {"exit_code": 1}
    assert tools[1]["error"] == "read-only file system"
    assert context["messages"] == [{"role": "user", "content": f"message {i}"} for i in range(3)]
    assert context["older_messages_omitted"] is False
    assert 0 < context["used_tokens"] <= 8000
    json.dumps(context)  # plain JSON


async def test_the_service_gives_the_same_context(
    service: Service, store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await _full_session(store, make, clock)
    via_service = await service.get_context(session.id, budget_tokens=3000)
    direct, _ = await _assemble(store, session, 3000)
    via_service.pop("assembled_at")
    direct.pop("assembled_at")
    assert via_service == direct


@pytest.mark.parametrize("budget", [40, 100, 300, 1000, 4000])
async def test_the_budget_is_respected(
    store: Store, make: Factory, clock: ManualClock, budget: int
) -> None:
    session = await _full_session(store, make, clock)
    for i in range(200):
        await make.message(session.id, f"a longer message number {i} " + "words " * (i % 7))
    context, _ = await _assemble(store, session, budget)
    assert context["used_tokens"] <= budget
    parts = ("session_memory", "user_memory", "earlier_runs", "recent_tool_calls", "messages")
    assert sum(estimate_tokens(context[p]) for p in parts if context[p]) <= budget + len(parts)
    # What fits is the newest messages, in order, without gaps.
    contents = [m["content"] for m in context["messages"]]
    stored = [m.content for m in await store.list_messages(session.id, limit=1000)]
    assert contents == stored[len(stored) - len(contents) :]
    assert context["older_messages_omitted"] is (len(contents) < len(stored))
    if budget >= 1000:
        assert contents, "a generous budget keeps some messages"
        assert context["older_messages_omitted"]


def _tool_exchange(i: int) -> list[tuple[Role, str, dict[str, Any]]]:
    calls = [
        {"id": f"c{i}-{k}", "type": "function", "function": {"name": "read_file"}} for k in range(2)
    ]
    return [
        (Role.USER, f"question {i}", {}),
        (Role.ASSISTANT, "", {"tool_calls": calls}),
        (Role.TOOL, f"result {i}-0 " + "x" * 40, {"tool_call_id": f"c{i}-0"}),
        (Role.TOOL, f"result {i}-1 " + "y" * 40, {"tool_call_id": f"c{i}-1"}),
        (Role.ASSISTANT, f"answer {i}", {}),
    ]


def _check_not_split(messages: list[dict[str, Any]]) -> None:
    for index, message in enumerate(messages):
        if message["role"] == "assistant" and message.get("tool_calls"):
            ids = [c["id"] for c in message["tool_calls"]]
            following = messages[index + 1 : index + 1 + len(ids)]
            assert [m.get("tool_call_id") for m in following] == ids, "results split from call"
        if message["role"] == "tool":
            asking = [
                m
                for m in messages[:index]
                if m["role"] == "assistant"
                and message["tool_call_id"] in [c["id"] for c in m.get("tool_calls") or []]
            ]
            assert asking, "a tool result without the call that asked for it"


async def test_a_tool_call_is_never_split_from_its_results(
    store: Store, make: Factory, clock: ManualClock
) -> None:
    session = await make.session()
    for i in range(40):
        for role, content, metadata in _tool_exchange(i):
            await make.message(session.id, content, role=role, **metadata)
    seen_sizes = set()
    for budget in range(20, 1200, 13):
        context, _ = await _assemble(store, session, budget)
        messages = context["messages"]
        _check_not_split(messages)
        assert context["used_tokens"] <= budget
        seen_sizes.add(len(messages))
    assert len(seen_sizes) > 10, "the budgets cut the conversation at many places"


async def _session_with_messages(make: Factory, count: int) -> Session:
    """A session of count messages, appended in batches (one transaction per 500)."""
    session = await make.session()
    new = [
        NewMessage(Role.USER if i % 2 == 0 else Role.ASSISTANT, f"message number {i}")
        for i in range(count)
    ]
    for start in range(0, count, 500):
        await make.store.add_messages(
            session_id=session.id,
            owner=make.owner,
            messages=new[start : start + 500],
            now=make.clock.now(),
        )
    return session


@pytest.mark.parametrize("budget", [500, 8000, 200_000])
async def test_the_cost_does_not_grow_with_the_session(
    store: Store, make: Factory, budget: int
) -> None:
    short = await _session_with_messages(make, 20)
    long = await _session_with_messages(make, 2000)

    short_context, short_reads = await _assemble(store, short, budget)
    long_context, long_reads = await _assemble(store, long, budget)

    for context in (short_context, long_context):
        assert context["used_tokens"] <= budget
    # The long session: within budget, newest messages kept, older ones reported omitted.
    long_messages = long_context["messages"]
    assert long_context["older_messages_omitted"] is True
    assert 0 < len(long_messages) < 2000
    assert long_messages[-1]["content"] == "message number 1999"
    numbers = [int(m["content"].rsplit(" ", 1)[1]) for m in long_messages]
    assert numbers == list(range(2000 - len(numbers), 2000))
    if budget >= 8000:
        assert short_context["older_messages_omitted"] is False
        assert len(short_context["messages"]) == 20
    if budget == 200_000:
        # All 2000 would fit this budget; the scan still stops after a bounded number of pages.
        assert len(long_messages) <= 16 * 64
    # Reads are bounded: a few fixed queries plus a bounded number of message pages, whatever
    # the length of the session.
    assert sum(long_reads.values()) <= 5 + 16
    assert set(short_reads) == set(long_reads)
    assert long_reads["list_messages"] <= 16
    assert set(long_reads) <= {"list_memory", "list_runs", "list_tool_calls", "list_messages"}
    budget_pages = 1 + budget // 64  # a message costs at least one token, a page holds 64
    assert long_reads["list_messages"] <= budget_pages + 1


async def test_a_message_larger_than_the_budget_is_left_out(store: Store, make: Factory) -> None:
    session = await make.session()
    await make.message(session.id, "small and old")
    await make.message(session.id, "huge " * 5000)
    context, _ = await _assemble(store, session, 500)
    assert context["messages"] == []
    assert context["older_messages_omitted"] is True
    assert context["used_tokens"] <= 500
